"""Host histograms of float data on equal-width bins: the CPU engine on one thread and on all cores
against fast-histogram (one thread), boost-histogram (all cores) and NumPy, and the engines of a
large call (issue 13: histograms at least as fast as fast-histogram and boost-histogram's threaded
fill at every size; the split of a 300M-element float64 histogram).

    python -m benchmarks.probes.host_hist [--max-n 3e8] [--simd auto,avx2,none]

Interleaved rounds (each implementation once per round, a median of a few back-to-back calls);
the table gives the median over rounds in ns an element.  `--simd` repeats the gpusync rows with
GPUSYNC_CPU_SIMD set to each value (the kernels picked at run time on this CPU).  Every gpusync
result is checked against fast-histogram's counts (or NumPy's) first."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import gpusync as gs  # noqa: E402
from gpusync import _calibrate  # noqa: E402
from benchmarks.probes import block  # noqa: E402

try:
    import fast_histogram as fh
except ImportError:  # pragma: no cover
    fh = None
try:
    import boost_histogram as bh
except ImportError:  # pragma: no cover
    bh = None

BINS, RANGE = 100, (0.0, 1.0)


def data(dist, dt, n, rng):
    if dist == "uniform":
        return rng.random(n, dtype=np.float64).astype(dt, copy=False)
    return rng.normal(0.5, 0.2, n).astype(dt, copy=False)  # ~1.2 % outside the range


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=float, default=3e8)
    ap.add_argument("--simd", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--split", action="store_true", help="at the largest float64 size: each engine forced")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    simds = args.simd.split(",")
    print(f"{cores} cores; gpusync from {os.path.dirname(gs.__file__)}; ns an element (median of "
          f"{args.rounds} interleaved rounds); {BINS} bins over {RANGE}")
    sizes = [n for n in (1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 300_000_000)
             if n <= args.max_n]
    rng = np.random.default_rng(0)
    for dt in (np.float64, np.float32):
        for dist in ("uniform", "normal"):
            for n in sizes:
                if n > 10_000_000 and (dt != np.float64 or dist != "uniform"):
                    continue
                a = data(dist, dt, n, rng)
                ref = np.histogram(a, BINS, RANGE)[0] if n <= 10_000_000 or fh is None else \
                    fh.histogram1d(a, BINS, RANGE).astype(np.int64)
                calls = max(1, min(20, int(2e7 // n)))
                impls = {}
                for s in simds:
                    def env(fn, s=s):
                        def run():  # written only when it changes (a write per call would time the env cache)
                            if os.environ.get("GPUSYNC_CPU_SIMD") != s:
                                os.environ["GPUSYNC_CPU_SIMD"] = s
                            return fn()
                        return run

                    def one():
                        with _calibrate._forced("caller", 1):
                            return gs.histogram(a, BINS, RANGE)[0]

                    def pool():
                        with _calibrate._forced("cpu", cores):
                            return gs.histogram(a, BINS, RANGE)[0]

                    impls[f"gs auto [{s}]"] = env(lambda: gs.histogram(a, BINS, RANGE)[0])
                    impls[f"gs 1 thread [{s}]"] = env(one)
                    impls[f"gs cpu {cores} threads [{s}]"] = env(pool)
                if args.split and n == sizes[-1] and dt == np.float64 and gs.cuda_available():
                    for eng in ("cuda", "cpu+cuda"):
                        def forced(eng=eng):
                            with _calibrate._forced(eng, None):
                                return gs.histogram(a, BINS, RANGE)[0]
                        impls[f"gs {eng} (forced)"] = forced
                if fh is not None:
                    impls["fast-histogram"] = lambda: fh.histogram1d(a, BINS, RANGE)
                if bh is not None:
                    h = bh.Histogram(bh.axis.Regular(BINS, *RANGE), storage=bh.storage.Int64())
                    impls[f"boost-histogram {cores} threads"] = lambda h=h: h.reset().fill(a, threads=cores)
                if n <= 10_000_000:
                    impls["numpy"] = lambda: np.histogram(a, BINS, RANGE)
                for name, fn in impls.items():
                    if name.startswith("gs"):
                        got = np.asarray(fn())
                        assert np.array_equal(got, ref), (name, n, dt, dist)
                res = {k: [] for k in impls}
                plans = {}
                for _ in range(args.rounds):
                    for name, fn in impls.items():
                        time.sleep(0.002)
                        res[name].append(block(fn, calls))
                        if name.startswith("gs auto"):
                            p = gs.last_plan()
                            pred = ", ".join(f"{k} {v:.2f}" for k, v in (p.get("predicted_ms") or {}).items())
                            plans[name] = f"{p['engine']},{p['threads']} (predicted ms: {pred})"
                print(f"== {np.dtype(dt).name} {dist} n={n}")
                best_peer = min((statistics.median(v) for k, v in res.items() if not k.startswith("gs")),
                                default=float("nan"))
                for name, v in res.items():
                    med = statistics.median(v)
                    extra = f"  ran {plans[name]}" if name in plans else ""
                    ratio = f"  best peer / this {best_peer / med:5.2f}" if name.startswith("gs") else ""
                    print(f"  {name:32s} {med * 1e9 / n:8.3f} ns/el  {med * 1e3:10.4f} ms{ratio}{extra}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
