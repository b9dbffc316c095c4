"""The CPU pool's hand-off: a job of 256 float64 (a few ns of work) on t
threads, back to back (the workers still spin: the warm hand-off) and after
a pause longer than their spin (parked: the cold one), minus the same job on
the calling thread alone.  Medians and 10th percentiles, microseconds.

    python -m benchmarks.probes.handoff [--reps 400]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gpusync import _core  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    args = ap.parse_args()
    a = np.ones(256)
    out = np.empty(1)

    def job(t):
        _core.cpu_threads(t)
        try:
            _core.reduce("cpu", a, None, out, "two-pass", False, 0)
        finally:
            _core.cpu_threads(0)

    def times(t, pause):
        job(t)
        ts = []
        for _ in range(args.reps if not pause else max(20, args.reps // 10)):
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            job(t)
            ts.append(time.perf_counter() - t0)
        return np.array(ts) * 1e6

    cores = os.cpu_count() or 1
    alone = times(1, 0)
    base = float(np.median(alone))
    print(f"cores {cores}; the job on the caller alone: median {base:.2f} us")
    print(f"{'threads':>7} {'warm med':>9} {'warm p10':>9} {'cold med':>9} {'cold p10':>9}   (us beyond the caller alone)")
    t = 2
    counts = sorted({c for c in (2, 4, 8, 16, 32, 64) if c <= cores} | {cores})
    for t in counts:
        w = times(t, 0) - base
        c = times(t, 0.002) - base
        print(f"{t:7d} {np.median(w):9.2f} {np.percentile(w, 10):9.2f} {np.median(c):9.2f} {np.percentile(c, 10):9.2f}")


if __name__ == "__main__":
    main()
