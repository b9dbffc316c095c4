"""Host streaming at 10^8 elements: gs.dot / gs.sum with the CPU pool capped at 8 / 12 / 15 / 16 threads
(GPUSYNC_NUM_THREADS, read per call) against np.dot, torch.dot, torch.sum and np.sum, in four rounds of
shuffled order in one process (0.2 s idle before each implementation: the other pools park), median of 7
calls each.  results/host_threads_H100_r249.txt."""
import os, random, time, numpy as np, torch, gpusync as gs
print("torch threads", torch.get_num_threads(), "cpus", os.cpu_count(), flush=True)
rng = np.random.default_rng(0); random.seed(1)
n = 100_000_000
x = rng.random(n); y = rng.random(n); x32 = x.astype(np.float32)
tx, ty, t32 = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(x32)
def capped(f, k):
    def g():
        os.environ["GPUSYNC_NUM_THREADS"] = str(k)
        try: return f()
        finally: os.environ.pop("GPUSYNC_NUM_THREADS", None)
    return g
fns = {}
for k in (8, 12, 15, 16):
    fns[f"gs.dot f64 t{k}"] = capped(lambda: gs.dot(x, y), k)
    fns[f"gs.sum f64 t{k}"] = capped(lambda: gs.sum(x), k)
    fns[f"gs.sum f32 t{k}"] = capped(lambda: gs.sum(x32), k)
fns.update({"np.dot f64": lambda: np.dot(x, y), "torch.dot f64": lambda: torch.dot(tx, ty),
            "torch.sum f64": lambda: tx.sum(), "torch.sum f32": lambda: t32.sum(), "np.sum f64": lambda: x.sum()})
res = {k: [] for k in fns}; thr = {}
with gs.use_backend("cpu"):
    for rnd in range(4):
        ks = list(fns); random.shuffle(ks)
        for k in ks:
            f = fns[k]; time.sleep(0.2); f()
            if k.startswith("gs"): thr[k] = gs.last_plan()["threads"]
            ts = []
            for _ in range(7):
                t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
            res[k].append(np.median(ts) * 1e3)
for k in sorted(res):
    b = (2 if "dot" in k else 1) * n * (4 if "f32" in k else 8)
    print(f"{k:18s} thr {thr.get(k, '-'):>3} ms " + " ".join(f"{t:7.3f}" for t in res[k]) + f"   median {np.median(res[k]):7.3f}  best {b / min(res[k]) / 1e6:.0f} GB/s", flush=True)
