"""The README's stratified report: NFCorpus test, the packaged MiniLM (fp32) and BM25.

    python benchmarks/report_nfcorpus.py [--runs DIR] [--out benchmarks/results/report_nfcorpus]

1. MiniLM: the stock ``mteb run -t StratifiedNFCorpus -m mteb-stratified/all-MiniLM-L6-v2`` on
   the full test split into ``--runs`` (skipped when that folder already holds its result);
2. BM25: ``mteb-stratified demo``'s float32 run;
3. ``mteb-stratified report minilm=... bm25=... -o OUT/report.html``;
4. screenshots in headless Chromium at 1400 px, 256 colours: the whole page
   (``OUT/report.png``) and its top, what a reader sees first (``docs/img/report-top.png``,
   1400 × 900: the title, the headline and its points, the ties).

Prints the figures the README quotes (heterogeneity, estimates, stability).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from _harness import ROOT

MODEL = "mteb-stratified/all-MiniLM-L6-v2"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=os.path.join(tempfile.gettempdir(), "report_nfcorpus_runs"),
                    help="mteb output folder (default: a temp folder)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                  "report_nfcorpus"))
    ap.add_argument("--height", type=int, default=5400, help="screenshot height in px")
    args = ap.parse_args()
    from mteb_stratified.io.mteb_results import task_result_files

    results = [p for p in task_result_files(args.runs) if p.name == "StratifiedNFCorpus.json"
               and "MiniLM-L6-v2" in str(p) and "bf16" not in str(p)] \
        if os.path.isdir(args.runs) else []
    if not results:
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        for key in ("MTEB_STRATIFIED_MAX_QUERIES", "MTEB_STRATIFIED_MAX_DOCS"):
            env.pop(key, None)  # the full split
        subprocess.run(["mteb", "run", "-t", "StratifiedNFCorpus", "-m", MODEL,
                        "--output-folder", args.runs, "--prediction-folder",
                        os.path.join(args.runs, "predictions", "minilm")], check=True, env=env)
        results = [p for p in task_result_files(args.runs)
                   if p.name == "StratifiedNFCorpus.json" and "bf16" not in str(p)]
    demo = os.path.join(args.runs, "demo")
    from mteb_stratified.cli.main import main as cli

    if cli(["demo", "-o", demo]) != 0:
        return 1
    os.makedirs(args.out, exist_ok=True)
    html = os.path.join(args.out, "report.html")
    rc = cli(["report", f"minilm={results[0]}",
              f"bm25={os.path.join(demo, 'nfcorpus-test.bm25.fp32.trec')}", "-o", html])
    if rc != 0:
        return rc
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        print("no chromium: screenshot skipped", file=sys.stderr)
        return 1
    from PIL import Image

    top = os.path.join(ROOT, "docs", "img", "report-top.png")
    for png, height in ((os.path.join(args.out, "report.png"), args.height), (top, 900)):
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--user-data-dir={profile}",
                            "--virtual-time-budget=5000",
                            f"--window-size=1400,{height}", f"--screenshot={png}",
                            "file://" + os.path.abspath(html)], check=True,
                           capture_output=True, timeout=180)
        Image.open(png).convert("RGB").quantize(colors=256).save(png, optimize=True)
        print(f"wrote {png} ({os.path.getsize(png) / 1024:.0f} KiB)")
    print(f"wrote {html}")
    md = open(os.path.splitext(html)[0] + ".md", encoding="utf-8").read()
    print(md.split("| level |", 1)[0].strip())  # the headline and what the docs quote
    return 0


if __name__ == "__main__":
    sys.exit(main())
