"""Device uint8 / integer histograms with bins and range given: the plan's direct / lut description carrying its
edges' formula (the counting kernel writes the edges: one C call, one kernel a call) against the plan before
(the count, then a uniform_edges launch of its own), and the byte kernel's plain loads where the input fits the
L2 against evict-first ones (GPUSYNC_HIST_BYTES_STREAM).  Same process, interleaved rounds; CUDA-graph replay of 5
calls (device time, as benchmarks/histogram.py's rows) and wall time of one synchronized call (what a notebook
feels).  A probe behind _histogram._carrying_formula, not part of the package.

    PYTHONPATH=. python3 benchmarks/probes/u8_edges_ab.py
"""
import os
import statistics
import time

import cupy as cp
import numpy as np

import gpusync as gs
from benchmarks.common import Timer
from gpusync import _histogram as H

timer = Timer(cp)
rng = np.random.default_rng(0)
cases = [("u8 256 (0,256)", np.uint8, 256, (0, 256)), ("u8 64 (0,256)", np.uint8, 64, (0, 256)),
         ("u16 4096 (0,4096)", np.uint16, 4096, (0, 4096))]
print(gs.device_info()["name"], flush=True)
for name, dt, bins, rng_ in cases:
    for nbytes in (1 << 20, 32 << 20, 256 << 20):
        n = nbytes // np.dtype(dt).itemsize
        d = cp.asarray(rng.integers(0, rng_[1], n).astype(dt))
        ref = np.histogram(cp.asnumpy(d), bins, rng_)
        gs.histogram(d, bins, rng_)
        key = H._plan_key(d, bins, rng_)
        edges, desc, formula = H._fast_plans[key]
        assert formula is desc, (name, desc[0])
        old = (edges, desc[:5] + (0.0, 0.0, 0.0) + desc[8:10] + (0, 0) + desc[12:], H._edges_formula(edges))
        # before: the edges' own launch and evict-first loads at every size; edges: the edges written by the count;
        # now: that and the byte kernel's plain loads where the input fits the L2 (GPUSYNC_HIST_BYTES_STREAM unset)
        plans = {"now": ((edges, desc, formula), None), "edges": ((edges, desc, formula), "1"), "before": (old, "1")}
        res = {k: ([], []) for k in plans}
        for _ in range(5):
            for k, (p, env) in plans.items():
                H._fast_plans[key] = p
                if env is None:
                    os.environ.pop("GPUSYNC_HIST_BYTES_STREAM", None)
                else:
                    os.environ["GPUSYNC_HIST_BYTES_STREAM"] = env
                c, e = gs.histogram(d, bins, rng_)
                assert np.array_equal(cp.asnumpy(c), ref[0]) and np.array_equal(cp.asnumpy(e), ref[1]), (name, k)
                res[k][0].append(timer.graph(lambda: gs.histogram(d, bins, rng_), reps=7, inner=5) * 1e3)
                ws = []
                for _ in range(21):
                    t0 = time.perf_counter()
                    gs.histogram(d, bins, rng_)
                    cp.cuda.get_current_stream().synchronize()
                    ws.append((time.perf_counter() - t0) * 1e6)
                res[k][1].append(statistics.median(ws))
        H._fast_plans[key] = plans["now"][0]
        os.environ.pop("GPUSYNC_HIST_BYTES_STREAM", None)
        line = f"{name:18s} {nbytes >> 20:4d} MiB"
        for k, (g, w) in res.items():
            line += f" | {k}: graph {statistics.median(g):7.2f} us  wall {statistics.median(w):7.2f} us"
        gb = nbytes / (statistics.median(res['now'][0]) * 1e3)
        print(line + f" | now {gb:6.0f} GB/s (graph)", flush=True)
