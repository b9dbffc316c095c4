"""Where a host dot's time goes on this machine's CPU (issue 13: the
memory-bound host dots behind torch.dot at 10^6..10^7 elements).

    python -m benchmarks.probes.host_dot

For float32 and float64 NumPy inputs of a few sizes: the wall time per call
(median of rounds, interleaved) of gs.dot with the engine the model picks
(and the threads its plan names), of the CPU engine forced to T threads
(_core.cpu_threads), of NumPy and of torch.dot (its own thread count), and
of gs.sum over the same bytes (the read alone)."""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import gpusync as gs  # noqa: E402
from gpusync import _core  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def timeit(fn, reps):
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps * 1e6


def forced(t, fn):
    """fn on the CPU engine with T threads: the dispatcher's override (calibrate's own, _calibrate._forced;
    the C fast path steps aside on this thread, so these rows pay the general path's few microseconds)."""
    from gpusync import _calibrate

    def run():
        with _calibrate._forced("cpu", t):
            return fn()
    return run


def in_cache_rates():
    """One thread on inputs that sit in L1/L2 (64 KiB a stream): elements per ns of the CPU engine's
    sum and dot against NumPy's -- the engine's loops at their compute limit (which clone runs)."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "")
    except OSError:
        pass
    have = [x for x in ("avx2", "fma", "avx512f", "avx512vl") if f" {x}" in flags]
    print(f"CPU flags: {' '.join(have) or '(none of avx2 fma avx512f)'}")
    for dt in (np.float32, np.float64):
        n = 16384 if dt == np.float32 else 8192
        a = np.random.default_rng(1).random(n).astype(dt)
        b = np.random.default_rng(2).random(n).astype(dt)
        out = np.empty(1, np.float64)
        rows = {
            "engine sum": lambda: _core.reduce("cpu", a, None, out, "two-pass", False, 0),
            "engine dot": lambda: _core.reduce("cpu", a, b, out, "two-pass", False, 0),
            "numpy sum": lambda: np.add.reduce(a),
            "numpy dot": lambda: np.dot(a, b),
        }
        for k, fn in rows.items():
            t = min(forced(1, lambda: timeit(fn, 2000))() for _ in range(5))
            print(f"  {np.dtype(dt).name:8s} {k:12s} n={n}: {n / (t * 1e3):6.2f} elements/ns ({t:.2f} us)")


def main():
    in_cache_rates()
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, 4, 8, 12, 16, cores} & set(range(1, cores + 1)))
    print(f"{cores} cores; torch threads {torch.get_num_threads() if torch else '-'}; us per call (median of 7 rounds)")
    for dt in (np.float32, np.float64):
        for n in (1_000_000, 3_162_278, 10_000_000):
            rng = np.random.default_rng(0)
            a = rng.random(n).astype(dt)
            b = rng.random(n).astype(dt)
            gs.dot(a, b)
            plan = gs.last_plan()
            cases = {"gs.dot (auto)": lambda: gs.dot(a, b), "numpy": lambda: np.dot(a, b)}
            with gs.use_backend("cpu"):
                for t in counts:
                    cases[f"gs.dot cpu T={t}"] = forced(t, lambda: gs.dot(a, b))
                cases[f"gs.sum cpu T={cores} (a and b: the read)"] = forced(cores, lambda: (gs.sum(a), gs.sum(b)))
                res = {k: [] for k in cases}
                if torch is not None:
                    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                    cases["torch.dot"] = lambda: torch.dot(ta, tb)
                    res["torch.dot"] = []
                reps = max(5, int(2e5 / (n / 1e3)))
                for _ in range(7):
                    for k, fn in cases.items():
                        res[k].append(timeit(fn, reps))
            print(f"== {np.dtype(dt).name} n={n} ({2 * a.nbytes / 1e6:.1f} MB): auto ran {plan.get('engine')} "
                  f"threads={plan.get('threads')} predicted={plan.get('predicted_ms')}")
            for k, v in res.items():
                print(f"  {k:44s} {statistics.median(v):10.1f} {min(v):10.1f}")


if __name__ == "__main__":
    main()
