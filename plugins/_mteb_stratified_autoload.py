"""Auto-load hook: register mteb-stratified's tasks and models the moment ``mteb`` is imported.

mteb 2.26 has no plugin mechanism: its task registry (``mteb.get_tasks._TASKS_REGISTRY``) and
model registry (``mteb.models.model_implementations.MODEL_REGISTRY``) are built when ``mteb`` is
imported.  The wheel ships ``mteb_stratified_autoload.pth`` next to this module in
``site-packages``; Python's ``site`` runs its one line at interpreter start, which imports this
module.  This module imports nothing heavy (no mteb, torch or numpy, only ``sys`` and ``os``);
it puts a one-shot finder at the front of ``sys.meta_path``.  When ``mteb`` is imported, the
finder lets the normal finders locate ``mteb``, and wraps that module's ``exec_module`` so that,
right after ``mteb/__init__.py`` has run, :func:`mteb_stratified.adapters.mteb.register` adds
``StratifiedNFCorpus`` & co. to the registries.  The finder removes itself when mteb
executes, so it costs nothing for any later import.

Set ``MTEB_STRATIFIED_NO_AUTOLOAD=1`` to switch the hook off.  A failure inside registration
never breaks ``import mteb``: it is reported as a warning.
"""

import os
import sys

_ENV_OFF = "MTEB_STRATIFIED_NO_AUTOLOAD"
#: True while a registration waits for one of our half-imported modules (see _register)
deferred = False


def _register():
    global deferred
    try:
        from mteb_stratified.adapters.mteb.registration import try_register
    except ImportError:  # mteb-stratified was uninstalled but the .pth file stayed behind
        return
    try:
        # False: mteb was imported from inside one of our own half-initialised modules, which
        # completes the registration itself once initialised (registration.complete_deferred)
        deferred = not try_register()
    except Exception as exc:  # never break `import mteb` for the user
        import warnings

        warnings.warn(
            f"mteb-stratified could not register its tasks with mteb ({type(exc).__name__}: {exc}). "
            f"mteb works as usual; set {_ENV_OFF}=1 to silence this, or call "
            "mteb_stratified.adapters.mteb.register() to see the full error.",
            RuntimeWarning,
            stacklevel=2,
        )


class _MtebFinder:
    """One-shot ``sys.meta_path`` finder that only reacts to the top-level ``mteb`` package."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mteb":
            return None
        # find_spec alone (runpy's `python -m mteb`, importlib.util.find_spec) does not import
        # mteb: stay armed until a loader we patched actually executes it
        for finder in sys.meta_path:
            if finder is self:
                continue
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_register(module, _exec=exec_module, _finder=self):
            _finder.remove()
            _exec(module)
            _register()

        # the loader instance belongs to this one module (one SourceFileLoader per file), so
        # patching the instance leaves every other import untouched and keeps the loader's own
        # resource reader for importlib.resources
        try:
            loader.exec_module = exec_then_register
        except AttributeError:
            return spec
        return spec

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def install():
    """Arm the hook (idempotent); if ``mteb`` is already imported, register at once."""
    if os.environ.get(_ENV_OFF, "").strip() not in ("", "0"):
        return
    if "mteb" in sys.modules:
        _register()
        return
    if not any(isinstance(f, _MtebFinder) or type(f).__name__ == "_MtebFinder" for f in sys.meta_path):
        sys.meta_path.insert(0, _MtebFinder())


install()
