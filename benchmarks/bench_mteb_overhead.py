"""Wall-time overhead of the tie-aware MTEB task over the stock one, same model, one process.

Runs the packaged all-MiniLM-L6-v2 on NFCorpus twice per round: the stock ``NFCorpus`` task
(mteb's own class and evaluation; its data read from the bundled copy, since the hub is offline)
and ``StratifiedNFCorpus`` (exact search at the depth boundary + tie-aware scores).  The order
alternates between rounds so warm-up and background load do not favour one side.  Prints each
run's wall and process CPU time, the ratios stratified/stock (target: < 1.05; on a shared
machine the CPU-time ratio is the meaningful one), and the time of the tie-aware scoring step
alone on the real run (what the tie-aware evaluation adds beyond search).

    python benchmarks/bench_mteb_overhead.py                  # full test split (slow on CPU)
    python benchmarks/bench_mteb_overhead.py --max-docs 600   # quicker: all queries, 600 docs

With ``--max-docs``/``--max-queries`` the encoding share shrinks, so the ratio is an upper bound
of the full-split one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from _harness import interleaved, median, print_command

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--max-docs", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=1, help="stock+stratified pairs (default 1)")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args(argv)
    if args.max_queries:
        os.environ["MTEB_STRATIFIED_MAX_QUERIES"] = str(args.max_queries)
    if args.max_docs:
        os.environ["MTEB_STRATIFIED_MAX_DOCS"] = str(args.max_docs)

    import logging

    import mteb
    from mteb.tasks import NFCorpus

    from mteb_stratified.adapters.mteb import register
    from mteb_stratified.adapters.mteb.models import MINILM_FP32
    from mteb_stratified.adapters.mteb.scoring import tie_aware_evaluation
    from mteb_stratified.adapters.mteb.tasks import StratifiedNFCorpus

    logging.getLogger("mteb").setLevel(logging.ERROR)
    register()

    class StockNFCorpus(NFCorpus):
        """mteb's NFCorpus class, evaluation untouched; data from the bundled BEIR copy."""

        def load_data(self, num_proc=None, **kwargs):
            if self.data_loaded:
                return
            loader = StratifiedNFCorpus()
            loader.load_data()
            self.dataset = loader.dataset
            self.data_loaded = True

    model = mteb.get_model(MINILM_FP32)
    enc = {"batch_size": args.batch_size, "show_progress_bar": False}
    last: dict = {}

    def prepare(which):
        def load():
            task = StockNFCorpus() if which == "stock" else StratifiedNFCorpus()
            task.load_data()  # data loading is not what we time
            return task
        return load

    def contender(which):
        return lambda task: (task, mteb.evaluate(
            model, [task], cache=None, overwrite_strategy="always", encode_kwargs=enc,
            prediction_folder=os.path.join(tmp, which), show_progress_bar=False))

    def on_sample(r, which, dt, dc, got):
        task, res = got
        s = res[0].scores["test"][0]
        extra = (f"  ndcg_at_10_expected={s['ndcg_at_10_expected']:.4f}"
                 if which == "stratified" else "")
        print(f"round {r + 1} {which:10s} wall {dt:8.2f} s  cpu {dc:8.2f} s   "
              f"ndcg_at_10={s['ndcg_at_10']:.4f}{extra}", flush=True)
        if which == "stratified":
            import json

            # a quick-run subset saves under its own name (<Task>__subset-q5-d600)
            pred = f"{task.metadata.name}_predictions.json"
            with open(os.path.join(tmp, which, pred)) as fh:
                last["run"] = json.load(fh)["default"]["test"]
            qrels = StratifiedNFCorpus()
            qrels.load_data()
            last["qrels"] = qrels.dataset["default"]["test"]["relevant_docs"]

    print_command()
    names = ("stock", "stratified")
    with tempfile.TemporaryDirectory() as tmp:
        got = interleaved({k: contender(k) for k in names}, args.rounds,
                          prepare={k: prepare(k) for k in names}, on_sample=on_sample)
    times, cpu = got.wall, got.cpu
    last_run, last_qrels = last["run"], last["qrels"]
    stock, strat = median(times["stock"]), median(times["stratified"])
    cstock, cstrat = median(cpu["stock"]), median(cpu["stratified"])
    t0 = time.perf_counter()
    tie_aware_evaluation(last_qrels, last_run, (1, 3, 5, 10, 20, 100, 1000), exact_depth=True)
    scoring = time.perf_counter() - t0
    print(f"\nqueries={len(last_run)}  wall: stock={stock:.2f} s  stratified={strat:.2f} s  "
          f"ratio={strat / stock:.4f} ({100 * (strat / stock - 1):+.2f}%)")
    print(f"process CPU time (robust when the machine is shared): stock={cstock:.2f} s  "
          f"stratified={cstrat:.2f} s  ratio={cstrat / cstock:.4f} "
          f"({100 * (cstrat / cstock - 1):+.2f}%)")
    print(f"tie-aware scoring alone (5 families x 7 cutoffs, incl. tie audit): {scoring:.3f} s "
          f"= {100 * scoring / stock:.2f}% of the stock run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
