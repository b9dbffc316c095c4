"""Host streaming sums / dots: the CPU engine's slices per thread (GPUSYNC_CPU_TASKS, read per call: 1, 2, 4)
against np.dot, torch.dot and torch.sum on the same arrays, at 3.16e7 and 1e8 elements (GS_PROBE_N: other
sizes, a comma list), in shuffled rounds in one process (0.3 s idle before each implementation: the other pools
park -- OpenBLAS ~0.1 s, Intel OpenMP 0.2 s), median of 7 calls each; then the same in back-to-back
stretches (no idle: what a sweep's stretch of calls sees).  A probe behind GS_CPU_REDUCE_TASKS (csrc/include/gpusync/tuning.h), not part of the package.

    PYTHONPATH=. python3 benchmarks/probes/host_tasks.py
"""
import os
import random
import statistics
import time

import numpy as np
import torch

import gpusync as gs

print("torch threads", torch.get_num_threads(), "cpus", os.cpu_count(), flush=True)
random.seed(1)


def with_tasks(f, k):
    def g():
        os.environ["GPUSYNC_CPU_TASKS"] = str(k)
        try:
            return f()
        finally:
            os.environ.pop("GPUSYNC_CPU_TASKS", None)
    return g


def med7(f):
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


SIZES = tuple(int(float(v)) for v in os.environ.get("GS_PROBE_N", "31622777,1e8").split(","))
for n in SIZES:
    rng = np.random.default_rng(0)
    x, y = rng.random(n), rng.random(n)
    x32 = x.astype(np.float32)
    tx, ty, t32 = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(x32)
    fns = {}
    for k in (1, 2, 4):
        fns[f"gs.dot f64 k{k}"] = with_tasks(lambda: gs.dot(x, y), k)
        fns[f"gs.sum f64 k{k}"] = with_tasks(lambda: gs.sum(x), k)
        fns[f"gs.sum f32 k{k}"] = with_tasks(lambda: gs.sum(x32), k)
    y32 = y.astype(np.float32)
    ty32 = torch.from_numpy(y32)
    fns["gs.dot f32 k4"] = with_tasks(lambda: gs.dot(x32, y32), 4)
    fns.update({"np.dot f64": lambda: np.dot(x, y), "torch.dot f64": lambda: torch.dot(tx, ty),
                "torch.sum f64": lambda: tx.sum(), "torch.sum f32": lambda: t32.sum(),
                "torch.dot f32": lambda: torch.dot(t32, ty32)})
    with gs.use_backend("cpu"):
        for mode in ("idle", "stretch"):
            res = {k: [] for k in fns}
            for _ in range(4):
                ks = list(fns)
                random.shuffle(ks)
                for k in ks:
                    if mode == "idle":
                        time.sleep(0.3)
                    fns[k]()
                    res[k].append(med7(fns[k]))
            print(f"n={n:,} {mode}: median of 4 rounds' medians (ms), then the rounds")
            for k in sorted(res):
                rs = res[k]
                byt = n * (4 if "f32" in k else 8) * (2 if "dot" in k else 1)
                print(f"  {k:16s} {statistics.median(rs):8.3f}   {' '.join(f'{v:7.3f}' for v in rs)}   "
                      f"best {byt / min(rs) / 1e6:5.0f} GB/s", flush=True)
