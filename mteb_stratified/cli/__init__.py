"""Command-line front end (``mteb-stratified``): the top layer; parse, call, print.

:mod:`.main` builds the parser from one module per subcommand (each ``add_parser`` + ``run``);
:mod:`._args` holds the shared argument types and options.  :data:`COMMANDS` names every
subcommand and its one-line summary, so ``mteb-stratified --help`` (and a usage error that
lists the commands) imports no subcommand module.
"""

#: Subcommand module -> (command name, one-line summary), in the order ``--help`` lists them.
#: Each module's ``add_parser`` takes its summary from here (:func:`summary`).
COMMANDS = {
    "evaluate": ("evaluate", "tie-aware evaluation of a run against qrels"),
    "demo": ("demo", "BM25 on bundled NFCorpus, tie-aware table"),
    "precision_sweep": ("precision-sweep",
                        "audit what each precision regime (fp32/bf16/fp16 ± HPS) costs"),
    "mteb_wrapper": ("mteb", "run mteb's CLI with the tie-aware tasks registered"),
    "leaderboard": ("leaderboard",
                    "tie-aware leaderboard (CSV + Markdown) from an MTEB results folder"),
    "structure": ("structure", "map a corpus: entities, entity graph, Leiden clusters"),
    "stratify": ("stratify", "add a strata block to MTEB results JSON files"),
    "report": ("report", "stratified HTML report + Markdown summary"),
    "generate": ("generate", "generate verified queries for uncovered strata"),
}


def summary(module: str) -> str:
    """The one-line help of the subcommand defined in ``module`` (its ``__name__``; a module run
    as ``python -m mteb_stratified.cli.NAME`` is ``__main__``, and its spec names it)."""
    if module == "__main__":
        import sys
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = spec.name if spec is not None else module
    return COMMANDS[module.rpartition(".")[2]][1]
