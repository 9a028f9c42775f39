"""setuptools ``build_py`` that also puts the mteb auto-load hook at the root of the wheel.

A ``.pth`` file only works from the root of ``site-packages``, and setuptools has no option to
place a file there from ``pyproject.toml`` alone (``data-files`` install under the prefix, not
``site-packages``).  This command copies ``plugins/mteb_stratified_autoload.pth`` and its module
``plugins/_mteb_stratified_autoload.py`` into the build directory's root, so ``pip wheel`` /
``python -m build`` put them in the wheel's purelib root.  Wire it in ``pyproject.toml``::

    [tool.setuptools]
    cmdclass = { build_py = "plugins.build_pth.BuildPyWithPth" }

Editable installs (``pip install -e``) do not run it; tests arm the hook by hand there, and
``mteb-stratified mteb ...`` registers without the hook.
"""

from __future__ import annotations

import os
import shutil

from setuptools.command.build_py import build_py

HOOK_FILES = ("mteb_stratified_autoload.pth", "_mteb_stratified_autoload.py")
_HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithPth(build_py):
    """``build_py`` plus the two auto-load files copied to the wheel root."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name in HOOK_FILES:
            src = os.path.join(_HERE, name)
            if not os.path.exists(src):
                raise FileNotFoundError(
                    f"{src} is missing: the mteb auto-load hook cannot be shipped. "
                    "Restore it from version control (plugins/ in the source tree)."
                )
            dst = os.path.join(self.build_lib, name)
            self.mkpath(os.path.dirname(dst))
            shutil.copyfile(src, dst)

    def get_outputs(self, include_bytecode=True):
        outputs = list(super().get_outputs(include_bytecode))
        return outputs + [os.path.join(self.build_lib, name) for name in HOOK_FILES]
