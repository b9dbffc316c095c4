"""gpusync.dask on dask.distributed over 1..k GPUs of one machine.

One dask_cuda.LocalCUDACluster per GPU count (one worker per GPU), the same
uint8 data generated on the workers' GPUs (chunk i made by worker i % k, never
shipped), then per op the wall time of ``dask.compute`` of the lazy result
(median of --reps after a warm-up), and the speed-up over one GPU:

* ``gpusync.dask``       one compute of one lazy result (latency: includes the
                         scheduler's round trip);
* ``gpusync.dask(xB)``   B independent results in one ``dask.compute`` (the
                         scheduler's fixed cost shared, as in a pipeline);
* ``dask.array``         the peer: dask.array's own bincount / histogram / sum /
                         dot on the same CuPy chunks.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \\
    python benchmarks/dask_multi_gpu.py [--gib 16] [--chunk-mib 1024] \\
        [--small-gib 16 --small-chunk-mib 256] [--gpus 1,2] [--ops bincount,histogram,sum,dot]
    python benchmarks/dask_multi_gpu.py --cpu-smoke      # the logic, on a CPU LocalCluster, tiny sizes

Rows ``dask-<op>-<GiB>GiB-<n>gpu`` (and ``...-<chunk>MiB`` for the small-chunk
case) go into <out>/latest.json; <out>/dask_multi_gpu.md is the table and
<out>/dask_multi_gpu.png the scaling plot.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off (workers inherit this)
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync.dask as gsd  # noqa: E402
from benchmarks.common import median, merge_results  # noqa: E402


def _make(i, size, cpu):
    """Chunk i of the data, made where the task runs (a worker's GPU)."""
    if cpu:
        return np.random.default_rng(i).integers(0, 256, size, dtype=np.uint8)
    import cupy as cp
    return cp.random.default_rng(i).integers(0, 256, size, dtype=cp.uint8)


def _spec_cluster(k):
    """One Nanny per GPU, each seeing only its GPU (what dask-cuda sets up,
    without dask-cuda)."""
    from distributed import Nanny, Scheduler, SpecCluster
    workers = {i: {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
               for i in range(k)}
    return SpecCluster(scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}, workers=workers)


def _cluster(k, cpu, kind):
    import distributed
    if kind == "auto":
        kind = "local" if cpu else "dask-cuda"
        if not cpu:
            try:
                import dask_cuda  # noqa: F401
            except ImportError as e:
                print(f"dask_cuda cannot be imported ({e}): one Nanny per GPU instead", flush=True)
                kind = "spec"
    if kind == "dask-cuda":
        import dask_cuda
        cluster = dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, range(k))), n_workers=k,
                                             threads_per_worker=1, dashboard_address=None)
    elif kind == "spec":
        cluster = _spec_cluster(k)
    else:
        cluster = distributed.LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    return cluster, distributed.Client(cluster)


def _data(client, n, chunk, cpu):
    """A persisted Dask array of n uint8 in chunks of `chunk`, chunk i made on
    worker i % k (annotated placement: the GPUs get equal shares)."""
    import dask
    import dask.array as da
    import distributed
    workers = sorted(client.scheduler_info()["workers"])
    sizes = (chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ())
    if cpu:
        meta = np.empty(0, np.uint8)
    else:
        import cupy as cp
        meta = cp.empty(0, cp.uint8)
    blocks = []
    for i, size in enumerate(sizes):
        with dask.annotate(workers=[workers[i % len(workers)]], allow_other_workers=False):
            blocks.append(da.from_delayed(dask.delayed(_make, pure=True)(i, size, cpu), (size,), dtype=np.uint8,
                                          meta=meta))
    x = client.persist(da.concatenate(blocks), optimize_graph=False)
    distributed.wait(x)
    where = {}
    for ws in client.who_has(x).values():
        for w in ws:
            where[w] = where.get(w, 0) + 1
    print(f"  {len(sizes)} chunks of {chunk / 2**20:g} MiB per worker: {sorted(where.values())}", flush=True)
    return x


def _ops(x, names):
    import dask.array as da
    ours = {"bincount": lambda se: gsd.bincount(x, minlength=256, split_every=se),
            "histogram": lambda se: gsd.histogram(x, bins=256, range=(0, 256), split_every=se)[0],
            "sum": lambda se: gsd.sum(x, split_every=se),
            "dot": lambda se: gsd.dot(x, x, split_every=se)}
    peers = {"bincount": lambda: da.bincount(x, minlength=256),
             "histogram": lambda: da.histogram(x, bins=256, range=(0, 256))[0],
             "sum": lambda: x.sum(dtype=np.uint64),
             "dot": lambda: da.dot(x, x)}
    return {k: (ours[k], peers[k]) for k in names}


def _chunk_loop_ms(keys, op, cpu, dask_worker=None):
    """On a worker: the time gpusync alone (no Dask) takes over the chunks of
    `keys` this worker holds, back to back, synchronized once at the end --
    the floor a Dask compute on this worker can reach."""
    import gpusync as gs
    data = dask_worker.data  # client.run passes the worker
    mine = [data[k] for k in keys if k in data]
    fn = {"bincount": lambda c: gs.bincount(c, minlength=256),
          "histogram": lambda c: gs.histogram(c, bins=256, range=(0, 256))[0],
          "sum": gs.sum, "dot": lambda c: gs.dot(c, c)}[op]
    sync = (lambda: None) if cpu else __import__("cupy").cuda.Device().synchronize
    if not mine:
        return 0.0
    fn(mine[0])
    sync()
    ts = []
    for _ in range(3):
        t = time.perf_counter()
        for c in mine:
            fn(c)
        sync()
        ts.append(time.perf_counter() - t)
    return 1e3 * min(ts)


def _host(v):
    return np.asarray(v.get() if hasattr(v, "get") else v)


def _time(fn, reps):
    import dask
    out = dask.compute(fn())[0]  # warm-up (and the result)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        dask.compute(fn())
        ts.append(time.perf_counter() - t)
    return 1e3 * median(ts), out


def _time_batch(make, batch, reps):
    """B distinct lazy results (split_every differs) computed together."""
    import dask
    dask.compute(*[make(8 + j) for j in range(batch)])
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        dask.compute(*[make(8 + j) for j in range(batch)])
        ts.append((time.perf_counter() - t) / batch)
    return 1e3 * median(ts)


def _noop(i):
    return i


def _roundtrip_ms(client, reps=20):
    """One dask.compute of one trivial task, back to back (median): the
    scheduler's floor under every single-result compute of this cluster."""
    import dask
    dask.compute(dask.delayed(_noop)(-1), scheduler=client)
    ts = []
    for i in range(reps):
        t = time.perf_counter()
        dask.compute(dask.delayed(_noop)(i), scheduler=client)
        ts.append(time.perf_counter() - t)
    return 1e3 * median(ts)


def _gib(n):
    g = n / 2**30
    return f"{g:g}" if g >= 1 else f"{g:.3g}"


def run_case(client, k, n, chunk, names, reps, batch, cpu, suffix, ref, peer_reps):
    import dask
    x = _data(client, n, chunk, cpu)
    rows = []
    from dask.core import flatten
    keys = list(flatten(x.__dask_keys__()))
    with dask.config.set(scheduler=client):
        for op, (ours, peer) in _ops(x, names).items():
            case = f"dask-{op}-{_gib(n)}GiB-{k}gpu{suffix}"
            floor = max(client.run(_chunk_loop_ms, keys, op, cpu).values())
            rows.append({"op": f"dask-{op}", "case": case, "impl": "gpusync chunk loop (no Dask)",
                         "ms": round(floor, 4), "gbps": round(n * (1 if op != "dot" else 2) / floor / 1e6, 1),
                         "correct": True})
            ms, got = _time(lambda: ours(8), reps)
            got = _host(got)
            key = (op, n, chunk)
            if key not in ref:  # the first GPU count's result is the reference of the others
                ref[key] = got
            correct = bool(np.array_equal(got, ref[key]))
            rows.append({"op": f"dask-{op}", "case": case, "impl": "gpusync.dask", "ms": round(ms, 4),
                         "gbps": round(n * (2 if op == "dot" else 1) / ms / 1e6, 1), "correct": correct})
            bms = _time_batch(ours, batch, reps)
            rows.append({"op": f"dask-{op}", "case": case, "impl": f"gpusync.dask(x{batch})", "ms": round(bms, 4),
                         "gbps": round(n * (2 if op == "dot" else 1) / bms / 1e6, 1), "correct": correct})
            if peer_reps <= 0:
                print(f"{case:40s} gpusync.dask {ms:9.2f} ms  x{batch}: {bms:9.2f} ms/result  chunk loop "
                      f"{floor:8.2f} ms  correct={correct}", flush=True)
                continue
            pms, pgot = _time(peer, peer_reps)
            pgot = _host(pgot)
            pcorrect = bool(np.array_equal(pgot.astype(got.dtype) if op != "dot" else pgot, got)) if op != "dot" \
                else bool(pgot.astype(np.uint8) == got.astype(np.uint8))
            rows.append({"op": f"dask-{op}", "case": case, "impl": "dask.array", "ms": round(pms, 4),
                         "gbps": round(n * (2 if op == "dot" else 1) / pms / 1e6, 1), "correct": pcorrect})
            print(f"{case:40s} gpusync.dask {ms:9.2f} ms  x{batch}: {bms:9.2f} ms/result  dask.array {pms:9.2f} ms"
                  f"  chunk loop {floor:8.2f} ms  correct={correct}/{pcorrect}", flush=True)
    client.cancel(x)
    return rows


def report(rows, out, title):
    base = {}
    for r in rows:
        if "-1gpu" in r["case"]:
            base[(r["case"].replace("-1gpu", "-Xgpu"), r["impl"])] = r["ms"]
    lines = [f"# {title}", "", "| case | impl | ms | GB/s | speed-up over 1 GPU | correct |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        k = r["case"].split("gpu")[0].rsplit("-", 1)[1]
        b = base.get((r["case"].replace(f"-{k}gpu", "-Xgpu"), r["impl"]))
        sp = f"{b / r['ms']:.2f}x" if b else ""
        lines.append(f"| {r['case']} | {r['impl']} | {r['ms']:.2f} | {r['gbps']:.0f} | {sp} | "
                     f"{'yes' if r['correct'] else '**NO**'} |")
    with open(os.path.join(out, "dask_multi_gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    series = {}
    for r in rows:
        k = int(r["case"].split("gpu")[0].rsplit("-", 1)[1])
        stem = r["case"].replace(f"-{k}gpu", "")
        b = base.get((r["case"].replace(f"-{k}gpu", "-Xgpu"), r["impl"]))
        if b:
            series.setdefault(f"{stem} {r['impl']}", []).append((k, b / r["ms"]))
    for label, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ks = sorted({p[0] for pts in series.values() for p in pts})
    ax.plot(ks, ks, "k--", lw=0.8, label="linear")
    ax.set_xlabel("GPUs (one Dask worker each)")
    ax.set_ylabel("speed-up over one GPU")
    ax.set_xticks(ks)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "dask_multi_gpu.png"), dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=16.0, help="bytes of uint8 data of the main case")
    ap.add_argument("--chunk-mib", type=float, default=1024, help="chunk size of the main case")
    ap.add_argument("--small-gib", type=float, default=16.0, help="bytes of the small-chunk case (0: skip)")
    ap.add_argument("--small-chunk-mib", type=float, default=256)
    ap.add_argument("--cases", default=None,
                    help="GiB:chunk-MiB pairs, e.g. 64:2048,16:256 (instead of --gib/--chunk-mib/--small-*; "
                         "rows of a chunk size other than 1024 MiB get the -<chunk>MiB suffix)")
    ap.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2 (default 1..all)")
    ap.add_argument("--ops", default="bincount,histogram,sum,dot")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--peer-reps", type=int, default=None, help="reps of the dask.array peer (default --reps; 0: "
                                                                 "no peer rows)")
    ap.add_argument("--batch", type=int, default=8, help="results per compute of the batched rows")
    ap.add_argument("--cluster", choices=("auto", "dask-cuda", "spec", "local"), default="auto",
                    help="dask-cuda's LocalCUDACluster (auto on GPUs; 'spec' when dask_cuda cannot be imported: "
                         "one Nanny per GPU with CUDA_VISIBLE_DEVICES), or a plain LocalCluster (auto on CPUs)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="check the logic on a CPU LocalCluster with NumPy chunks and tiny sizes")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results; a temp one for "
                                                "--cpu-smoke)")
    args = ap.parse_args(argv)
    cpu = args.cpu_smoke
    if cpu:
        args.gib, args.chunk_mib = min(args.gib, 1 / 32), min(args.chunk_mib, 4)
        args.small_gib, args.small_chunk_mib = min(args.small_gib, 1 / 64), min(args.small_chunk_mib, 1)
        args.reps, args.batch = min(args.reps, 2), min(args.batch, 2)
        out = args.out or tempfile.mkdtemp(prefix="gsd-bench-")
        ngpu, name = 2, "CPU LocalCluster (smoke)"
    else:
        import cupy as cp
        out = args.out or os.path.join(HERE, "results")
        ngpu = cp.cuda.runtime.getDeviceCount()
        name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else list(range(1, ngpu + 1))
    names = args.ops.split(",")
    if args.cases and not cpu:
        cases = []
        for pair in args.cases.split(","):
            gib, mib = (float(v) for v in pair.split(":"))
            cases.append((int(gib * 2**30), int(mib * 2**20), "" if mib == 1024 else f"-{mib:g}MiB"))
    else:
        cases = [(int(args.gib * 2**30), int(args.chunk_mib * 2**20), "")]
        if args.small_gib > 0:
            cases.append((int(args.small_gib * 2**30), int(args.small_chunk_mib * 2**20),
                          f"-{args.small_chunk_mib:g}MiB"))
    rows, ref = [], {}
    for k in counts:
        t0 = time.perf_counter()
        cluster, client = _cluster(k, cpu, args.cluster)
        print(f"{k} worker(s) up in {time.perf_counter() - t0:.1f} s", flush=True)
        try:
            rt = _roundtrip_ms(client)
            print(f"  one trivial task per compute: {rt:.2f} ms", flush=True)
            rows.append({"op": "dask-roundtrip", "case": f"dask-roundtrip-{k}gpu", "impl": "dask.distributed (one "
                         "trivial task)", "ms": round(rt, 4), "gbps": 0.0, "correct": True})
            for n, chunk, suffix in cases:
                rows += run_case(client, k, n, chunk, names, args.reps, args.batch, cpu, suffix, ref,
                                 args.reps if args.peer_reps is None else args.peer_reps)
        finally:
            client.close()
            cluster.close()
    title = f"gpusync.dask on dask.distributed, 1..{max(counts)} x {name}"
    report(rows, out, title)
    merge_results(out, {"name": name}, rows)
    print(f"wrote {out}/latest.json, dask_multi_gpu.md, dask_multi_gpu.png")
    peers = [r["case"] for r in rows if not r["correct"] and r["impl"] == "dask.array"]
    if peers:
        print("the dask.array peer differs from gpusync.dask (its dtype rules) in:", peers)
    bad = [r["case"] + " " + r["impl"] for r in rows if not r["correct"] and r["impl"] != "dask.array"]
    if bad:
        print("WRONG:", bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
