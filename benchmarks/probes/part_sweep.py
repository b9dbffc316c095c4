"""The partition of many-bin counts (hist_global.cu, GS_HIST_PART_*): its digit
width lb against the global atomics' plans, over sizes and bin counts, to set
the rule for lb and the smallest input it takes (GS_HIST_PART_MIN_N).

    python -m benchmarks.probes.part_sweep [--quick] [--sorted]

CuPy int64 values, unit bins past what auto gives the 16-bit halves (auto:
the global strategy, through the device fast path -- an explicit strategy
takes the general path, whose host work grows with the bins); us per call
from CUDA events around back-to-back calls (median of 5 rounds), every route
checked against the one pass; torch.bincount beside it (minlength: the same
bins)."""
import os
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import gpusync as gs  # noqa: E402
from benchmarks.probes.mid_bins import timed as timed_ms  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def timed(fn, reps):
    """us per call: mid_bins.timed's events around back-to-back calls (median of 5 rounds)."""
    return timed_ms(fn, reps) * 1000


def routes(nb):
    yield "one pass", {"GPUSYNC_HIST_PART": "0", "GPUSYNC_HIST_GLOBAL_L2": "0"}
    yield "plan", {"GPUSYNC_HIST_PART": "0"}
    for lb in range(10, 15):
        if -(-nb // (1 << lb)) <= 1024:
            yield f"lb {lb}", {"GPUSYNC_HIST_PART": str(lb)}
    yield "rule", {}


def main():
    quick = "--quick" in sys.argv
    print(f"{gs.device_info()['name']}: int64, unit bins, strategy auto (global), us per call")
    sizes = [1 << 20, 1 << 21, 1 << 22, 1 << 23, 1 << 24, 1 << 26]
    bins = [131_072, 300_000, 1 << 20, 4 << 20, 16 << 20]
    dists = ("uniform", "skewed u^4")
    if quick:
        sizes, bins = [1 << 22, 1 << 26], [1 << 20]
    if "--sorted" in sys.argv:  # sorted values: runs of n / bins equal values
        sizes, bins, dists = [1 << 24, 1 << 26], [1 << 20, 1 << 22, 1 << 24], ("sorted",)
    names = [r for r, _ in routes(1 << 20)] + ["torch"]
    print("| dist | bins | n | " + " | ".join(names) + " | best | rule / best other |")
    print("|---|---:|---:|" + "---:|" * (len(names) + 2))
    for dist in dists:
        for nb in bins:
            for n in sizes:
                if n < nb:  # (the partition wants as many values as bins)
                    continue
                u = cp.random.default_rng(7).random(n)
                x = ((u**4 if dist == "skewed u^4" else u) * nb).astype(cp.int64)
                if dist == "sorted":
                    x = cp.sort(x)
                del u
                reps = max(3, min(50, (1 << 26) // n))
                ref = None
                row = {}
                for name, env in routes(nb):
                    for k in ("GPUSYNC_HIST_PART", "GPUSYNC_HIST_GLOBAL_L2"):
                        os.environ.pop(k, None)
                    os.environ.update(env)
                    h = gs.histogram(x, bins=nb, range=(0, nb), strategy="auto")[0]
                    if ref is None:
                        ref = h
                    assert bool((h == ref).all()), (dist, nb, n, name)
                    row[name] = timed(lambda: gs.histogram(x, bins=nb, range=(0, nb)), reps)
                    if name == "rule":
                        assert gs.last_plan()["strategy_used"] == "global", gs.last_plan()
                for k in ("GPUSYNC_HIST_PART", "GPUSYNC_HIST_GLOBAL_L2"):
                    os.environ.pop(k, None)
                if torch is not None:
                    xt = torch.as_tensor(x, device="cuda")
                    row["torch"] = timed(lambda: torch.bincount(xt, minlength=nb), reps)
                    del xt
                cells = [f"{row[c]:.1f}" if c in row else "-" for c in names]
                others = {k: v for k, v in row.items() if k != "rule"}
                best = min(others, key=others.get)
                print(f"| {dist} | {nb} | {n} | " + " | ".join(cells) +
                      f" | {best} | {row['rule'] / others[best]:.2f} |", flush=True)
                del x, ref, h


if __name__ == "__main__":
    main()
