"""Per-call wall time of common host calls against NumPy at one size: python3 benchmarks/percall_host.py N
(a markdown table on stdout; benchmarks/results/percall_host_c-kernels.md)."""
import numpy as np, gpusync as gs, timeit, sys
rng = np.random.default_rng(0)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
f64 = rng.random(n); f32 = f64.astype(np.float32); i64 = rng.integers(0, 100, n); u8 = i64.astype(np.uint8)
w = rng.random(n); m2 = f64.reshape(-1, 10)
cases = [
 ("sum f64", lambda: gs.sum(f64), lambda: np.sum(f64)),
 ("sum f32 dtype=f64", lambda: gs.sum(f32, dtype=np.float64), lambda: np.sum(f32, dtype=np.float64)),
 ("sum i64", lambda: gs.sum(i64), lambda: np.sum(i64)),
 ("sum axis0 (n/10,10)", lambda: gs.sum(m2, axis=0), lambda: np.sum(m2, axis=0)),
 ("count_nonzero axis1", lambda: gs.count_nonzero(m2, axis=1), lambda: np.count_nonzero(m2, axis=1)),
 ("dot f64", lambda: gs.dot(f64, f64), lambda: np.dot(f64, f64)),
 ("dot f32", lambda: gs.dot(f32, f32), lambda: np.dot(f32, f32)),
 ("cumsum f64", lambda: gs.cumsum(f64), lambda: np.cumsum(f64)),
 ("count_nonzero u8", lambda: gs.count_nonzero(u8), lambda: np.count_nonzero(u8)),
 ("packbits u8", lambda: gs.packbits(u8), lambda: np.packbits(u8)),
 ("packbits u8 little", lambda: gs.packbits(u8, bitorder="little"), lambda: np.packbits(u8, bitorder="little")),
 ("unpackbits", lambda: gs.unpackbits(u8), lambda: np.unpackbits(u8)),
 ("bincount i64", lambda: gs.bincount(i64), lambda: np.bincount(i64)),
 ("bincount i64 minlength", lambda: gs.bincount(i64, minlength=200), lambda: np.bincount(i64, minlength=200)),
 ("bincount i64 weights", lambda: gs.bincount(i64, weights=w), lambda: np.bincount(i64, weights=w)),
 ("histogram f64 100 range", lambda: gs.histogram(f64, 100, (0, 1)), lambda: np.histogram(f64, 100, (0, 1))),
 ("histogram f64 10 (range from data)", lambda: gs.histogram(f64), lambda: np.histogram(f64)),
 ("histogram f64 weights", lambda: gs.histogram(f64, 100, (0, 1), weights=w), lambda: np.histogram(f64, 100, (0, 1), weights=w)),
 ("histogram2d 16x16", lambda: gs.histogram2d(f64, w, 16, [[0, 1], [0, 1]]), lambda: np.histogram2d(f64, w, 16, [[0, 1], [0, 1]])),
]
print(f"n={n}: wall us per call (best of 7 x 2000), this host")
print("| call | gpusync | NumPy | NumPy / gpusync |\n|---|---:|---:|---:|")
for name, g, nf in cases:
    g(); nf()
    tg = min(timeit.repeat(g, number=2000, repeat=7)) / 2000 * 1e6
    tn = min(timeit.repeat(nf, number=2000, repeat=7)) / 2000 * 1e6
    print(f"| {name} | {tg:.2f} | {tn:.2f} | {tn / tg:.2f} |")
