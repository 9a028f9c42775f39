"""GPU cost of HPS: upcast + score of 1M bf16 logits / scores, timed with CUDA events.

Ops (each on 1,048,576 = 2^20 scores; inputs are bf16 on the GPU, as a bf16 model leaves them):

* ``softmax yes/no``  p(yes) = softmax([ℓ_no, ℓ_yes])[1] of 1M (ℓ_yes, ℓ_no) pairs, upcast to
  fp32 first (the Qwen3-Reranker path), via log_softmax over the pair axis;
* ``sigmoid(margin)`` σ(ℓ_yes − ℓ_no) of the same pairs in fp32 (one fused-friendly form);
* ``sigmoid``         σ(ℓ) of 1M single logits in fp32 (the cross-encoder path);
* ``dot 1024x1024``   1M cosine scores: 1024 query and 1024 document embeddings (dim 384,
  bf16) upcast to fp32, L2-normalised and multiplied;
* ``dot 1x1M``        1M cosine scores of one query against 1M document embeddings (dim 384)
  upcast to fp32 (memory-bound: 768 MB of bf16 read, the fp32 copy written and read).

Each op is also timed without the upcast (everything in bf16) so the HPS overhead shows as a
difference. Timing: ``--warmup`` calls, then ``--repeats`` calls each between two CUDA events;
the median and the minimum are printed in ms. Without CUDA the script prints a skip message
and exits 0.

Run: ``python benchmarks/gpu_hps.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import sys

from _harness import median, print_command, spread

N = 1 << 20


def _ops(torch, device):
    g = torch.Generator(device=device).manual_seed(0)
    pairs = (torch.randn(N, 2, device=device, generator=g) * 4).to(torch.bfloat16)
    single = (torch.randn(N, device=device, generator=g) * 4).to(torch.bfloat16)
    q = torch.randn(1024, 384, device=device, generator=g).to(torch.bfloat16)
    d = torch.randn(1024, 384, device=device, generator=g).to(torch.bfloat16)
    q1 = torch.randn(1, 384, device=device, generator=g).to(torch.bfloat16)
    big = torch.randn(N, 384, device=device, generator=g).to(torch.bfloat16)
    F = torch.nn.functional

    def softmax_pairs(dtype):
        # pairs[:, 0] = ℓ_no, pairs[:, 1] = ℓ_yes
        return lambda: torch.log_softmax(pairs.to(dtype), dim=-1)[:, 1].exp()

    def sigmoid_margin(dtype):
        return lambda: torch.sigmoid(pairs[:, 1].to(dtype) - pairs[:, 0].to(dtype))

    def sigmoid(dtype):
        return lambda: torch.sigmoid(single.to(dtype))

    def dot(a, b, dtype):
        return lambda: F.normalize(a.to(dtype), dim=-1) @ F.normalize(b.to(dtype), dim=-1).T

    f32, bf = torch.float32, torch.bfloat16
    return [("softmax yes/no", softmax_pairs(f32), softmax_pairs(bf)),
            ("sigmoid(margin)", sigmoid_margin(f32), sigmoid_margin(bf)),
            ("sigmoid", sigmoid(f32), sigmoid(bf)),
            ("dot 1024x1024", dot(q, d, f32), dot(q, d, bf)),
            ("dot 1x1M", dot(q1, big, f32), dot(q1, big, bf))]


def _time(torch, fn, warmup: int, repeats: int) -> dict:
    """Median and least milliseconds of ``fn`` on the GPU (CUDA events: the kernels' own time,
    which :func:`_harness.interleaved`'s host clock does not see)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    assert out.numel() == N, out.shape  # noqa: S101 - benchmark self-check, not input validation
    return {"median_ms": median(times), "min_ms": spread(times)[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_hps: skipped: torch is not installed (pip install mteb-stratified[mteb])")
        return 0
    if not torch.cuda.is_available():
        print("gpu_hps: skipped: no CUDA device (this benchmark times GPU kernels; "
              "run it on a machine with a GPU)")
        return 0
    device = torch.device("cuda")
    name = torch.cuda.get_device_name(device)
    print_command()
    print(f"gpu_hps: {name}, torch {torch.__version__}, N = {N:,} scores per op, "
          f"warmup {args.warmup}, repeats {args.repeats}")
    results = []
    print(f"{'op':<18} {'HPS fp32 median':>16} {'min':>8} {'bf16 median':>12} {'min':>8} "
          f"{'overhead':>9}")
    for label, hps_fn, bf16_fn in _ops(torch, device):
        h = _time(torch, hps_fn, args.warmup, args.repeats)
        b = _time(torch, bf16_fn, args.warmup, args.repeats)
        over = h["median_ms"] - b["median_ms"]
        results.append({"op": label, "hps_fp32": h, "bf16": b, "overhead_ms": over})
        print(f"{label:<18} {h['median_ms']:>13.4f} ms {h['min_ms']:>8.4f} "
              f"{b['median_ms']:>9.4f} ms {b['min_ms']:>8.4f} {over:>+8.4f}")
    total = sum(r["hps_fp32"]["median_ms"] for r in results[:3])
    print(f"softmax + sigmoid(margin) + sigmoid of 1M logits, HPS: {total:.4f} ms in all "
          f"(target < 0.5 ms per op; paper: ~5 ms on an H200)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "n": N, "results": results},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
