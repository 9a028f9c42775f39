"""A fast start for the command line: help and a command load nothing heavy, and a command
builds only its own parser (the other subcommands' modules stay unimported)."""

import argparse

import pytest

from mteb_stratified.cli.main import SUBCOMMANDS, build_parser, main, summary_parser
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


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["evaluate", "--help"],
                                  ["evaluate", "--qrels", "q", "--run", "r", "--depth", "0"]])
def test_help_version_and_parsing_load_no_numpy(argv):
    """A fast start: help, the version, a usage error and the parsing of ``evaluate``'s
    arguments import no numpy (``evaluate`` loads it after parsing, to read the files), and
    the top-level ones no subcommand module."""
    _, out = heavy_after("import sys\nfrom mteb_stratified.cli.main import main\n"
                         f"code = main({argv!r})\n"
                         "print(code, 'numpy' in sys.modules, sorted(m for m in sys.modules if "
                         "m.startswith('mteb_stratified.cli.') and m != 'mteb_stratified.cli.main'"
                         " and not m.startswith('mteb_stratified.cli._')))")
    code, numpy, modules = out.splitlines()[-1].split(" ", 2)
    assert numpy == "False"
    assert code == ("0" if argv and argv[-1] in ("--help", "--version") else "2")
    assert modules == ("['mteb_stratified.cli.evaluate']" if "evaluate" in argv else "[]")


def test_the_summary_parser_is_the_full_parser_at_the_top():
    """``--help`` without a command shows the summaries without importing a subcommand: the
    same text as the parser of every subcommand, and the same choices."""
    assert summary_parser().format_help() == build_parser().format_help()
    assert list(_choices(summary_parser())) == list(_choices(build_parser()))


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
