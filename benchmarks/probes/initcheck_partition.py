"""The many-bin partition (hist_global.cu) on small inputs for compute-sanitizer's initcheck: forced digit widths
10, 12 and 14 (GPUSYNC_HIST_PART), values outside the bins, one value, sorted values, and bincount; every count
checked against NumPy.

    GPUSYNC_CALIBRATE=off compute-sanitizer --tool initcheck --error-exitcode 9 \
        python3 benchmarks/probes/initcheck_partition.py

Run it without --kernel-name: under a filter, initcheck does not see the other kernels' writes (the zeroing, the
one pass, CuPy's) and reports their outputs as uninitialized.  GPUSYNC_CALIBRATE=off skips the quick
calibration's GPU curve, which takes minutes under the tool."""
import os
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import gpusync as gs  # noqa: E402

rng = np.random.default_rng(5)
CASES = ((10, 65_536, 300_001), (14, 65_536, 300_001), (12, 1_000_003, 1_100_007), (14, 1 << 22, (1 << 22) + 5))
for lb, nb, n in CASES:
    os.environ["GPUSYNC_HIST_PART"] = str(lb)
    for x in (rng.integers(-9, nb + 7, n), np.full(n, 5), np.sort(rng.integers(0, nb, n))):
        got = gs.histogram(cp.asarray(x), bins=nb, range=(0, nb), strategy="global")[0].get()
        ref = np.histogram(x, bins=nb, range=(0, nb))[0]  # (x == nb: the last bin)
        assert (got == ref).all(), (lb, nb, n)
    print("ok", lb, nb, n, flush=True)
os.environ.pop("GPUSYNC_HIST_PART")
x = rng.integers(0, 700_000, 4_000_003)
os.environ["GPUSYNC_HIST_PART"] = "13"
assert (gs.bincount(cp.asarray(x)).get() == np.bincount(x)).all()
print("ok bincount")
