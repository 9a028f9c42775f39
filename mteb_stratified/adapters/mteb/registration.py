"""Register the tie-aware tasks and the packaged models with mteb's registries (idempotent).

mteb 2.26 builds ``mteb.get_tasks._TASKS_REGISTRY`` (name -> class), ``TASK_LIST`` (a tuple)
and ``_SIMILAR_TASKS`` from ``mteb.tasks`` at import, and
``mteb.models.model_implementations.MODEL_REGISTRY`` (name -> ModelMeta) likewise; it has no
entry points.  :func:`register` adds our entries in place (the dicts are shared by every module
that imported them), rebinds ``TASK_LIST`` and sets the classes on ``mteb.tasks`` so a rebuilt
registry finds them too.  The auto-load hook (``plugins/_mteb_stratified_autoload.py``) calls it
right after ``import mteb``; ``mteb-stratified mteb ...`` calls it before handing over to
mteb's CLI.

**The one import circle of the package** (``tests/test_import_graph.py`` allows no other): this
module imports :mod:`.tasks` and :mod:`.models` to register them, and those two import
:func:`complete_deferred` from here at their end, because ``import mteb`` may run while one of
them is half-initialised (our module imported first, then mteb's own import triggers the hook):
registration is then deferred until both modules are complete.  The price of mteb having no
entry points; it stays inside these three modules.
"""

from __future__ import annotations

__all__ = ["register", "try_register", "is_registered", "complete_deferred"]


def register(*, tasks: bool = True, models: bool = True) -> None:
    """Add StratifiedNFCorpus/FiQA/SciDocs and the packaged MiniLM (fp32, bf16) to mteb."""
    from importlib import import_module

    # `import mteb.get_tasks as gt` would give the function mteb.get_tasks, not the module
    gt = import_module("mteb.get_tasks")
    mteb_tasks = import_module("mteb.tasks")

    if tasks:
        from .tasks import TASK_CLASSES

        for cls in TASK_CLASSES:
            name = cls.metadata.name
            existing = gt._TASKS_REGISTRY.get(name)
            if existing is not None and existing is not cls and \
                    getattr(existing, "__module__", "") != cls.__module__:
                raise RuntimeError(f"mteb already has a different task named {name!r} "
                                   f"({existing.__module__}); not overriding it")
            gt._TASKS_REGISTRY[name] = cls
            setattr(mteb_tasks, cls.__name__, cls)
            for parent in cls.metadata.adapted_from or ():
                similar = gt._SIMILAR_TASKS.setdefault(parent, [])
                if name not in similar:
                    similar.append(name)
        gt.TASK_LIST = tuple(c for c in gt.TASK_LIST if c.metadata.name not in
                             {k.metadata.name for k in TASK_CLASSES}) + tuple(TASK_CLASSES)
    if models:
        from mteb.models.model_implementations import MODEL_REGISTRY

        from .models import model_metas

        for meta in model_metas():
            MODEL_REGISTRY[meta.name] = meta


def is_registered() -> bool:
    """True when the Stratified tasks are in mteb's task registry."""
    import sys

    registry = getattr(sys.modules.get("mteb.get_tasks"), "_TASKS_REGISTRY", {})
    return "StratifiedNFCorpus" in registry


def try_register() -> bool:
    """:func:`register`, or False when one of our modules is still half-initialised.

    That happens when ``mteb`` is first imported from inside ``tasks.py`` or ``models.py``: the
    auto-load hook then defers, and the module finishes with :func:`complete_deferred`.
    """
    try:
        register()
    except ImportError as exc:
        if "partially initialized" not in str(exc):
            raise
        return False
    return True


def complete_deferred() -> None:
    """Finish a registration the auto-load hook deferred (called at the end of our modules).

    A module still half-initialised keeps it deferred until its own call.
    """
    import sys

    hook = sys.modules.get("_mteb_stratified_autoload")
    if hook is not None and getattr(hook, "deferred", False) and try_register():
        hook.deferred = False
