"""Grid-barrier benchmark: latency per barrier of every strategy at 1 block
per SM, 2 per SM and the co-resident maximum, and kernel relaunch in a
stream and in a CUDA graph; then cumsum (built on those techniques) of 256 M
float32 and int32 against CUB DeviceScan, CuPy, PyTorch and NumPy and the
copy ceiling measured in the same run -- one run on one GPU.

    python benchmarks/barrier.py [--out benchmarks/results] [--rounds N] [--quick]

Writes <out>/latest.json (ops barrier and cumsum; other rows kept),
<out>/barrier.md and <out>/cumsum.md + cumsum.png.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

import gpusync as gs  # noqa: E402
from benchmarks.common import GIB, Timer, build_peers, copy_ceiling, merge_results, speed_plot  # noqa: E402


def cumsum_rows(quick):
    """cumsum-f32-256M and cumsum-i32-256M (int32 -> int64, NumPy's dtype)."""
    import cupy as cp

    try:
        import torch
    except ImportError:
        torch = None
    timer = Timer(cp)
    n = (64 if quick else 256) << 20
    tag = f"{n >> 20}M"
    src, dst = cp.empty(GIB, cp.uint8), cp.empty(GIB, cp.uint8)
    ceiling = copy_ceiling(cp, timer, src, dst)
    del src, dst
    peers = build_peers()
    rng = np.random.default_rng(0)
    rows = []
    for kind, dt, cub_name, out_bytes in (("f32", np.float32, "cub_scan_f32", 4), ("i32", np.int32, "cub_scan_i32_i64", 8)):
        case = f"cumsum-{kind}-{tag}"
        h = (rng.random(n, np.float32) if kind == "f32" else rng.integers(-1000, 1000, n, dtype=np.int32)).astype(dt)
        d = cp.asarray(h)
        moved = n * (h.itemsize + out_bytes)
        ref = np.cumsum(h.astype(np.float64) if kind == "f32" else h)  # exact enough for f32 (float64 running sum)
        probe = np.array([0, n // 3, n // 2 + 7, n - 1])

        def err(r):
            """Largest relative error at the probes (0 = exact)."""
            got = cp.asnumpy(r[cp.asarray(probe)]).astype(np.float64)
            want = ref[probe].astype(np.float64)
            return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1)))

        def add(impl, ms, rel_err=0.0):
            # float32 running sums drift (NumPy's, CuPy's, PyTorch's): that is accuracy, reported, not
            # "wrong"; wrong is an error no float32 rounding explains (or any error for integers)
            correct = rel_err <= (1e-2 if kind == "f32" else 0)
            rows.append({"op": "cumsum", "case": case, "impl": impl, "ms": round(ms, 4),
                         "gbps": round(moved / ms / 1e6, 1), "rel_err": rel_err, "correct": bool(correct)})
            print(f"  {case:18s} {impl:34s} {ms:8.3f} ms {moved / ms / 1e6:7.0f} GB/s  rel err {rel_err:.1e}"
                  f"{'' if correct else '  WRONG'}", flush=True)

        for s in ("auto", "lookback", "barrier", "relaunch"):
            r = gs.cumsum(d, strategy=s)
            add(f"gpusync:{s}", timer.gpu(lambda s=s, d=d: gs.cumsum(d, strategy=s), reps=10), err(r))
            del r
        last = np.zeros(1, np.float32 if kind == "f32" else np.int64)
        ms = getattr(peers, cub_name)(d.data.ptr, None, n, last.ctypes.data, 10)
        add("cub:DeviceScan::InclusiveSum", ms, abs(float(last[0]) - float(ref[-1])) / max(abs(float(ref[-1])), 1))
        r = cp.cumsum(d)
        add("cupy:cumsum", timer.gpu(lambda d=d: cp.cumsum(d), reps=10), err(r))
        del r
        if torch is not None:
            t = torch.as_tensor(d, device="cuda")
            r = torch.cumsum(t, 0)
            add("torch:cumsum", timer.gpu(lambda: torch.cumsum(t, 0), reps=10), err(cp.asarray(r)))
            del r, t
        hs = h[: n // 4]  # NumPy on a quarter, scaled: a full run takes seconds
        ms = 4 * Timer.host(lambda: np.cumsum(hs), reps=1)
        add("numpy:cumsum (x4 of 1/4)", ms, float(abs(np.cumsum(hs)[-1] - ref[n // 4 - 1]) / max(abs(ref[n // 4 - 1]), 1)))
        del d
        cp.get_default_memory_pool().free_all_blocks()
    return rows, ceiling


SPLIT_KERNEL = r"""
#include <gpusync/barrier.cuh>
extern "C" __global__ void split_bench(unsigned *count, int *error, long long rounds, int work, int mode, float *sink)
{
    unsigned goal = 0;
    float acc = threadIdx.x * 1e-3f;
    for (long long r = 0; r < rounds; r++) {
        if (mode == 1) { /* split: arrive, independent work, wait */
            gpusync::barrier_flat_arrive(count, goal);
            for (int i = 0; i < work; i++)
                acc = fmaf(acc, 0.999f, 0.5f);
            if (!gpusync::barrier_flat_wait(count, goal, error, 2000000000ull))
                return;
        } else if (mode == 0) { /* barrier, then the same work */
            if (!gpusync::barrier_flat(count, goal, error, 2000000000ull))
                return;
            for (int i = 0; i < work; i++)
                acc = fmaf(acc, 0.999f, 0.5f);
        } else { /* the work alone */
            __syncthreads();
            for (int i = 0; i < work; i++)
                acc = fmaf(acc, 0.999f, 0.5f);
        }
    }
    if (acc == 12345.f)
        sink[0] = acc;
}
"""


def split_phase_rows(sms, rounds=20000):
    """The split-phase flat barrier (arrive / work / wait) against barrier-then-work, at 1 block per SM:
    the latency the independent work hides."""
    import cupy as cp

    inc = os.path.join(os.path.dirname(HERE), "csrc", "include")
    k = cp.RawKernel(SPLIT_KERNEL, "split_bench", options=("-I" + inc, "--std=c++17"))
    count, error, sink = cp.zeros(1, cp.uint32), cp.zeros(1, cp.int32), cp.zeros(1, cp.float32)
    rows = []
    for work in (0, 256, 1024):
        us = {}
        for mode, name in ((2, "work only"), (0, "barrier+work"), (1, "split")):
            best = float("inf")
            for _ in range(3):
                count.fill(0)
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                k((sms,), (256,), (count, error, np.int64(rounds), np.int32(work), np.int32(mode), sink))
                e.record()
                e.synchronize()
                best = min(best, cp.cuda.get_elapsed_time(s, e) * 1e3 / rounds)
            if int(error.get()[0]):
                raise RuntimeError("split-phase benchmark: a barrier timed out")
            us[name] = best
            rows.append({"op": "barrier", "case": f"barrier-split-work{work}", "impl": f"gpusync:flat {name}",
                         "blocks": sms, "us": round(best, 3)})
        print(f"  split phase, {work:5d} FMAs: work {us['work only']:.3f} us, barrier+work {us['barrier+work']:.3f} us, "
              f"arrive/work/wait {us['split']:.3f} us: hides {us['barrier+work'] - us['split']:.3f} us per round",
              flush=True)
    return rows


class _env:
    """Set environment variables for a block (the C core reads them at every call)."""

    def __init__(self, **kv):
        self.kv = {k: str(v) for k, v in kv.items() if v is not None}

    def __enter__(self):
        self.old = {k: os.environ.get(k) for k in self.kv}
        os.environ.update(self.kv)

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def _best(s, blocks, rounds, bare=False, **env):
    """Best of 3 runs: (us per barrier, the result of the best run)."""
    with _env(GPUSYNC_BARRIER_VERIFY=0 if bare else None, **env):
        runs = [gs.barrier_benchmark(s, blocks=blocks, rounds=rounds) for _ in range(3)]
    best = min(runs, key=lambda r: r["us_per_barrier"])
    return best["us_per_barrier"], best


STRATEGIES = ("cooperative", "lock", "lockfree", "sense", "flat", "cluster")


def barrier_rows(rounds, sms):
    """Every strategy at 1 and 2 blocks per SM and at its co-resident maximum, verified (every round
    checked) and bare (GPUSYNC_BARRIER_VERIFY=0: the barrier alone; the difference is what the
    verification costs); then the tuning sweep of flat's and cluster's poll loops and cluster sizes."""
    rows = []
    coop_max = gs.barrier_benchmark("cooperative", rounds=1)["max_blocks"]
    gs.barrier_benchmark("cooperative", blocks=coop_max, rounds=100000)  # warm-up: clocks up before the first row

    def add(case, impl, blocks, rounds_, **env):
        us, r = _best(impl.split(":")[1].split("[")[0], blocks, rounds_, **env)
        bare, _ = _best(impl.split(":")[1].split("[")[0], blocks, rounds_, bare=True, **env)
        base = {"op": "barrier", "case": case, "blocks": blocks}
        if r.get("cluster"):
            base["cluster"] = r["cluster"]
        rows.append({**base, "impl": impl, "us": round(us, 3)})
        rows.append({**base, "impl": f"{impl}(bare)", "us": round(bare, 3)})
        cl = f" cluster {r['cluster']:2d}" if r.get("cluster") else ""
        print(f"  {case:20s} {impl:34s} {blocks:5d} blocks{cl} {us:7.3f} us verified, {bare:7.3f} us bare "
              f"(verification {us - bare:+.3f} us)", flush=True)

    for s in STRATEGIES:
        maxb = gs.barrier_benchmark(s, rounds=1)["max_blocks"]
        for case, blocks in (("barrier-1perSM", sms), ("barrier-2perSM", 2 * sms), ("barrier-maxresident", maxb)):
            add(case, f"gpusync:{s}", blocks, rounds)
        if s != "cooperative" and maxb != coop_max and maxb <= coop_max:  # the same grid for the ratio
            add(f"barrier-{maxb}", "gpusync:cooperative", maxb, rounds)
            add(f"barrier-{maxb}", f"gpusync:{s}", maxb, rounds)
    # tuning sweep (GPUSYNC_BARRIER_POLL, GPUSYNC_BARRIER_CLUSTER): the defaults are the best of these
    cmax = gs.barrier_benchmark("cluster", rounds=1)["max_blocks"]
    for case, blocks, cblocks in (("barrier-1perSM", sms, sms), ("barrier-maxresident", coop_max, cmax)):
        for poll in range(5):
            add(case, f"gpusync:flat[poll={poll}]", blocks, rounds, GPUSYNC_BARRIER_POLL=poll)
        for poll in range(5):
            add(case, f"gpusync:cluster[poll={poll}]", cblocks, rounds, GPUSYNC_BARRIER_POLL=poll)
        for cs in (2, 4, 6, 8, 12, 16):
            if cblocks % cs == 0:
                try:
                    add(case, f"gpusync:cluster[cs={cs}]", cblocks, rounds, GPUSYNC_BARRIER_CLUSTER=cs)
                except ValueError as e:  # that size does not fit this grid
                    print(f"  {case:20s} cluster[cs={cs}]: {e}", flush=True)
    us, _ = _best("cooperative", sms, rounds)  # drift check: the first row again, at the end
    print(f"  cooperative at {sms} blocks again after the sweep: {us:.3f} us verified", flush=True)
    rows += split_phase_rows(sms)
    for case, blocks in (("barrier-1perSM", sms), ("barrier-2perSM", 2 * sms)):
        r = gs.barrier_benchmark("relaunch", blocks=blocks, rounds=min(rounds, 5000))
        rows.append({"op": "barrier", "case": case, "impl": "relaunch:stream", "blocks": blocks,
                     "us": round(r["us_per_barrier"], 3)})
        rows.append({"op": "barrier", "case": case, "impl": "relaunch:graph", "blocks": blocks,
                     "us": round(r["us_per_barrier_graph"], 3)})
        print(f"  {case:20s} relaunch     {blocks:5d} blocks {r['us_per_barrier']:7.3f} us, graph "
              f"{r['us_per_barrier_graph']:7.3f} us", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("barrier", "cumsum"), help="run one half (tuning sweeps)")
    args = ap.parse_args()
    rounds = 2000 if args.quick else args.rounds
    gs.use_backend("cuda")
    info = gs.device_info()
    sms = info["multiprocessors"]
    rows = [] if args.only == "cumsum" else barrier_rows(rounds, sms)
    crows, copy_gbps = ([], 0.0) if args.only == "barrier" else cumsum_rows(args.quick)
    data = merge_results(args.out, info, rows + crows, ceilings={"copy_gbps": round(copy_gbps, 1)} if crows else None)
    if rows:
        write_barrier_md(args.out, info, data, rows, rounds)
    if crows:
        write_cumsum_md(args.out, info, data, crows, copy_gbps)


def _coop_ref(rows):
    """(blocks, bare) -> cooperative's us in this run (the ratio's reference: the same grid)."""
    return {(r["blocks"], r["impl"].endswith("(bare)")): r["us"] for r in rows
            if r["impl"] in ("gpusync:cooperative", "gpusync:cooperative(bare)")}


def best_vs_cooperative(rows):
    """Per case of the target (1 block per SM, co-resident maximum): the fastest verified gpusync barrier
    other than cooperative (shipped defaults and tuning variants apart) and its ratio to cooperative."""
    coop = _coop_ref(rows)
    out = []
    for case in ("barrier-1perSM", "barrier-maxresident"):
        for tuned in (False, True):
            cand = [r for r in rows if r["case"] == case and r["impl"].startswith("gpusync:")
                    and not r["impl"].endswith("(bare)") and "cooperative" not in r["impl"]
                    and ("[" in r["impl"]) == tuned and (r["blocks"], False) in coop
                    and "flat " not in r["impl"]]
            if cand:
                b = min(cand, key=lambda r: r["us"] / coop[(r["blocks"], False)])
                out.append((case, tuned, b, b["us"] / coop[(b["blocks"], False)]))
    return out


def write_barrier_md(out, info, data, rows, rounds):
    lines = [f"# Grid barriers: {info['name']}, {data['date']}", "",
             f"Latency per barrier (µs, best of 3 runs of {rounds} rounds; 256 threads per block). Verified: every "
             "round every block writes a value and after the barrier its first lanes read other blocks' values "
             "(each read compared one barrier later, so the check's own load latency does not add to the round); "
             "bare: the same rounds without the reads (GPUSYNC_BARRIER_VERIFY=0). Ratios: against "
             "`this_grid().sync()` (cooperative) on the same grid in the same run, verified against verified, "
             "bare against bare.", ""]
    lines += ["| target case | best gpusync barrier | blocks | µs | vs cooperative |", "|---|---|---:|---:|---:|"]
    for case, tuned, b, ratio in best_vs_cooperative(rows):
        lines.append(f"| {case}{' (tuning variants)' if tuned else ''} | {b['impl']} | {b['blocks']} | "
                     f"{b['us']:.3f} | {ratio:.2f}x |")
    lines += ["", "| case | impl | blocks | cluster | µs | vs cooperative |", "|---|---|---:|---:|---:|---:|"]
    coop = _coop_ref(rows)
    for r in rows:
        ref = coop.get((r["blocks"], r["impl"].endswith("(bare)")), float("nan"))
        ratio = f"{r['us'] / ref:.2f}x" if ref == ref and not r["case"].startswith("barrier-split") else ""
        lines.append(f"| {r['case']} | {r['impl']} | {r['blocks']} | {r.get('cluster', '')} | {r['us']:.3f} | "
                     f"{ratio} |")
    lines += ["", "(bare): the same rounds without the verifying reads (GPUSYNC_BARRIER_VERIFY=0). "
              "[poll=N]: GPUSYNC_BARRIER_POLL=N (barrier.cuh detail::flat_poll: 0 ld.acquire back to back, "
              "1 ld.relaxed + one fence, 2 / 4 __nanosleep(32 / 128) between polls, 3 atom.release arrival, the last "
              "arriver does not poll); [cs=N]: GPUSYNC_BARRIER_CLUSTER=N blocks per cluster. barrier-<N>: "
              "cooperative on the grid a strategy's own co-resident maximum allows. barrier-split-work<N>: the flat "
              "barrier's split-phase form at 1 block per SM, N dependent FMAs "
              "per round after the barrier (barrier+work) or between arrive and wait (split)."]
    from benchmarks.common import short_device
    with open(os.path.join(out, f"barrier_{short_device(info['name'])}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_cumsum_md(out, info, data, crows, copy_gbps):
    clines = [f"# cumsum: {info['name']}, {data['date']}", "",
              f"Copy ceiling (1 GiB, 16-byte loads and stores, read + write bytes): **{copy_gbps:.0f} GB/s**. "
              "GB/s counts the input read and the output written (int32 -> int64: 12 bytes per element).", "",
              "| case | impl | ms | GB/s | % of copy ceiling | vs CUB | max rel. error |",
              "|---|---|---:|---:|---:|---:|---:|"]
    cub = {r["case"]: r["ms"] for r in crows if r["impl"].startswith("cub:")}
    for r in crows:
        bad = "" if r["correct"] else " **WRONG**"
        clines.append(f"| {r['case']} | {r['impl']}{bad} | {r['ms']:.3f} | {r['gbps']:.0f} | "
                      f"{100 * r['gbps'] / copy_gbps:.0f}% | {cub[r['case']] / r['ms']:.2f}x | {r['rel_err']:.1e} |")
    with open(os.path.join(out, "cumsum.md"), "w") as f:
        f.write("\n".join(clines) + "\n")
    speed_plot(os.path.join(out, "cumsum.png"), crows, f"cumsum on {info['name']}")
    print("\n".join(clines))


if __name__ == "__main__":
    main()
