"""One process of the CPU engine's prefetch A/B (results/prefetch_ab_H200_r247.txt): gs.sum / gs.dot of NumPy arrays
at 10^4..10^8 on a CPU-only build, one line a cell: label n op median-ms GB/s threads.

Builds differ by -D flags to csrc/cpu/reduce.c's PW_PF_* macros, e.g.
  CFLAGS="-DPW_PF_DOT=0" GPUSYNC_NO_CUDA=1 python3 setup.py build_ext --inplace   (in a copy of the tree)
  PYTHONPATH=<copy> python3 benchmarks/probes/prefetch_ab.py B
"""
import sys, time, numpy as np, gpusync as gs
lab = sys.argv[1]
rng = np.random.default_rng(0)
out = []
for n in (10_000, 100_000, 1_000_000, 10_000_000, 100_000_000):
    x = rng.random(n); y = rng.random(n)
    x32 = x.astype(np.float32); y32 = y.astype(np.float32)
    for name, f, b in (("sum-f64", lambda: gs.sum(x), 8 * n), ("sum-f32", lambda: gs.sum(x32), 4 * n),
                       ("dot-f64", lambda: gs.dot(x, y), 16 * n), ("dot-f32", lambda: gs.dot(x32, y32), 8 * n)):
        f(); f(); ts = []; t_end = time.perf_counter() + (0.25 if n < 1e8 else 0.5)
        while len(ts) < 5 or (time.perf_counter() < t_end and len(ts) < 3000):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        m = float(np.median(ts)); thr = gs.last_plan()["threads"]
        out.append(f"{lab} {n} {name} {m*1e3:.4f} {b/m/1e9:.1f} {thr}")
    del x, y, x32, y32
print("\n".join(out), flush=True)
