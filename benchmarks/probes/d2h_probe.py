"""The host cumsum (staged in and out) under the device->host staging knobs,
against first-touch writes of 512 MB on this host and CuPy's .get().

    python -m benchmarks.probes.d2h_probe      (on a GPU machine)
"""
import os
import time

import numpy as np

import gpusync as gs
from benchmarks.host import wall_ms


def w(fn):
    return wall_ms(fn, 5)


c = np.random.default_rng(0).integers(-100, 100, 64 << 20, dtype=np.int32)
t = time.perf_counter(); z = np.empty(64 << 20, np.int64); z[:] = 1; print("first touch 512MB single thread %.1f ms" % (1e3 * (time.perf_counter() - t)))
t = time.perf_counter(); z[:] = 2; print("second write 512MB %.1f ms" % (1e3 * (time.perf_counter() - t)))
print(open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip())
for env in ({}, {"GPUSYNC_STAGE_D2H_SPLIT": "2"}, {"GPUSYNC_STAGE_D2H_SPLIT": "8"}, {"GPUSYNC_STAGE_UNITS": "64"}, {"GPUSYNC_NO_STAGING": "1"}):
    os.environ.update(env)
    print(env, "cumsum %.2f ms" % w(lambda: gs.cumsum(c)))
    for k in env: del os.environ[k]
import cupy as cp
d = cp.asarray(c.astype(np.int64))
print("cupy get 512MB %.2f ms" % w(lambda: d.get()))
