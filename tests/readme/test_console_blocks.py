"""The comparison behind the docs-figures test (console_blocks.py): it must catch a figure
changed by hand, and must not trip on alignment, continuation lines or extra digits."""

from __future__ import annotations

from console_blocks import command_key, compare_output, console_blocks

PAGE = """Some words.

```console
$ mteb-stratified evaluate --qrels nfcorpus:test \\
    --run demo/bm25.trec -c
measure  expected     min
-------  --------  ------
nDCG@10    0.3064  0.3048

323 queries; 47.4% tied
```

```bash
$ not-a-console-block
```

```console
$ MTEB_STRATIFIED_MAX_QUERIES=5 mteb-stratified leaderboard runs
| 1 | minilm | 5 | 0.6857 |
...
wrote runs/leaderboard.csv
$ mteb-stratified stratify runs
```
"""

PRINTED = ("measure  expected     min\n-------  --------  ------\n"
           "nDCG@10    0.3064  0.3048\n\n323 queries; 47.4% tied\n")


def _blocks():
    return console_blocks(PAGE, "docs/page.md")


def test_blocks_and_commands_are_read():
    shown = _blocks()
    assert [(s.line, s.key) for s in shown] == [
        (4, "mteb-stratified evaluate --qrels nfcorpus:test --run demo/bm25.trec -c"),
        (18, "mteb-stratified leaderboard runs"), (22, "mteb-stratified stratify runs")]
    assert shown[0].output[-1] == "323 queries; 47.4% tied" and shown[2].output == ()
    assert command_key("A=1 B=x  cmd \\\n  --flag") == "cmd --flag"


def test_the_same_output_passes_and_a_changed_figure_fails():
    first = _blocks()[0]
    assert compare_output(first, PRINTED) is None
    # alignment, trailing spaces, a progress-bar line and more digits than shown all pass
    assert compare_output(first, PRINTED.replace("    0.3064", "  0.30641 ") + "\r50%|##\n") \
        is None
    changed = compare_output(first, PRINTED.replace("0.3064", "0.3065"))
    assert "docs/page.md:4" in changed and "0.3064 shown, 0.3065 printed" in changed
    assert "47.4 shown, 47.5 printed" in compare_output(first, PRINTED.replace("47.4", "47.5"))
    assert "different text" in compare_output(first, PRINTED.replace("tied", "tie"))
    assert "printed no line" in compare_output(first, PRINTED.split("\n\n")[0])
    assert "more line" in compare_output(first, PRINTED + "an extra line\n")


def test_an_ellipsis_stands_for_any_lines():
    board = _blocks()[1]
    assert compare_output(board, "| 1 | minilm | 5 | 0.6857 |\nx\ny\nwrote runs/leaderboard.csv\n") \
        is None
    assert compare_output(board, "| 1 | minilm | 5 | 0.6857 |\nwrote runs/leaderboard.csv") \
        is None
    assert "0.6857 shown, 0.6858 printed" in compare_output(
        board, "| 1 | minilm | 5 | 0.6858 |\nwrote runs/leaderboard.csv")
