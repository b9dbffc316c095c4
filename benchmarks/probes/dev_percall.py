"""Where a device call's wall time goes (issue 13: a device histogram with
`bins` and `range` given <= 25 us per call, never behind torch.histc).

    python -m benchmarks.probes.dev_percall

For CuPy float64 inputs of a few sizes: the synchronized wall time per call
(median and min of interleaved rounds) of the public call, its peers, and the
pieces of gpusync's device fast path -- the plan lookup, the two output
allocations, the C call with outputs made beforehand, an empty sync -- each
alone, so that the difference between two rows is one piece's cost.  Rows
marked 'enqueue' do not synchronize: the host's own cost of the call; rows
marked '[fuse off]' run with GPUSYNC_HIST_ONE_LAUNCH=0 (the zeroing kernel
ahead of the count), interleaved with the others in the same process."""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402
from gpusync import _arrays, _core, _devfast, _histogram  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


FUSE_OFF = " [fuse off]"


def rounds(cases, reps=400, rounds_=7):
    """Interleaved: each round runs every case `reps` times; per case the
    median and min over rounds of the per-call mean (us)."""
    res = {k: [] for k in cases}
    for _ in range(rounds_):
        for k, (fn, sync) in cases.items():
            if k.endswith(FUSE_OFF):  # the same call with the one-launch histogram off (in-process A/B)
                os.environ["GPUSYNC_HIST_ONE_LAUNCH"] = "0"
            else:
                os.environ.pop("GPUSYNC_HIST_ONE_LAUNCH", None)
            fn()
            if sync:
                sync()
            t = time.perf_counter()
            for _ in range(reps):
                fn()
                if sync:
                    sync()
            if not sync:
                cp.cuda.Device().synchronize()
            res[k].append((time.perf_counter() - t) / reps * 1e6)
    return {k: (statistics.median(v), min(v)) for k, v in res.items()}


def _two_from_one(cp):
    m = cp.cuda.alloc(1616)
    return cp.ndarray((100,), np.int64, m), cp.ndarray((101,), np.float64, m + 800)


def main():
    sync = cp.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    for n in (100, 10_000, 31_623, 100_000, 1_000_000):
        a = cp.asarray(rng.random(n))
        t = torch.as_tensor(a, device="cuda") if torch else None
        gs.histogram(a, 100, (0.0, 1.0))
        hit = _histogram._fast_plans.get((np.dtype(np.float64), 100, float, 0.0, float, 1.0))
        h, (ptr, nn, dt, code, dev) = _devfast._ready(a)
        counts = cp.empty(100, np.int64)
        edges = cp.empty(101, np.float64)
        cdesc = (counts.data.ptr, 100, 1, _arrays._DTYPE_CODES[np.dtype(np.int64)], dev)
        edesc = (edges.data.ptr, 101, 1, _arrays._DTYPE_CODES[np.dtype(np.float64)], dev)
        stream = h.stream(dev)
        cases = {
            "sync alone": (lambda: None, sync),
            "cupy sum": (lambda: a.sum(), sync),
            "gs.sum": (lambda: gs.sum(a), sync),
            "gs.histogram": (lambda: gs.histogram(a, 100, (0.0, 1.0)), sync),
            "gs.histogram enqueue": (lambda: gs.histogram(a, 100, (0.0, 1.0)), None),
            "devfast.histogram_": (lambda: _devfast.histogram_(_histogram._fast_plans, a, 100, (0.0, 1.0)), sync),
            "_ready": (lambda: _devfast._ready(a), None),
            "two h.out": (lambda: (h.out((100,), np.dtype(np.int64), dev), h.out((101,), np.dtype(np.float64), dev)), None),
            "core.histogram": (lambda: _core.histogram("cuda", (ptr, n, 1, code, dev), None, cdesc, hit[1], "auto",
                                                       stream, edesc), sync),
            "core.histogram enqueue": (lambda: _core.histogram("cuda", (ptr, n, 1, code, dev), None, cdesc, hit[1],
                                                               "auto", stream, edesc), None),
            "core.sum enqueue": (lambda: gs.sum(a), None),
            "gs.histogram" + FUSE_OFF: (lambda: gs.histogram(a, 100, (0.0, 1.0)), sync),
            "core.histogram enqueue" + FUSE_OFF: (lambda: _core.histogram("cuda", (ptr, n, 1, code, dev), None, cdesc,
                                                                          hit[1], "auto", stream, edesc), None),
            "cp.empty": (lambda: cp.empty(100, np.int64), None),
            "cp.ndarray": (lambda: cp.ndarray((100,), np.int64), None),
            "alloc + 2 ndarray": (lambda: _two_from_one(cp), None),
        }
        if torch is not None:
            cases["torch.histc"] = (lambda: torch.histc(t, 100, 0.0, 1.0), sync)
            cases["torch.histc enqueue"] = (lambda: torch.histc(t, 100, 0.0, 1.0), None)
            cases["torch.sum"] = (lambda: t.sum(), sync)
            tdev = torch.device("cuda")
            cases["torch.empty x2"] = (lambda: (torch.empty(100, dtype=torch.int64, device=tdev),
                                                torch.empty(101, dtype=torch.float64, device=tdev)), None)
        res = rounds(cases)
        print(f"\n== n={n} float64 CuPy, 100 bins, range given (us per call: median / min of 7 rounds)")
        for k, (md, mn) in res.items():
            print(f"  {k:28s} {md:8.2f} {mn:8.2f}")


if __name__ == "__main__":
    main()
