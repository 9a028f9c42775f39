"""No side effects at import or as a by-product of a call: no environment variable, no global
library setting (matplotlib's backend and rcParams), no shared mutable state handed out."""

import os
import subprocess
import sys

import pytest


SUBPACKAGES = ["mteb_stratified", "mteb_stratified.core", "mteb_stratified.io",
               "mteb_stratified.naming", "mteb_stratified.structure",
               "mteb_stratified.stratification", "mteb_stratified.report",
               "mteb_stratified.generation", "mteb_stratified.adapters",
               "mteb_stratified.adapters.mteb", "mteb_stratified.adapters.precision",
               "mteb_stratified.adapters.beir", "mteb_stratified.cli.main",
               "mteb_stratified.llm", "mteb_stratified.testing"]

PROBE = r"""
import json, os, sys, logging
import matplotlib
# third-party libraries set variables of their own when imported (torch: KMP_*,
# TORCHINDUCTOR_CACHE_DIR); import them first, so only what this package does is measured
import torch, transformers, sentence_transformers, mteb  # noqa: E401
before_env = dict(os.environ)
before_backend = matplotlib.get_backend()
before_rc = dict(matplotlib.rcParams)
before_handlers = [list(logging.getLogger(n).handlers) for n in ("", "mteb", "mteb_stratified")]
import importlib
for name in sys.argv[1].split(","):
    importlib.import_module(name)
CALLS
changed_env = sorted(k for k in set(before_env) | set(os.environ)
                     if before_env.get(k) != os.environ.get(k))
changed_rc = sorted(k for k, v in matplotlib.rcParams.items() if before_rc.get(k) != v)
print(json.dumps({"env": changed_env, "backend": [before_backend, matplotlib.get_backend()],
                  "rc": changed_rc,
                  "handlers": [len(h) for h in before_handlers]
                  != [len(logging.getLogger(n).handlers) for n in ("", "mteb", "mteb_stratified")]}))
"""


def _probe(calls: str = ""):
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    proc = subprocess.run([sys.executable, "-c", PROBE.replace("CALLS", calls),
                           ",".join(SUBPACKAGES)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_every_package_changes_nothing():
    got = _probe()
    assert got["env"] == [] and got["rc"] == [] and not got["handlers"]
    assert got["backend"][0] == got["backend"][1]


def test_loading_the_models_and_drawing_the_report_change_nothing():
    """The calls that used to set HF_HUB_OFFLINE / matplotlib.use("Agg") leave no trace."""
    calls = """
from mteb_stratified.structure.embed import embed_texts
embed_texts(["vitamin d"])
from mteb_stratified.adapters.precision.models import load_minilm
load_minilm()
from mteb_stratified.report.figures import _figure
_figure(lambda fig: fig.subplots().plot([0, 1]), (2, 2))
"""
    got = _probe(calls)
    assert got["env"] == [], got["env"]
    assert got["rc"] == [] and got["backend"][0] == got["backend"][1]


def test_the_bundled_strata_are_handed_out_as_copies():
    from mteb_stratified.stratification.bundled import bundled_strata

    a, _ = bundled_strata()
    with pytest.raises(TypeError, match="read-only"):  # the artifact is read-only data
        a.metadata["bins"] = {"changed": True}
    b, _ = bundled_strata()
    assert b.metadata["bins"] != {"changed": True}
