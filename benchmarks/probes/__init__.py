"""One-off measurements behind a tuning decision or a note in the docs, kept
so that they can be repeated.  Run each from the repository root on a GPU
machine, e.g. ``python -m benchmarks.probes.host_probe``; none writes outside
its ``--out`` folder (only auto_probe writes at all)."""

import statistics as _statistics
import time as _time


def block(fn, calls=5):
    """The median seconds of `calls` back-to-back calls of fn, after one
    unmeasured call (the host probes' timing loop)."""
    fn()
    ts = []
    for _ in range(calls):
        t = _time.perf_counter()
        fn()
        ts.append(_time.perf_counter() - t)
    return _statistics.median(ts)
