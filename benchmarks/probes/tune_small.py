"""Sweep replicas x grid for small u8 histograms (device time, graph replay):
benchmarks/results/tune_small.txt.

    python -m benchmarks.probes.tune_small     (on a GPU machine)
"""
import os

import cupy as cp
import numpy as np

import gpusync as gs
from benchmarks.histogram import Timer, seed_text_host

gs.use_backend("cuda")
timer = Timer(cp)
for n in (1 << 20, 5_700_000, 1 << 25):
    t = cp.asarray(np.resize(seed_text_host(), n))
    for grid in ("", "66", "132"):
        row = []
        for r in ("32", "16", "8", "4", "1"):
            os.environ["GPUSYNC_HIST_REPLICAS"] = r
            os.environ["GPUSYNC_HIST_GRID"] = grid
            if not grid:
                del os.environ["GPUSYNC_HIST_GRID"]
            us = 1e3 * timer.graph(lambda: gs.histogram(t, bins=128, range=(0, 128)), reps=15)
            row.append(f"R{r}:{us:6.2f}")
        print(f"n={n:>9} grid={grid or 'auto':>4} " + " ".join(row), flush=True)
    os.environ.pop("GPUSYNC_HIST_GRID", None)
    # the pieces: output memset alone and edges kernel alone are part of the graph above
