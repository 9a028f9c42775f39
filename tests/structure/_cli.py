"""Run ``mteb-stratified structure`` in a subprocess, whether or not main.py lists it yet.

The working tree's package is put first on ``sys.path`` so that a subprocess tests this
checkout, not another installed copy.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mteb_stratified.cli import main as cli_main  # noqa: E402

if "structure" not in cli_main.SUBCOMMANDS:
    cli_main.SUBCOMMANDS = tuple(cli_main.SUBCOMMANDS) + ("structure",)

if __name__ == "__main__":
    sys.exit(cli_main.main(sys.argv[1:]))
