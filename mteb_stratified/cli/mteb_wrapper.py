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
        except RecursionError:
            raise InputError("--model-kwargs is nested too deeply to read",
                             fix='give a flat object of keyword arguments, e.g. '
                                 '\'{"model_kwargs": {"dtype": "bfloat16"}}\'') from None
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


def _nearest(name: str, names) -> str:
    """`` (did you mean X or Y?)`` for the registered names closest to ``name`` (the
    organisation left out of the comparison too), or ''."""
    import difflib

    names = list(names)
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    short = {n.split("/")[-1]: n for n in names}
    near += [short[m] for m in difflib.get_close_matches(name.split("/")[-1], list(short), n=3)
             if short[m] not in near]
    return f" (did you mean {' or '.join(near[:3])}?)" if near else ""


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_run_names(margs) -> None:
    """The tasks and the model of ``mteb run``, checked before mteb loads anything: a task
    name mteb does not have, or a model that is neither registered nor a local folder while
    the hub is offline (mteb would end in a traceback, or an HF offline error), is an
    :class:`InputError` (exit 2) that names the nearest registered names."""
    from mteb.get_tasks import _TASKS_REGISTRY
    from mteb.models.model_implementations import MODEL_REGISTRY

    from ..core.errors import InputError

    for task in getattr(margs, "tasks", None) or ():
        if task not in _TASKS_REGISTRY:
            raise InputError(f"no task named {task!r}{_nearest(task, _TASKS_REGISTRY)}",
                             fix="give a task name that `mteb-stratified mteb available-tasks` "
                                 "lists, e.g. -t StratifiedNFCorpus")
    model = getattr(margs, "model", None)
    if not model or model in MODEL_REGISTRY or os.path.isdir(os.path.expanduser(model)):
        return
    ours = model.startswith("mteb-stratified/")
    if ours or _hub_offline():
        where = ("mteb-stratified registers no model of that name" if ours else
                 "it is not in mteb's model registry, not a local folder, and the Hugging Face "
                 "hub is offline (HF_HUB_OFFLINE)")
        from ..adapters.mteb.models import MINILM_FP32, MINILM_QUANTIZED, MINILM_REGIMES

        variants = ", ".join(n[len(MINILM_FP32):] for n in (*MINILM_REGIMES, *MINILM_QUANTIZED))
        raise InputError(f"model {model!r}: {where}{_nearest(model, MODEL_REGISTRY)}",
                         fix=f"give a registered name (the packaged ones: {MINILM_FP32} and its "
                             f"{variants} variants), or a local model folder")


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
    is_run = margs.func.__name__ == "run"
    if kwargs and not is_run:
        raise InputError("--dtype/--score-dtype/--model-kwargs only apply to `run`",
                         fix="put them after `mteb-stratified mteb run ...`")
    if is_run:
        check_run_names(margs)
    logging.basicConfig(level=logging.WARNING, format="%(message)s",
                        handlers=[RichHandler(rich_tracebacks=True)])
    from ..structure.sentence_model import hub_miss

    try:
        with _get_model_with(kwargs):
            margs.func(margs)
    except Exception as exc:  # noqa: BLE001 - a model the hub cannot give is said clearly
        miss = hub_miss(getattr(margs, "model", None), exc)
        if miss is None:
            raise
        raise miss from None
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
