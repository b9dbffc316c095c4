"""Per-call time of a 5.7 MB device-array histogram by strategy (20 back-to-back
calls, CUDA events), the strategy auto resolves to, and where the Python time
goes (cProfile, also saved as <out>/auto_probe.prof).

    python -m benchmarks.probes.auto_probe [--out DIR]     (on a GPU machine)
"""
import argparse
import cProfile
import os
import pstats

import cupy as cp

import gpusync as gs
from benchmarks.histogram import seed_text_host
from benchmarks.common import Timer

ap = argparse.ArgumentParser(prog="python -m benchmarks.probes.auto_probe")
ap.add_argument("--out", default=os.environ.get("OUT", "probe-out"), help="folder for the profile (default: $OUT, else ./probe-out)")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
x = cp.asarray(seed_text_host()); cp.cuda.Device().synchronize()
timer = Timer(cp)
for rnd in range(2):
    for s in ("auto", "shared", "warp", "auto"):
        fn = lambda s=s: gs.histogram(x, bins=128, range=(0, 128), strategy=s)
        fn()
        print(rnd, s, "%.4f ms" % timer.gpu(fn, reps=20, inner=20), flush=True)
os.environ["GPUSYNC_DEBUG"] = "1"
gs.histogram(x, bins=128, range=(0, 128), strategy="auto")
gs.histogram(x, bins=128, range=(0, 128), strategy="shared")
del os.environ["GPUSYNC_DEBUG"]
prof = os.path.join(args.out, "auto_probe.prof")
cProfile.run("for _ in range(300): gs.histogram(x, bins=128, range=(0, 128))", prof)
pstats.Stats(prof).sort_stats("tottime").print_stats(8)
