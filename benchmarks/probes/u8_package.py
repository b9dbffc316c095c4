"""The package's 8-bit histograms by bins, size and distribution (issue 14: >= 90 % of read at 32 MiB, >= 95 % from
256 MiB): graph replay of 5 calls (device time) and CUDA events around 5 back-to-back calls, checked against NumPy's
histogram; beside them, hist_small.cu's 8-bit kernel at the same size (GPUSYNC_HIST_SMALL=2, graph replay): where
it is faster, GS_HIST_U8_SMALL_MAX_BYTES (tuning.h) should be higher.  A quick A/B companion of
benchmarks/probes/u8_pipe.cu (the kernels alone); the benchmark rows are `python3 benchmarks/histogram.py --dist`.

    python3 -m benchmarks.probes.u8_package [--quick]
"""
import os
import sys

import cupy as cp
import numpy as np

import gpusync as gs
from benchmarks.common import Timer


def _data(rs, dist, n):
    if dist == "uniform":
        return rs.randint(0, 256, n, dtype=cp.uint8)
    if dist == "same":
        return cp.full(n, 101, cp.uint8)
    if dist == "text":  # letters and spaces
        pool = cp.asarray(np.frombuffer(b"  etaoinshrdlucmfwypvbgkqjxz ETAOIN.,", np.uint8))
        return pool[rs.randint(0, pool.size, n)]
    return cp.minimum(rs.zipf(1.3, n) - 1, 255).astype(cp.uint8)


def main():
    quick = "--quick" in sys.argv
    t = Timer(cp)
    rs = cp.random.RandomState(3)
    cases = [((256, (0, 256)), ("uniform", "same", "zipf")), ((64, (0, 256)), ("uniform",)),
             ((100, (0, 100)), ("uniform",)), ((128, (0, 128)), ("text",))]
    sizes = [(4 << 20, "4 MiB"), (5_700_000, "5.7 MB"), (8 << 20, "8 MiB"), (32 << 20, "32 MiB"),
             (256 << 20, "256 MiB"), (1 << 30, "1 GiB")]
    if quick:
        sizes = sizes[:2]
    print("| bins | dist | size | auto graph us | % of 4371 GB/s | auto events us | u8 kernel graph us | check |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for (bins, rng_), dists in cases:
        for dist in dists:
            for n, label in sizes:
                x = _data(rs, dist, n - 5)  # not a multiple of 16: the tail runs too

                def f():
                    return gs.histogram(x, bins, rng_)

                ms = t.graph(f, reps=9, inner=5)
                me = t.gpu(f, reps=9, inner=5)
                want = np.histogram(cp.asnumpy(x), bins, rng_)[0]
                ok = np.array_equal(cp.asnumpy(f()[0]), want)
                os.environ["GPUSYNC_HIST_SMALL"] = "2"
                try:
                    mb = t.graph(f, reps=9, inner=5)
                    ok = ok and np.array_equal(cp.asnumpy(f()[0]), want)
                finally:
                    del os.environ["GPUSYNC_HIST_SMALL"]
                print(f"| {bins} {rng_} | {dist} | {label} | {ms * 1e3:.1f} | {100 * x.size / ms / 1e6 / 4371:.1f}% | "
                      f"{me * 1e3:.1f} | {mb * 1e3:.1f} | {'ok' if ok else 'WRONG'} |", flush=True)
                del x


if __name__ == "__main__":
    main()
