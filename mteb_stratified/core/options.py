"""The evaluation's option values and bounds as plain Python (no numpy): the command line shows
them in ``--help`` and checks its arguments against them before anything heavy loads.

Their users import them from here (``arrays``, ``evaluate``, ``api``, ``io.numbers``,
``cli.evaluate``) and re-export them where they always lived.
"""

from __future__ import annotations

__all__ = ["MAX_GRADE", "OBLIVIOUS_ORDERS", "IDEALS", "DEFAULT_MEASURES", "DEFAULT_TASK", "ALPHA"]

#: The largest absolute relevance grade accepted anywhere (files, dicts, arrays): ``2**1000`` is
#: about 1e301, so exp-log2 gains (``2**g - 1``) and their sums over a ranking stay finite.
MAX_GRADE = 1000

#: The tie-oblivious orders to compare with: trec_eval's (score, then doc id descending) or the
#: input's.
OBLIVIOUS_ORDERS = ("trec_eval", "input")

#: Where the ideal DCG comes from: all judged documents (trec_eval) or the retrieved candidates.
IDEALS = ("qrels", "candidates")

#: The measures reported when none are named.
DEFAULT_MEASURES = ("nDCG@10", "RR@10", "R@100", "P@10", "AP@100")
#: The task whose results a folder stands for when none is named (``stratify``, ``report``).
DEFAULT_TASK = "StratifiedNFCorpus"

#: The level at which every "beyond chance" / "significant" statement is made: the default
#: ``alpha`` of the chance tests (:mod:`.stats.chance`), the power study
#: (:mod:`.stats.power`), the lexical comparison and the report's verdicts.
ALPHA = 0.05
