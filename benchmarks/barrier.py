"""Grid-barrier benchmark: latency per barrier of every strategy at 1 block
per SM, 2 per SM and the co-resident maximum, and kernel relaunch in a
stream and in a CUDA graph, in one run on one GPU.

    python benchmarks/barrier.py [--out benchmarks/results] [--rounds N]

Writes <out>/latest.json (op barrier; other rows kept) and <out>/barrier.md.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import merge_results  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds = 2000 if args.quick else args.rounds
    gs.use_backend("cuda")
    info = gs.device_info()
    sms = info["multiprocessors"]
    rows = []
    for s in ("cooperative", "lock", "lockfree", "sense"):
        maxb = gs.barrier_benchmark(s, rounds=1)["max_blocks"]
        for case, blocks in (("barrier-1perSM", sms), ("barrier-2perSM", 2 * sms), ("barrier-maxresident", maxb)):
            best = min(gs.barrier_benchmark(s, blocks=blocks, rounds=rounds)["us_per_barrier"] for _ in range(3))
            rows.append({"op": "barrier", "case": case, "impl": f"gpusync:{s}", "blocks": blocks, "us": round(best, 3)})
            print(f"  {case:20s} {s:12s} {blocks:5d} blocks {best:7.3f} us", flush=True)
    for case, blocks in (("barrier-1perSM", sms), ("barrier-2perSM", 2 * sms)):
        r = gs.barrier_benchmark("relaunch", blocks=blocks, rounds=min(rounds, 5000))
        rows.append({"op": "barrier", "case": case, "impl": "relaunch:stream", "blocks": blocks,
                     "us": round(r["us_per_barrier"], 3)})
        rows.append({"op": "barrier", "case": case, "impl": "relaunch:graph", "blocks": blocks,
                     "us": round(r["us_per_barrier_graph"], 3)})
        print(f"  {case:20s} relaunch     {blocks:5d} blocks {r['us_per_barrier']:7.3f} us, graph "
              f"{r['us_per_barrier_graph']:7.3f} us", flush=True)
    data = merge_results(args.out, info, rows)
    lines = [f"# Grid barriers: {info['name']}, {data['date']}", "",
             f"Latency per barrier (µs, best of 3 runs of {rounds} verified rounds; 256 threads per block).", "",
             "| case | impl | blocks | µs | vs cooperative |", "|---|---|---:|---:|---:|"]
    coop = {r["case"]: r["us"] for r in rows if r["impl"] == "gpusync:cooperative"}
    for r in rows:
        lines.append(f"| {r['case']} | {r['impl']} | {r['blocks']} | {r['us']:.3f} | "
                     f"{r['us'] / coop.get(r['case'], float('nan')):.2f}x |")
    with open(os.path.join(args.out, "barrier.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
