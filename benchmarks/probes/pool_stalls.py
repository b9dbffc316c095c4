"""How often a CPU-engine call stalls on a host whose cores the hypervisor takes back (steal time).

Runs gs.cumsum of 4M int32 (the demo tour's row) back to back for `seconds`, on the engine the model picks
and, in a second process, on the calling thread alone (GPUSYNC_ENGINE=caller), and prints the median,
99th percentile and maximum wall time, the calls over 20 ms, and the steal jiffies /proc/stat counted
meanwhile.  Usage: python3 benchmarks/probes/pool_stalls.py [seconds]"""
import os
import subprocess
import sys
import time

import numpy as np


def steal():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def one(seconds):
    import gpusync as gs

    a = np.random.default_rng(0).integers(-1000, 1000, 1 << 22).astype(np.int32)
    for _ in range(3):
        gs.cumsum(a)
    s0, r, end = steal(), [], time.time() + seconds
    while time.time() < end:
        t0 = time.perf_counter()
        gs.cumsum(a)
        r.append((time.perf_counter() - t0) * 1e3)
    r.sort()
    plan = gs.last_plan()
    print(f"engine {plan['engine']} ({plan['threads']} threads): {len(r)} calls, median {r[len(r) // 2]:.1f} ms, "
          f"p99 {r[int(len(r) * 0.99)]:.1f}, max {r[-1]:.1f}, over 20 ms {sum(x > 20 for x in r)}; "
          f"steal {steal() - s0} jiffies", flush=True)


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 8
    if os.environ.get("_POOL_STALLS_CHILD"):
        one(secs)
    else:
        for eng in ("auto", "caller", "auto"):
            env = dict(os.environ, _POOL_STALLS_CHILD="1", GPUSYNC_CALIBRATE="off", GPUSYNC_ENGINE=eng)
            subprocess.run([sys.executable, __file__, str(secs)], env=env, check=True)
