"""auto's strategy where one block holds one or two copies of the 32-bit bins
(GS_HIST_AUTO_MIN_REPLICAS, tuning.h): `shared` (replicated shared counters)
against `warp` (warp-aggregated global atomics) on device histograms of
int32 values into nb unit-wide bins, every distribution -- the rule picks
warp below two copies because of skewed data.

    python -m benchmarks.probes.mid_bins

CuPy int32, 64M values; ms per call from CUDA events around back-to-back
calls (median of 5 rounds of 10), each strategy checked against NumPy."""
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402

N = 64 * 2**20


def dist(name, nb, rng):
    if name == "uniform":
        return rng.integers(0, nb, N)
    if name == "one value":
        return np.full(N, nb // 3)
    if name == "zipf":
        return np.minimum(rng.zipf(1.3, N) - 1, nb - 1)
    if name == "normal":
        return np.clip(rng.normal(nb / 2, nb / 50, N), 0, nb - 1).astype(np.int64)
    if name == "sorted":
        return np.sort(rng.integers(0, nb, N))
    raise ValueError(name)


def timed(fn, reps=10):
    s = cp.cuda.get_current_stream()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    fn()
    out = []
    for _ in range(5):
        e0.record(s)
        for _ in range(reps):
            fn()
        e1.record(s)
        e1.synchronize()
        out.append(cp.cuda.get_elapsed_time(e0, e1) / reps)
    return statistics.median(out)


def main():
    rng = np.random.default_rng(0)
    strategies = ["auto", "shared", "warp"]
    print(f"{gs.device_info()['name']}: int32, {N} values, ms per call (events, median of 5 rounds of 10)")
    print(f"{'bins':>7s} {'data':10s}" + "".join(f"{s:>10s}" for s in strategies) + "   auto ran")
    for nb in (16_384, 24_576, 32_768, 49_152):
        for name in ("uniform", "one value", "zipf", "normal", "sorted"):
            x = dist(name, nb, rng).astype(np.int32)
            want = np.bincount(x, minlength=nb)[:nb]
            d = cp.asarray(x)
            row = []
            for s in strategies:
                h = gs.histogram(d, bins=nb, range=(0, nb), strategy=s)[0]
                assert np.array_equal(h.get(), want), (nb, name, s)
                if s == "auto":
                    ran = gs.last_plan()["strategy_used"]
                row.append(timed(lambda: gs.histogram(d, bins=nb, range=(0, nb), strategy=s)))
            print(f"{nb:7d} {name:10s}" + "".join(f"{t:10.3f}" for t in row) + f"   {ran}", flush=True)
            del d


if __name__ == "__main__":
    main()
