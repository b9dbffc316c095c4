"""Warp-vote benchmark: gs.packbits and gs.count_nonzero against NumPy, CuPy
and PyTorch on one GPU in one run, against the read ceiling of the same run;
seed 002's divergence demo; the occupancy of every gpusync kernel.

    python benchmarks/warp.py [--out benchmarks/results] [--quick]

Writes <out>/latest.json (ops packbits, count_nonzero; other rows kept),
<out>/warp.md and <out>/warp_speed.png.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import GIB, Timer, cuda_start, merge_results, read_ceiling, speed_plot, table  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import cupy as cp

    try:
        import torch
    except Exception:  # pragma: no cover
        torch = None
    from gpusync import demo

    info, timer = cuda_start(cp)
    scale = 16 if args.quick else 1
    rows = []
    u8 = cp.random.randint(0, 4, GIB // scale, dtype=cp.uint8)  # a quarter zeros
    ceiling = read_ceiling(cp, timer, u8)
    print(f"device {info['name']}  read ceiling {ceiling:.0f} GB/s", flush=True)
    f32 = cp.random.standard_normal((1 << 28) // scale, dtype=cp.float32)

    def add(op, case, impl, fn, nbytes, ok=None, host=False):
        try:
            ms = Timer.host(fn, reps=1) if host else timer.gpu(fn, reps=7, inner=5)
        except Exception as e:
            print(f"  {case} {impl}: {type(e).__name__}: {e}")
            return
        row = {"op": op, "case": case, "impl": impl, "ms": round(ms, 5), "gbps": round(nbytes / ms / 1e6, 1)}
        if ok is not None:
            row["correct"] = bool(ok)
        rows.append(row)
        print(f"  {case:28s} {impl:26s} {ms:9.4f} ms {row['gbps']:8.0f} GB/s" + ("" if ok is None else f" ok={ok}"),
              flush=True)

    case = f"packbits-u8-{'1GiB' if scale == 1 else '64MiB'}"
    ref = np.packbits(cp.asnumpy(u8))
    for order in ("big",):
        got = gs.packbits(u8, bitorder=order)
        add("packbits", case, "gpusync", lambda: gs.packbits(u8), u8.nbytes, np.array_equal(got.get(), ref))
    add("packbits", case, "cupy:packbits", lambda: cp.packbits(u8), u8.nbytes)
    hu8 = cp.asnumpy(u8)
    add("packbits", case, "numpy:packbits", lambda: np.packbits(hu8), u8.nbytes, host=True)

    case = f"packbits-f32-threshold-{256 // scale}M"
    ref = np.packbits(cp.asnumpy(f32) > 0.5)
    got = gs.packbits(f32, threshold=0.5)
    add("packbits", case, "gpusync", lambda: gs.packbits(f32, threshold=0.5), f32.nbytes,
        np.array_equal(got.get(), ref))
    add("packbits", case, "cupy:packbits(a > t)", lambda: cp.packbits(f32 > 0.5), f32.nbytes)
    hf = cp.asnumpy(f32)
    add("packbits", case, "numpy:packbits(a > t)", lambda: np.packbits(hf > 0.5), f32.nbytes, host=True)

    case = f"count_nonzero-f32-{256 // scale}M"
    f32[::7] = 0
    ref = int(np.count_nonzero(cp.asnumpy(f32)))
    add("count_nonzero", case, "gpusync", lambda: gs.count_nonzero(f32), f32.nbytes, int(gs.count_nonzero(f32)) == ref)
    add("count_nonzero", case, "cupy:count_nonzero", lambda: cp.count_nonzero(f32), f32.nbytes)
    if torch is not None:
        t = torch.as_tensor(f32, device="cuda")
        add("count_nonzero", case, "torch:count_nonzero", lambda: torch.count_nonzero(t), f32.nbytes)
    hf = cp.asnumpy(f32)
    add("count_nonzero", case, "numpy:count_nonzero", lambda: np.count_nonzero(hf), f32.nbytes, host=True)
    u8 = f32 = None
    cp.get_default_memory_pool().free_all_blocks()

    div = demo.divergence(n=1 << 24, block=256, iters=256)
    occ = [gs.occupancy(k) for k in gs.kernels()]

    data = merge_results(args.out, info, rows, {"read_gbps": round(ceiling, 1)},
                         {"divergence_ms": div, "occupancy": occ})
    text = table(f"Warp votes: {info['name']}, {data['date']}", ceiling, rows, ref_impl="gpusync")
    text += "\n## Branch divergence (seed 002), 16 M threads, blocks of 256, loops of 256 steps\n\n"
    text += "| kernel | ms |\n|---|---:|\n" + "".join(f"| {k} | {v:.4f} |\n" for k, v in div.items())
    text += "\n## Occupancy of gpusync's kernels\n\n| kernel | block | regs | smem (static+dyn) | blocks/SM allowed by " \
            "threads, blocks, regs, smem | active warps/SM | occupancy | limiter | suggested block |\n" \
            "|---|---:|---:|---:|---|---:|---:|---|---:|\n"
    for o in occ:
        b = o["blocks_allowed_by"]
        text += (f"| {o['kernel']} | {o['block_size']} | {o['registers']} | {o['static_smem']}+{o['dynamic_smem']} | "
                 f"{b['threads']}, {b['blocks per SM']}, {b['registers']}, {b['shared memory']} | "
                 f"{o['active_warps_per_sm']}/{o['max_warps_per_sm']} | {o['occupancy']:.0%} | {o['limiter']} | "
                 f"{o['suggested_block_size']} |\n")
    with open(os.path.join(args.out, "warp.md"), "w") as f:
        f.write(text)
    print(text)
    try:
        speed_plot(os.path.join(args.out, "warp_speed.png"), rows, "packbits, count_nonzero: speed relative to gpusync",
                   ref_impl="gpusync")
    except Exception as e:
        print("plot failed:", e)
    if any(r.get("correct") is False for r in rows):
        print("WRONG results")
        sys.exit(1)


if __name__ == "__main__":
    main()
