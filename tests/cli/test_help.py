"""Every subcommand's command line is consistent: help and a shown default for every option,
declared choices, plain text (no reST/Markdown backticks), -o/--out for outputs."""

import argparse

import pytest

from mteb_stratified.cli.main import build_parser

#: Options whose value is free text with no meaningful default to show.
NO_DEFAULT_OK = {"--title", "--base-url", "--model", "--api-key", "--cache", "--structure",
                 "--dataset", "--per-query", "--prediction-folder", "--tasks", "--columns",
                 "--regimes", "--max-queries", "--limit", "--embedding-model", "--soft-tau",
                 "--max-tokens-total", "--max-candidates", "--depth", "--measures"}


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def test_every_subcommand_is_there():
    _, subs = _subparsers()
    assert {"evaluate", "demo", "precision-sweep", "mteb", "leaderboard", "structure",
            "stratify", "report", "generate"} <= set(subs)


@pytest.mark.parametrize("name", ["evaluate", "demo", "precision-sweep", "leaderboard",
                                  "structure", "stratify", "report", "generate"])
def test_options_have_help_defaults_and_plain_text(name):
    _, subs = _subparsers()
    p = subs[name]
    text = p.format_help()
    assert "`" not in text, f"{name}: backticks in help"
    for action in p._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        flag = action.option_strings[-1] if action.option_strings else action.dest
        assert action.help and action.help.strip(), f"{name} {flag}: no help"
        if not action.option_strings or action.required:
            continue
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                               argparse._AppendAction)) and action.default in (False, None):
            continue
        shown = "default" in action.help or action.help.rstrip(")").endswith("all")
        assert shown or flag in NO_DEFAULT_OK, f"{name} {flag}: the default is not shown"


def test_top_level_and_mteb_help_are_plain_text():
    parser, subs = _subparsers()
    assert "`" not in parser.format_help() and "`" not in subs["mteb"].format_help()


@pytest.mark.parametrize("name", ["demo", "precision-sweep", "leaderboard", "structure",
                                  "stratify", "report", "generate"])
def test_outputs_are_o_out(name):
    _, subs = _subparsers()
    flags = {s for a in subs[name]._actions for s in a.option_strings}
    assert {"-o", "--out"} <= flags, name


@pytest.mark.parametrize("name, flag", [("stratify", "--scheme"), ("stratify", "--alignment"),
                                        ("report", "--scheme"), ("structure", "--extractor"),
                                        ("structure", "--objective"),
                                        ("evaluate", "--oblivious"), ("evaluate", "--ideal"),
                                        ("leaderboard", "--columns")])
def test_enumerated_options_declare_choices(name, flag):
    _, subs = _subparsers()
    action = next(a for a in subs[name]._actions if flag in a.option_strings)
    assert action.choices, f"{name} {flag}"


def test_scheme_and_alignment_lists_agree_with_their_owners():
    from mteb_stratified.cli import _strata_args as stratify
    from mteb_stratified.core.stats.strata import SCHEMES
    from mteb_stratified.stratification import ALIGNMENTS

    assert stratify.SCHEMES == SCHEMES and stratify.ALIGNMENTS == ALIGNMENTS


@pytest.mark.parametrize("argv, message", [
    (["demo", "--depth", "-3"], "argument --depth: must be an integer >= 1, got -3"),
    (["structure", "--corpus", "nfcorpus", "-o", "x", "--limit", "-5"],
     "argument --limit: must be an integer >= 1, got -5"),
    (["generate", "--dataset", "nfcorpus", "--structure", "bundled", "--budget", "5",
      "--max-pool", "0", "-o", "x"], "argument --max-pool: must be an integer >= 1, got 0"),
    (["generate", "--dataset", "nfcorpus", "--structure", "bundled", "--budget", "5",
      "--pool-bm25", "-3", "-o", "x"], "argument --pool-bm25: must be an integer >= 0, got -3"),
    (["evaluate", "--qrels", "q", "--run", "r", "--depth", "0"],
     "argument --depth: must be an integer >= 1, got 0"),
])
def test_numeric_options_are_range_checked(argv, message, capsys):
    from mteb_stratified.cli.main import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err
