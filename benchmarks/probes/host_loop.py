"""Host (NumPy) calls in a loop against lone calls: what the CPU pool's state costs.

    python -m benchmarks.probes.host_loop [--quick]

For each op and size: gs in a loop (back-to-back calls, nothing between
them: median us), the threads the loop's last call ran on, gs alone (a 2 ms
pause before each call: the pool's workers parked; median), and NumPy's loop
and lone calls (a pause costs any call: caches and clocks).  Also prints the
pool's measured hand-offs and the C fast path's limits (docs/dispatch.md,
"the C fast path").  Session 46 measured two ways to meet the pool warm more
often with it, both dropped (results/host_loop_H200_r226_r229_H100_r230.txt)."""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import gpusync as gs  # noqa: E402
from gpusync import _core, _dispatch  # noqa: E402


def loop_us(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


def lone_us(fn, reps):
    ts = []
    for _ in range(reps):
        time.sleep(0.002)
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


def cases(n, rng):
    f64 = rng.standard_normal(n)
    f32 = f64.astype(np.float32)
    g32 = rng.standard_normal(n).astype(np.float32)
    i64 = rng.integers(0, 1000, n)
    u8 = rng.integers(0, 256, n).astype(np.uint8)
    return [
        ("sum f32", lambda: gs.sum(f32), lambda: np.sum(f32)),
        ("sum f64", lambda: gs.sum(f64), lambda: np.sum(f64)),
        ("dot f32 x.y", lambda: gs.dot(f32, g32), lambda: np.dot(f32, g32)),
        ("dot f32 x.x", lambda: gs.dot(f32, f32), lambda: np.dot(f32, f32)),
        ("dot f64", lambda: gs.dot(f64, f64), lambda: np.dot(f64, f64)),
        ("count_nonzero u8", lambda: gs.count_nonzero(u8), lambda: np.count_nonzero(u8)),
        ("histogram f64 100", lambda: gs.histogram(f64, 100, range=(-4, 4)), lambda: np.histogram(f64, 100, (-4, 4))),
        ("bincount i64", lambda: gs.bincount(i64), lambda: np.bincount(i64)),
    ]


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    gs.sum(np.ones(3))  # the constants (the quick calibration) and the fast paths' limits
    m = _dispatch.machine()
    print(f"cores {m.cores}; pool hand-off parked {m.handoff * 1e6:.1f} us, spinning {m.handoff_warm * 1e6:.2f} us "
          f"(model); C pool: all threads parked {_core.cpu_threads_for(1 << 40, 1.0)[1] / 1e3:.1f} us")
    allowed = _dispatch._allowed(None)[0]
    print("caller limits (calling thread alone up to, fast path up to): "
          + ", ".join(f"{op} {_dispatch._fast_limits(m, op, allowed)[:2]}" for op in _core.fast_config(None)))
    sizes = [10_000, 100_000, 1_000_000] if quick else [1_000, 3_162, 10_000, 31_623, 100_000, 316_228, 1_000_000,
                                                          3_162_278]
    print("| op | n | gs loop us (threads) | gs lone us | NumPy loop us | NumPy lone us | NumPy / gs loop |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        reps = max(20, min(400, 20_000_000 // (n * 8)))
        for name, ours, theirs in cases(n, rng):
            a = loop_us(ours, reps)
            threads = gs.last_plan()["threads"]
            b = lone_us(ours, max(10, reps // 10))
            c = loop_us(theirs, reps)
            d = lone_us(theirs, max(10, reps // 10))
            print(f"| {name} | {n:,} | {a:.1f} ({threads}) | {b:.1f} | {c:.1f} | {d:.1f} | {c / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
