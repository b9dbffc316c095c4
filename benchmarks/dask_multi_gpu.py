"""gpusync.dask over several GPUs of one machine: the same data, as CuPy
chunks spread round-robin over 1, 2, ... GPUs, reduced by Dask's threaded
scheduler (one task per chunk, each on its chunk's GPU; partials combined in
a tree on the host).  Wall time per call and the speed-up over one GPU.

    python benchmarks/dask_multi_gpu.py [--gib 8] [--chunk-mib 512] [--out benchmarks/results]

Writes <out>/dask_multi_gpu.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
import gpusync.dask as gsd  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=8.0, help="total bytes of uint8 data")
    ap.add_argument("--chunk-mib", type=int, default=512)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    import cupy as cp
    import dask
    import dask.array as da

    gs.use_backend("cuda")
    ngpu = cp.cuda.runtime.getDeviceCount()
    n = int(args.gib * (1 << 30))
    chunk = args.chunk_mib << 20
    nchunks = -(-n // chunk)
    name = gs.device_info()["name"]
    lines = [f"# gpusync.dask on {ngpu} x {name}", "",
             f"{n / 2**30:.1f} GiB of uint8 in {nchunks} CuPy chunks of {args.chunk_mib} MiB, generated on the GPUs "
             "(chunk i on GPU i % k); Dask's threaded scheduler; wall time per call (median of 5) after one warm-up.",
             "", "| GPUs | op | ms | GB/s | speed-up | correct |", "|---:|---|---:|---:|---:|---|"]
    base = {}
    ref = None
    for k in range(1, ngpu + 1):
        def make(block_info=None, k=k):
            i = block_info[None]["chunk-location"][0]
            size = block_info[None]["chunk-shape"][0]
            with cp.cuda.Device(i % k):
                return cp.random.default_rng(i).integers(0, 256, size, dtype=cp.uint8)

        x = da.map_blocks(make, chunks=((chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ()),),
                          dtype=np.uint8, meta=cp.empty(0, cp.uint8))
        with dask.config.set(scheduler="threads", num_workers=max(4, 2 * k)):
            x = x.persist()
            for d in range(k):
                cp.cuda.Device(d).synchronize()
            if k == 1:  # one chunk, called directly: the GPU's share of a task
                first = x.blocks[0].compute()
                ts = []
                for _ in range(5):
                    t = time.perf_counter()
                    gs.bincount(first, minlength=256)
                    ts.append(time.perf_counter() - t)
                lines.insert(3, f"One {args.chunk_mib} MiB chunk's bincount called directly: "
                                f"{1e3 * float(np.median(ts)):.3f} ms.")
                del first
            ops = {"bincount": lambda: gsd.bincount(x, minlength=256),
                   "sum": lambda: gsd.sum(x),
                   "histogram": lambda: gsd.histogram(x, bins=64, range=(0, 256))[0]}
            for op, fn in ops.items():
                got = fn()
                ts = []
                for _ in range(5):
                    t = time.perf_counter()
                    fn()
                    ts.append(time.perf_counter() - t)
                ms = 1e3 * float(np.median(ts))
                if k == 1:
                    base[op] = ms
                ok = True
                if op == "bincount":
                    ref = got if ref is None else ref
                    ok = bool(np.array_equal(got, ref)) and int(got.sum()) == n
                elif op == "sum":
                    ok = int(got) == int(np.dot(np.arange(256, dtype=np.uint64), ref.astype(np.uint64)))
                else:
                    ok = bool(np.array_equal(got, ref.reshape(64, 4).sum(axis=1)))
                lines.append(f"| {k} | {op} | {ms:.2f} | {n / ms / 1e6:.0f} | {base[op] / ms:.2f}x | "
                             f"{'yes' if ok else '**NO**'} |")
                print(lines[-1], flush=True)
        del x
        for d in range(k):
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dask_multi_gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
