"""Host sums and dots past the last-level cache: the CPU engine against torch (issue 13's cells at
10^8 float32, where torch.sum / torch.dot read faster than the host's measured read ceiling).

    python -m benchmarks.probes.host_big

Interleaved rounds (a quiet gap before each implementation, so that no other pool's threads still
spin); per round the median of a few back-to-back calls; the table gives the median over rounds and
the GB/s it reads.  Two sizes per case: one that the 300 MiB L3 holds a part of between calls
(10^8 float32 dot: 800 MB) and one whose reuse is negligible (4 GB), which tells a faster read of
memory from a larger share of hits in the cache."""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import gpusync as gs  # noqa: E402
from gpusync import _calibrate  # noqa: E402
from benchmarks.probes import block as _block  # noqa: E402


def block(fn, calls=5):
    return _block(fn, calls) * 1e3  # ms


try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

CASES = [("dot", np.float32, 100_000_000), ("dot", np.float32, 500_000_000),
         ("sum", np.float32, 100_000_000), ("sum", np.float32, 1_000_000_000),
         ("dot", np.float64, 50_000_000), ("dot", np.float64, 250_000_000)]


def main():
    cores = os.cpu_count() or 1
    print(f"{cores} cores; torch threads {torch.get_num_threads() if torch else '-'}; ms per call")
    for op, dt, n in CASES:
        rng = np.random.default_rng(0)
        a = rng.random(n, dtype=dt)
        b = rng.random(n, dtype=dt) if op == "dot" else None
        nbytes = a.nbytes * (2 if b is not None else 1)
        impls = {}
        for t in sorted({cores, cores * 3 // 4, cores // 2}):
            def run(t=t):
                with _calibrate._forced("cpu", t):
                    return gs.dot(a, b) if b is not None else gs.sum(a)
            impls[f"gs cpu T={t}"] = run
        if b is not None:
            impls["gs cpu: sum(a) + sum(b)"] = lambda: (gs.sum(a), gs.sum(b))
        if torch is not None:
            ta = torch.from_numpy(a)
            tb = torch.from_numpy(b) if b is not None else None
            impls["torch"] = (lambda: torch.dot(ta, tb)) if tb is not None else (lambda: torch.sum(ta))
        if dt == np.float64 and b is not None:
            impls["numpy"] = lambda: np.dot(a, b)
        res = {k: [] for k in impls}
        for _ in range(5):
            for k, fn in impls.items():
                time.sleep(0.3)
                res[k].append(block(fn))
        print(f"== {op} {np.dtype(dt).name} n={n} ({nbytes / 1e9:.2f} GB)")
        for k, v in res.items():
            m = statistics.median(v)
            print(f"  {k:28s} {m:9.3f} ms  {nbytes / m / 1e6:7.1f} GB/s   (rounds {min(v):.3f}..{max(v):.3f})")
        del a, b


if __name__ == "__main__":
    main()
