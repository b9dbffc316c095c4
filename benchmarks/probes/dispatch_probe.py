"""The dispatcher on a GPU machine: which engine auto picks and how each
forced engine compares, for NumPy inputs of several sizes, plus the per-call
wall time of device inputs (issue 13's targets).

    python -m gpusync calibrate
    python -m benchmarks.probes.dispatch_probe [--big]     # --big: the 300M float64 histogram

Prints one line per (case, engine): wall ms (median of 5) and, for auto, the
plan's engine and split.  Device rows need CuPy."""
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import gpusync as gs  # noqa: E402
from benchmarks.host import wall_ms  # noqa: E402


def engines(fn):
    row = {}
    for eng in ("auto", "caller", "cpu", "cuda", "cpu+cuda"):
        if eng == "auto":
            os.environ.pop("GPUSYNC_ENGINE", None)
        else:
            os.environ["GPUSYNC_ENGINE"] = eng
        row[eng] = wall_ms(fn, reps=5)
        if eng == "auto":
            p = gs.last_plan()
            row["plan"] = f"{p['engine']} threads={p['threads']} split={p['split']}"
    os.environ.pop("GPUSYNC_ENGINE", None)
    return row


def main():
    rng = np.random.default_rng(0)
    sizes = [10**3, 10**5, 10**6, 10**7, 10**8] + ([3 * 10**8] if "--big" in sys.argv else [])
    for n in sizes:
        x = rng.standard_normal(n)
        xi = rng.integers(0, 1000, n)
        cases = {"histogram-f64-100": lambda: gs.histogram(x, 100, range=(-4, 4)),
                 "sum-f64": lambda: gs.sum(x), "dot-f64": lambda: gs.dot(x, x), "bincount-i64": lambda: gs.bincount(xi)}
        for name, fn in cases.items():
            r = engines(fn)
            print(f"{name:18s} n={n:>11,d} " + " ".join(f"{k} {r[k]:9.3f}" for k in
                                                       ("auto", "caller", "cpu", "cuda", "cpu+cuda")) + f"  [{r['plan']}]",
                  flush=True)
    try:
        import cupy as cp
    except ImportError:
        return
    for n in (10**4, 10**6, 33 * 10**6):
        d = cp.random.standard_normal(n)
        cp.cuda.Device().synchronize()
        ours = wall_ms(lambda: gs.sum(d), reps=50)
        theirs = wall_ms(lambda: cp.sum(d), reps=50)
        hist = wall_ms(lambda: gs.histogram(d, 100, range=(-4, 4)), reps=50)
        print(f"device n={n:>11,d}: gs.sum {ours:.4f} ms, cp.sum {theirs:.4f} ms, gs.histogram(bins, range) {hist:.4f} ms")


if __name__ == "__main__":
    main()
