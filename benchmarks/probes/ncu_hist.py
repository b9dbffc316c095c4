"""One launch of each histogram case that falls short of the read ceiling, for
`ncu` (scripts/gpu-check.sh runs it with the SpeedOfLight section):

    ncu --section SpeedOfLight -k regex:hist_ python -m benchmarks.probes.ncu_hist
"""
import cupy as cp

import gpusync as gs

gs.use_backend("cuda")
f = cp.random.random(1 << 28, dtype=cp.float32)
i = cp.random.randint(0, 65536, 1 << 28, dtype=cp.int32)
t = cp.random.randint(0, 128, 5_700_000, dtype=cp.uint8)
cp.cuda.Device().synchronize()
gs.histogram(f, bins=100, range=(0, 1))           # shared, float32 path
gs.bincount(i, minlength=65536)                  # cluster
gs.histogram(t, bins=128, range=(0, 128))        # small: launch-bound
cp.cuda.Device().synchronize()
