"""Wall time per call of a device histogram with an explicit strategy: the device fast path against the
general path (_histogram_impl), CuPy int64, unit bins, range given (r234).

    python3 benchmarks/probes/explicit_strategy.py
"""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import gpusync as gs  # noqa: E402
from gpusync import _histogram  # noqa: E402


def wall(fn, reps=30):
    """Median wall us of fn() and a device synchronize."""
    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


print("| bins | n | strategy | fast path us | general path us | auto us |")
print("|---:|---:|---|---:|---:|---:|")
for nb, n in ((100, 1 << 20), (65_536, 1 << 22), (1 << 20, 1 << 22), (1 << 22, 1 << 24)):
    x = cp.random.default_rng(1).integers(0, nb, n)
    for st in ("global", "shared", "warp", "cluster"):
        try:
            g = wall(lambda: _histogram._histogram_impl(x, nb, (0, nb), strategy=st))
        except Exception as exc:  # noqa: BLE001 - the strategy cannot count these bins: say so
            print(f"| {nb:,} | {n:,} | {st} | - | {type(exc).__name__} | - |")
            continue
        f = wall(lambda: gs.histogram(x, nb, (0, nb), strategy=st))
        assert "the device fast path" in gs.last_plan()["notes"]
        a = wall(lambda: gs.histogram(x, nb, (0, nb)))
        print(f"| {nb:,} | {n:,} | {st} | {f:.1f} | {g:.1f} | {a:.1f} |", flush=True)
