"""``benchmarks/README.md`` is the benchmarks' index, and the results files are portable.

* every script in ``benchmarks/`` has a row in the README's script table, and every row names a
  script that exists, a docs page that exists (or ``–``), results that exist, and a command that
  runs that script (or, for ``structure_corpus.py`` and ``structure_time.py``, the script that
  runs it);
* every file under ``benchmarks/results/`` named in the README exists (a ``*`` pattern matches
  at least one file);
* no results file holds a machine path (``/work/``, ``/tmp/``, ``/root/``, ``/home/``);
* every text results file (``.txt``, ``.md``) carries its command in its first lines;
* no script in ``benchmarks/`` changes ``sys.path``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
README = BENCH / "README.md"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
MACHINE_PATH = re.compile(r"/(work|tmp|root|home)/")
COMMAND_LINE = re.compile(r"^(# command: |command: |<!-- command: )")
#: Scripts that run only through another one: the command in their row runs that one.
RUN_BY = {"structure_corpus.py": "bench_structure.py", "structure_time.py": "before_after.py"}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(title: str) -> list[list[str]]:
    """The rows (cells) of the README table under the heading ``## title``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")]
    return [_cells(ln) for ln in rows[2:]]   # the header and its rule left out


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _existing(pattern: str) -> list[Path]:
    """The files a README results path names: ``results/x`` relative to ``benchmarks/``."""
    assert pattern.startswith("results/"), pattern
    if "*" in pattern:
        return sorted(BENCH.glob(pattern))
    path = BENCH / pattern
    return [path] if path.exists() else []


def test_every_script_has_one_row():
    named = [row[0].strip("`") for row in _table("Scripts")]
    assert len(named) == len(set(named)), "a script has two rows"
    missing = sorted(set(SCRIPTS) - set(named))
    assert not missing, f"{missing}: add a row to benchmarks/README.md"
    gone = sorted(set(named) - set(SCRIPTS))
    assert not gone, f"{gone}: in benchmarks/README.md but not in benchmarks/"


@pytest.mark.parametrize("row", _table("Scripts"), ids=lambda r: r[0].strip("`"))
def test_a_script_row_names_what_exists(row):
    script, _, docs, results, command = row
    script = script.strip("`")
    for page in _ticked(docs):
        assert page.startswith("docs/") and (ROOT / page).is_file(), f"{script}: {page}"
    assert _ticked(docs) or docs == "–", f"{script}: name its docs page or write –"
    for path in _ticked(results):
        if path.startswith("results/"):
            assert _existing(path), f"{script}: {path} does not exist"
    cmd = " ".join(_ticked(command))
    assert f"benchmarks/{RUN_BY.get(script, script)}" in cmd, f"{script}: {cmd}"
    assert not MACHINE_PATH.search(cmd), f"{script}: a machine path in {cmd}"


@pytest.mark.parametrize("row", _table("Results not written by a script here"),
                         ids=lambda r: r[0][:40])
def test_an_other_results_row_names_what_exists(row):
    results, docs, _ = row
    for path in _ticked(results):
        assert _existing(path), f"{path} does not exist"
    for page in _ticked(docs):
        assert (ROOT / page).is_file(), page


def _results_files() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.is_file())


def test_no_results_file_holds_a_machine_path():
    leaks = []
    for path in _results_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:   # a PNG
            continue
        leaks += [f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
                  for n, line in enumerate(text.splitlines(), 1)
                  for m in [MACHINE_PATH.search(line)] if m]
    assert not leaks, "machine paths (write them relative, or CACHE/...):\n" + "\n".join(leaks)


def test_every_text_results_file_carries_its_command():
    mteb_outputs = RESULTS / "quantized" / "mteb" / "results"   # mteb's own files, as written
    bare = [str(p.relative_to(ROOT)) for p in _results_files()
            if p.suffix in (".txt", ".md") and mteb_outputs not in p.parents
            and not any(COMMAND_LINE.match(ln)
                        for ln in p.read_text(encoding="utf-8").splitlines()[:5])]
    assert not bare, "add a first line '# command: ...' (Markdown: '<!-- command: ... -->'):\n" \
                     + "\n".join(bare)


def test_no_script_changes_sys_path():
    hacks = [f"{p.name}:{n}" for p in sorted(BENCH.glob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"sys\.path\.(insert|append)", line)]
    assert not hacks, f"{hacks}: import from the environment (PYTHONPATH=. or pip install -e .)"
