"""The one-launch device histogram's cap (GS_HIST_FUSE_WORDS, tuning.h):
synchronized wall time per call of gs.histogram on CuPy arrays whose count
grid x bins crosses the cap, with GPUSYNC_HIST_FUSE_WORDS set to 0 (the
zeroing kernel, then the count), 4096 (the default), 16384 and 131064,
interleaved in one process.

    python -m benchmarks.probes.fuse_cap"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402

CAPS = ["0", "4096", "16384", "131064"]
CASES = [  # (dtype, bins, range, sizes)
    ("float64", 100, (0.0, 1.0), [100_000, 200_000, 400_000, 1_000_000]),
    ("float32", 10, (0.0, 1.0), [1_000_000, 4_000_000]),
    ("uint8", 256, (0, 256), [100_000, 300_000, 1_000_000]),
]


def main():
    sync = cp.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    print(f"{gs.device_info()['name']}: us per call, synchronized (median / min of 7 rounds of 200)")
    print(f"{'case':32s}" + "".join(f"{'cap ' + c:>18s}" for c in CAPS))
    for dtype, bins, rg, sizes in CASES:
        for n in sizes:
            x = rng.random(n) if dtype != "uint8" else rng.integers(0, 256, n)
            d = cp.asarray(x.astype(dtype))
            gs.histogram(d, bins, rg)
            res = {c: [] for c in CAPS}
            for _ in range(7):
                for c in CAPS:
                    os.environ["GPUSYNC_HIST_FUSE_WORDS"] = c
                    gs.histogram(d, bins, rg)
                    sync()
                    t = time.perf_counter()
                    for _ in range(200):
                        gs.histogram(d, bins, rg)
                        sync()
                    res[c].append((time.perf_counter() - t) / 200 * 1e6)
            os.environ.pop("GPUSYNC_HIST_FUSE_WORDS", None)
            row = "".join(f"{statistics.median(v):10.2f} {min(v):7.2f}" for v in res.values())
            print(f"{dtype + ' ' + str(bins) + ' bins n=' + str(n):32s}{row}")


if __name__ == "__main__":
    main()
