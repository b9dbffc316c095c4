"""Sums and dots on t CPU-engine threads, back to back (the pool's workers
spinning): the engine call alone (no wrapper), median us per call, for the
thread counts the model chooses among.  What the warm hand-off and each
thread's slice cost at sizes the caches hold: the data behind the model's
warm thread choice (docs/dispatch.md, "the C fast path").

    python -m benchmarks.probes.pool_threads
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
from benchmarks.probes import block  # noqa: E402
from gpusync import _core  # noqa: E402


def med_us(fn, reps):
    return block(fn, reps) * 1e6


def main():
    rng = np.random.default_rng(0)
    cores = os.cpu_count() or 1
    counts = sorted({c for c in (1, 2, 4, 8, 16, 32, 64) if c <= cores} | {cores})
    out = np.empty(1)
    print("| case | n | " + " | ".join(f"{t} thr" for t in counts) + " | numpy |")
    print("|---|---:|" + "---:|" * (len(counts) + 1))
    for n in (3_162, 10_000, 31_623, 100_000, 316_228):
        f64 = rng.standard_normal(n)
        f32 = f64.astype(np.float32)
        g32 = rng.standard_normal(n).astype(np.float32)
        for name, a, b, ref in (("sum f64", f64, None, lambda: np.sum(f64)), ("sum f32", f32, None, lambda: np.sum(f32)),
                                ("dot f64", f64, f64, lambda: np.dot(f64, f64)),
                                ("dot f32 x.y", f32, g32, lambda: np.dot(f32, g32))):
            row = []
            for t in counts:
                def call():
                    _core.cpu_threads(t)
                    try:
                        _core.reduce("cpu", a, b, out, "two-pass", False, 0)
                    finally:
                        _core.cpu_threads(0)
                row.append(med_us(call, 300))
            print(f"| {name} | {n:,} | " + " | ".join(f"{v:.2f}" for v in row) + f" | {med_us(ref, 300):.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
