"""How a device histogram ends (gs_hist_fin, csrc/cuda/hist_launch.cuh), A/B in
one process: GPUSYNC_HIST_ONE_LAUNCH=0 (the zeroing kernel, then the count)
against one launch (one block storing its counts, or every block adding into
the scratch buffer's accumulators), interleaved round by round on the same
CuPy arrays.  (r171 also measured a third end, since dropped: each block
storing its counts for the last block to add; results/fuse_ends_H200_r171.txt.)

Two numbers a case and mode: the synchronized wall time of one call (what a
notebook feels), and the time per call of 200 calls back to back between two
CUDA events (device-bound for large inputs; no graph: a capture declines the
accumulators).  Median of 7 rounds.

    python -m benchmarks.probes.fuse_ends [--quick]"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402

MODES = [("zeroing", "0"), ("one launch", None)]
MiB = 2**20
CASES = [  # (label, dtype, bins, range, sizes): fast-path kernels, then the generic kernel
    ("f64 100 bins", "float64", 100, (0.0, 1.0), [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]),
    ("f32 10 bins", "float32", 10, (0.0, 1.0), [1_000_000, 10_000_000]),
    ("u16 4096 unit bins", "uint16", 4096, (0, 4096), [1_000_000, 10_000_000]),
    ("u8 256 bins", "uint8", 256, (0, 256), [100_000, MiB, 4 * MiB, 32 * MiB, 256 * MiB]),
    ("i64 100 bins (generic)", "int64", 100, (0, 1000), [100_000, 1_000_000, 10_000_000]),
]


def data(dtype, n, rng):
    if dtype.startswith("float"):
        return rng.random(n).astype(dtype)
    hi = {"uint8": 256, "uint16": 4096, "int64": 1000}[dtype]
    return rng.integers(0, hi, n).astype(dtype)


def main():
    quick = "--quick" in sys.argv
    rounds, calls = (3, 50) if quick else (7, 200)
    dev = cp.cuda.Device()
    rng = np.random.default_rng(0)
    print(f"{gs.device_info()['name']}: us per call (median of {rounds} rounds of {calls}); "
          "wall = synchronized call, dev = back to back between events")
    head = "".join(f"{m + ' wall':>18s}{m + ' dev':>16s}" for m, _ in MODES)
    print(f"{'case':36s}{head}")
    s = cp.cuda.Stream(non_blocking=True)
    for label, dtype, bins, rg, sizes in CASES:
        for n in sizes:
            x = data(dtype, n, rng)
            want = np.histogram(x, bins, rg)[0]
            with s:
                d = cp.asarray(x)
                s.synchronize()
                wall = {m: [] for m, _ in MODES}
                devt = {m: [] for m, _ in MODES}
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                for _ in range(rounds):
                    for m, v in MODES:
                        if v is None:
                            os.environ.pop("GPUSYNC_HIST_ONE_LAUNCH", None)
                        else:
                            os.environ["GPUSYNC_HIST_ONE_LAUNCH"] = v
                        h = gs.histogram(d, bins, rg)[0]
                        s.synchronize()
                        assert np.array_equal(h.get(), want), (label, n, m)
                        k = max(3, calls // 4) if n >= 10_000_000 else calls
                        t = time.perf_counter()
                        for _ in range(k):
                            gs.histogram(d, bins, rg)
                            s.synchronize()
                        wall[m].append((time.perf_counter() - t) / k * 1e6)
                        e0.record(s)
                        for _ in range(k):
                            gs.histogram(d, bins, rg)
                        e1.record(s)
                        e1.synchronize()
                        devt[m].append(cp.cuda.get_elapsed_time(e0, e1) / k * 1e3)
                os.environ.pop("GPUSYNC_HIST_ONE_LAUNCH", None)
            del d
            row = "".join(f"{statistics.median(wall[m]):18.2f}{statistics.median(devt[m]):16.2f}" for m, _ in MODES)
            print(f"{label + ' n=' + str(n):36s}{row}", flush=True)
    dev.synchronize()


if __name__ == "__main__":
    main()
