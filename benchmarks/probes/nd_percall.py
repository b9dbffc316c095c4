"""Per-call wall time of the device N-D histograms and binned statistics on
1M points (issues 14, 15): the host work around small kernels.  Each call is
followed by a device synchronization; ms per call over 50 calls after
warm-up (mean and median).  `--kernel` also times histogram2d of 100M
float32 points into 256 x 256 bins with the cluster size knob
(GPUSYNC_HISTDD_CLUSTER) at 2, 4 and 8; `--profile` prints cProfile's top
entries of the binned_statistic call.

    python benchmarks/probes/nd_percall.py [--kernel] [--profile]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("ND_PROBE_ROOT") or os.path.dirname(os.path.dirname(HERE)))  # (a build to compare)

import gpusync as gs  # noqa: E402


def per_call(cp, fn, calls=50):
    for _ in range(5):
        fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t0)
    return 1e6 * sum(ts) / len(ts), 1e6 * statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    gs.use_backend("cuda")
    print(f"gpusync from {os.path.dirname(gs.__file__)}  device {gs.device_info()['name']}")
    rs = cp.random.RandomState(3)
    n = 1 << 20
    x, y, v = rs.random_sample(n), rs.random_sample(n), rs.standard_normal(n)
    x32, y32, v32 = x.astype(cp.float32), y.astype(cp.float32), v.astype(cp.float32)
    rg2 = [[0, 1], [0, 1]]
    cases = [
        ("binned_statistic mean 1000 f64 range=None", lambda: gs.binned_statistic(x, v, "mean", bins=1000)),
        ("binned_statistic mean 1000 f64 range=(0,1)", lambda: gs.binned_statistic(x, v, "mean", bins=1000,
                                                                                  range=(0, 1))),
        ("binned_statistic std 1000 f64 range=(0,1)", lambda: gs.binned_statistic(x, v, "std", bins=1000,
                                                                                 range=(0, 1))),
        ("binned_statistic mean 1000 f32 range=(0,1)", lambda: gs.binned_statistic(x32, v32, "mean", bins=1000,
                                                                                  range=(0, 1))),
        ("histogram2d 64 f64 range given", lambda: gs.histogram2d(x, v, 64, rg2)),
        ("histogram2d 64 f32 range given", lambda: gs.histogram2d(x32, y32, 64, rg2)),
        ("histogram2d 64 f64 range=None", lambda: gs.histogram2d(x, y, 64)),
        ("binned_statistic_2d mean 64x64 f64 range given", lambda: gs.binned_statistic_2d(x, y, v, "mean", 64,
                                                                                           rg2)),
        ("binned_statistic_2d mean 64x64 f64 range=None", lambda: gs.binned_statistic_2d(x, y, v, "mean", 64)),
        ("binned_statistic_2d mean 64x64 f32 range given", lambda: gs.binned_statistic_2d(x32, y32, v32, "mean",
                                                                                           64, rg2)),
        ("cupy.histogram2d 64 f64 (peer)", lambda: cp.histogram2d(x, v, 64, rg2)),
    ]
    print(f"{'case (1M points)':52s} {'mean us':>9s} {'median us':>10s}")
    for name, fn in cases:
        try:
            mean, med = per_call(cp, fn)
            print(f"{name:52s} {mean:9.1f} {med:10.1f}", flush=True)
        except Exception as e:  # an old build may lack a path: say so
            print(f"{name:52s} failed: {type(e).__name__}: {e}", flush=True)
    if args.profile:
        import cProfile
        import pstats

        for name, fn in (cases[1], cases[5], cases[7]):
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(50):
                fn()
                cp.cuda.Device().synchronize()
            pr.disable()
            print(f"\n--- cProfile, 50 calls: {name}")
            pstats.Stats(pr).sort_stats("tottime").print_stats(14)
    if args.kernel:
        m = 100_000_000
        rng = cp.random.default_rng(1)
        hx, hy = rng.random(m, dtype=cp.float32), rng.random(m, dtype=cp.float32)
        ref = cp.histogram2d(hx[:1_000_000], hy[:1_000_000], 256, rg2)[0]
        ok = bool(cp.array_equal(gs.histogram2d(hx[:1_000_000], hy[:1_000_000], 256, rg2)[0], ref))
        s, e = cp.cuda.Event(), cp.cuda.Event()
        print(f"\nhistogram2d 100M float32, 256 x 256 bins (correct on 1M: {ok})")
        for c in ("2", "4", "8", ""):
            if c:
                os.environ["GPUSYNC_HISTDD_CLUSTER"] = c
            else:
                os.environ.pop("GPUSYNC_HISTDD_CLUSTER", None)
            gs.histogram2d(hx, hy, 256, rg2)
            ts = []
            for _ in range(5):
                s.record()
                gs.histogram2d(hx, hy, 256, rg2)
                e.record()
                e.synchronize()
                ts.append(cp.cuda.get_elapsed_time(s, e))
            ms = statistics.median(ts)
            print(f"  cluster knob {c or 'unset':5s} {ms:8.3f} ms  {2 * m * 4 / ms / 1e6:8.0f} GB/s", flush=True)
        os.environ.pop("GPUSYNC_HISTDD_CLUSTER", None)
        for bins in (64, 128):
            gs.histogram2d(hx, hy, bins, rg2)
            s.record()
            gs.histogram2d(hx, hy, bins, rg2)
            e.record()
            e.synchronize()
            ms = cp.cuda.get_elapsed_time(s, e)
            print(f"  {bins} x {bins} bins (privatized shared) {ms:8.3f} ms  {2 * m * 4 / ms / 1e6:8.0f} GB/s")


if __name__ == "__main__":
    main()
