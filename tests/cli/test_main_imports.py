"""A fast start for the command line: help and a command load nothing heavy, and a command
builds only its own parser (the other subcommands' modules stay unimported)."""

import argparse

import pytest

from mteb_stratified.cli.main import SUBCOMMANDS, build_parser, main
from tests.core.test_import_light import heavy_after


def _choices(parser: argparse.ArgumentParser) -> dict:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("argv, shown", [(["--help"], "COMMAND"),
                                         (["evaluate", "--help"], "--qrels"),
                                         (["leaderboard", "--help"], "--columns"),
                                         (["stratify", "--help"], "--n-min")])
def test_help_loads_nothing_heavy(argv, shown):
    heavy, out = heavy_after("from mteb_stratified.cli.main import main\n"
                             f"assert main({argv!r}) == 0")
    assert heavy == [] and shown in out


def test_a_command_imports_only_its_own_module():
    _, out = heavy_after("import sys\nfrom mteb_stratified.cli.main import main\n"
                         "assert main(['evaluate', '--help']) == 0\n"
                         "print(sorted(m for m in sys.modules if m.startswith("
                         "('mteb_stratified.cli.', 'mteb_stratified.adapters'))))")
    assert out.splitlines()[-1] == ("['mteb_stratified.cli._args', 'mteb_stratified.cli.evaluate', "
                                    "'mteb_stratified.cli.main']")


def test_each_command_alone_parses_as_with_all():
    """The one-command parser of every subcommand is the full parser's, option for option."""
    full = _choices(build_parser())
    assert len(full) == len(SUBCOMMANDS)
    for name, sub in full.items():
        alone = _choices(build_parser(name))
        assert list(alone) == [name] and alone[name].format_help() == sub.format_help(), name


def test_a_misspelt_command_lists_every_command(capsys):
    assert main(["precision_sweep"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'precision_sweep'" in err and "'precision-sweep'" in err
    assert "'evaluate'" in err and "'mteb'" in err



def test_evaluate_from_files_loads_nothing_heavy(tmp_path):
    """``evaluate`` on TREC files takes the pyarrow reader (so pyarrow loads) but never pandas
    (pyarrow's ``pa.array``, ``to_numpy`` and ``pa.scalar`` would import it) nor scipy.stats."""
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.trec"
    run.write_text("".join(f"q{i} Q0 d{j} {j + 1} {1 - j / 8} t\n" for i in range(3)
                           for j in range(8)))
    qrels.write_text("q0 0 d1 1\nq1 0 d9 2\nq2 0 d0 1\n")
    heavy, out = heavy_after(
        "import sys\nfrom mteb_stratified.cli.main import main\n"
        f"assert main(['evaluate', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, "
        "'--json']) == 0\nassert 'pyarrow' in sys.modules")
    assert [m for m in heavy if m != "pyarrow"] == [] and '"nDCG@10"' in out
