"""mteb-stratified mteb ...: mteb's own CLI with the tie-aware tasks and models registered.

Everything after "mteb" goes to mteb's CLI unchanged (run, available-tasks, ...), so
"mteb-stratified mteb run -t StratifiedNFCorpus -m mteb-stratified/all-MiniLM-L6-v2" behaves
like the stock "mteb run" with the auto-load hook (use it with an editable install, where the
hook is not in site-packages). Extra options, accepted anywhere after "mteb":

  --data-dir DIR            folder holding BEIR datasets (fiqa/, scidocs/); sets
                            MTEB_STRATIFIED_DATA_DIR for the run
  --dtype {float32,bfloat16,float16}, --score-dtype ...
                            weights and scoring dtype of the packaged MiniLM
                            (mteb.get_model(name, dtype=..., score_dtype=...))
  --model-kwargs JSON       any keyword arguments for mteb.get_model, e.g.
                            '{"model_kwargs": {"dtype": "bfloat16"}}'

Also: python -m mteb_stratified.cli.mteb_wrapper run ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from . import summary

DATA_DIR_ENV = "MTEB_STRATIFIED_DATA_DIR"


def _extra_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--score-dtype", default=None)
    p.add_argument("--model-kwargs", default=None)
    return p


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "mteb", help=summary(__name__),
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
        prefix_chars="+")  # every dash-option belongs to mteb (or to our extras, parsed in run)
    p.add_argument("mteb_args", nargs=argparse.REMAINDER,
                   help="mteb CLI arguments, e.g. run -t StratifiedNFCorpus -m MODEL")
    p.set_defaults(func=run)
    return p


def _model_kwargs(ns) -> dict:
    from ..core.errors import InputError

    kwargs: dict = {}
    if ns.model_kwargs:
        try:
            kwargs = json.loads(ns.model_kwargs)
        except json.JSONDecodeError as exc:
            raise InputError(f"--model-kwargs is not valid JSON ({exc.msg})",
                             fix='quote it for the shell: --model-kwargs \'{"dtype": "bfloat16"}\'') from None
        if not isinstance(kwargs, dict):
            raise InputError("--model-kwargs must be a JSON object", fix='e.g. \'{"dtype": "bfloat16"}\'')
    if ns.dtype:
        kwargs["dtype"] = ns.dtype
    if ns.score_dtype:
        kwargs["score_dtype"] = ns.score_dtype
    return kwargs


@contextlib.contextmanager
def _get_model_with(kwargs: dict):
    """Temporarily make ``mteb.get_model`` pass ``kwargs`` to the model loader."""
    import mteb

    original = mteb.get_model
    if not kwargs:
        yield
        return

    def get_model(model_name, revision=None, device=None, **kw):
        return original(model_name, revision, device, **{**kwargs, **kw})

    mteb.get_model = get_model
    try:
        yield
    finally:
        mteb.get_model = original


def run(args: argparse.Namespace) -> int:
    from ..core.errors import InputError

    argv = list(getattr(args, "mteb_args", []) or [])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    ours, rest = _extra_parser().parse_known_args(argv)
    if ours.data_dir:
        if not os.path.isdir(ours.data_dir):
            raise InputError(f"--data-dir {ours.data_dir} is not a folder",
                             fix="give the folder that holds the unzipped BEIR datasets (fiqa/, scidocs/)")
        os.environ[DATA_DIR_ENV] = os.path.abspath(ours.data_dir)
    kwargs = _model_kwargs(ours)
    if not rest:
        rest = ["--help"]

    import logging

    from .._optional import require

    require("mteb", "mteb")  # a clear "pip install mteb-stratified[mteb]" when missing
    from mteb.cli.build_cli import build_cli
    from rich.logging import RichHandler

    from ..adapters.mteb.registration import register

    register()
    parser = build_cli()
    parser.prog = "mteb-stratified mteb"
    margs = parser.parse_args(rest)
    if not getattr(margs, "func", None):
        parser.print_help()
        return 2
    if kwargs and getattr(margs, "func", None).__name__ != "run":
        raise InputError("--dtype/--score-dtype/--model-kwargs only apply to `run`",
                         fix="put them after `mteb-stratified mteb run ...`")
    logging.basicConfig(level=logging.WARNING, format="%(message)s",
                        handlers=[RichHandler(rich_tracebacks=True)])
    with _get_model_with(kwargs):
        margs.func(margs)
    return 0


def main(argv=None) -> int:
    from ..core.errors import InputError

    try:
        return run(argparse.Namespace(mteb_args=list(sys.argv[1:] if argv is None else argv)))
    except InputError as exc:
        print(f"mteb-stratified mteb: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
