"""Probe (not run yet: session 30 had no device time left): binned_statistic_2d mean, 32M float32, 64 x 64, one process's time (median of 15) against its arrays' addresses -- run it in several processes (argument: bytes of padding allocated first) to see whether the 0.28-0.35 ms spread of r81-r83 follows where the arrays land."""
import sys, statistics as st
import cupy as cp
import gpusync as gs
pad = int(sys.argv[1]) if len(sys.argv) > 1 else 0
junk = cp.empty(pad, cp.uint8) if pad else None  # shifts where the pool places what follows
rng = cp.random.default_rng(1)
n = 32_000_000
x = rng.random(n, dtype=cp.float32); y = rng.random(n, dtype=cp.float32); v = rng.random(n, dtype=cp.float32)
rg = [[0, 1], [0, 1]]
f = lambda stat: gs.binned_statistic_2d(x, y, v, stat, 64, rg)
r = f("mean"); cp.cuda.runtime.deviceSynchronize()
s, e = cp.cuda.Event(), cp.cuda.Event()
def ev(stat):
    ts = []
    for _ in range(15):
        s.record(); res = f(stat); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return st.median(ts), min(ts), max(ts), res
m = ev("mean"); c = ev("count")
mb = 1 << 20
print(f"pad {pad:>9d}  mean {m[0]:6.1f} (min {m[1]:6.1f} max {m[2]:6.1f})  count {c[0]:6.1f}   x%2M {x.data.ptr % (2*mb):>8d} "
      f"v%2M {v.data.ptr % (2*mb):>8d} bn%2M {m[3].binnumber.data.ptr % (2*mb):>8d} bn {m[3].binnumber.data.ptr:#x}")
