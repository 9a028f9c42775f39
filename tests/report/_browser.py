"""Headless Chromium for the report tests: the binary and its command-line flags."""

import shutil
import tempfile

import pytest


def chromium():
    """The Chromium binary; a failure (never a skip) when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no chromium binary found: the report must be checked in a real browser "
                "(Debian: apt-get install -y chromium; .ci/run installs it)")


def chromium_flags(browser, tmp_path, width=1400, height=3000):
    """Headless flags: no network services, a fresh profile under ``tmp_path``."""
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--disable-dev-shm-usage", f"--window-size={width},{height}",
            f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}"]
