"""Quick wall-time probe of the host-staged target cases (one process, so
environment knobs read once -- e.g. GPUSYNC_POOL_KEEP_MB -- can be compared
across runs), and of the same text histogram from pinned memory (direct DMA,
no staging) and from a device array: how far staging is from its floor.

    python -m benchmarks.probes.host_probe     (on a GPU machine)
"""
import sys

import numpy as np

import gpusync as gs
from benchmarks.histogram import seed_text_host
from benchmarks.host import wall_ms


t = seed_text_host()
a = np.random.default_rng(0).integers(0, 256, 256 << 20, dtype=np.uint8)
print(f"text 5.7M {wall_ms(lambda: gs.histogram(t, bins=128, range=(0, 128)), 31):.3f} ms, "
      f"u8 bincount 256M {wall_ms(lambda: gs.bincount(a, minlength=256), 9):.3f} ms")
try:
    import cupy as cp
    import cupyx
except ImportError:
    sys.exit(0)
p = cupyx.empty_pinned(t.shape, t.dtype)
p[:] = t
d = cp.asarray(t)
print(f"text from pinned memory (direct DMA) {wall_ms(lambda: gs.histogram(p, bins=128, range=(0, 128)), 31):.3f} ms, "
      f"device array {wall_ms(lambda: (gs.histogram(d, bins=128, range=(0, 128)), cp.cuda.Device().synchronize()), 31):.3f} ms, "
      f"1000 bytes {wall_ms(lambda: gs.histogram(t[:1000], bins=128, range=(0, 128)), 31):.3f} ms")
