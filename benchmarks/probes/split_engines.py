"""The engines of large host histograms and sums: what auto chose and predicted, against each engine forced
(cuda, the CPU pool on 16 threads, both at once).  python3 benchmarks/probes/split_engines.py (after
`python -m gpusync calibrate`).  Results: benchmarks/results/split_H200_r237.txt."""
import os, sys, time, statistics, json
sys.path.insert(0, os.getcwd())
import numpy as np
import gpusync as gs
from gpusync import _calibrate, _dispatch
m = _dispatch.machine()
print("machine:", json.dumps(_calibrate.to_json(m))[:3000])
def med(fn, k=3):
    fn(); ts = []
    for _ in range(k):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3, min(ts) * 1e3
rng = np.random.default_rng(0)
for op, n in (("histogram", 30_000_000), ("histogram", 100_000_000), ("histogram", 300_000_000), ("sum", 300_000_000)):
    a = rng.random(n)
    f = (lambda: gs.histogram(a, 100, (0.0, 1.0))) if op == "histogram" else (lambda: gs.sum(a))
    f(); p = gs.last_plan()
    print(f"== {op} f64 n={n}: auto chose {p['engine']} threads={p['threads']} split={p.get('split')} predicted_ms={ {k: round(v, 2) for k, v in p['predicted_ms'].items()} }")
    print(f"   auto       {med(f)}")
    for eng, t in (("cuda", None), ("cpu", 16), ("cpu+cuda", None), ("cpu+cuda", 12), ("cpu+cuda", 8)):
        def g(eng=eng, t=t):
            with _calibrate._forced(eng, t):
                return f()
        r = med(g)
        g(); q = gs.last_plan()
        print(f"   {eng:9s} T={t}: median/min ms {r[0]:.2f} / {r[1]:.2f}  (threads {q['threads']}, split {q.get('split')}, notes {q.get('notes')})")
    sys.stdout.flush()
