"""NumPy arrays end to end: from a pageable NumPy array to a NumPy result,
through gpusync's pinned staging pipeline (csrc/cuda/stage.cu), against
NumPy, CuPy (its own copy included) and the pinned / pageable PCIe bandwidth
measured in the same run.

    python benchmarks/host.py [--out benchmarks/results] [--sweep]

--sweep only measures the staging pipeline's knobs (crew threads, smallest
piece, the crew's spin before sleeping; read from the environment per call)
on the three target cases and writes <out>/stage_sweep.md.

Writes <out>/latest.json (op host; other rows kept, ceilings h2d_pinned_gbps
and h2d_pageable_gbps) and <out>/host.md.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpusync as gs  # noqa: E402
from benchmarks.common import merge_results, median  # noqa: E402
from benchmarks.histogram import seed_text_host  # noqa: E402
from gpusync.demo import wall_times_ms  # noqa: E402


def wall_ms(fn, reps=7):
    return median(wall_times_ms(fn, reps))


def h2d_gbps(cp, nbytes, pinned):
    """Host -> device bandwidth of one cudaMemcpy of `nbytes`."""
    d = cp.empty(nbytes, cp.uint8)
    if pinned:
        mem = cp.cuda.alloc_pinned_memory(nbytes)
        h = np.frombuffer(mem, np.uint8, nbytes)
    else:
        h = np.ones(nbytes, np.uint8)
    h[:] = 1

    def copy():
        d.set(h)  # cudaMemcpy (synchronous for pageable, async + sync for pinned)
        cp.cuda.Device().synchronize()
    return nbytes / wall_ms(copy) / 1e6


def sweep(out, info, pinned, pageable):
    """The staging knobs on the target cases (csrc/cuda/stage.cu)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, 256 << 20, dtype=np.uint8)
    x = rng.random(64 << 20, dtype=np.float32)
    y = rng.random(64 << 20, dtype=np.float32)
    t = seed_text_host()
    tiny = t[:1000]
    cases = [("text 5.7M", lambda: gs.histogram(t, bins=128, range=(0, 128)), 31, t.nbytes),
             ("u8 bincount 256M", lambda: gs.bincount(a, minlength=256), 7, a.nbytes),
             ("f32 dot 64M", lambda: gs.dot(x, y), 7, x.nbytes * 2)]
    lines = [f"# Staging knobs: {info['name']}", "",
             f"Pinned H2D {pinned:.1f} GB/s, pageable {pageable:.1f} GB/s in this run. ms per call (median); "
             f"the 1000-byte histogram (no staging) is {wall_ms(lambda: gs.histogram(tiny, 128, (0, 128)), 51):.3f} ms.",
             "", "| threads | units per copy | min unit KiB | pieces per unit | spin us | " + " | ".join(c[0] for c in cases) + " |",
             "|---:|---:|---:|---:|---:|" + "---:|" * len(cases)]
    configs = [(th, un, uk, sp, spin) for th in (8, 15) for un in (4, 8, 16) for uk in (128, 256)
               for sp in (16, 32, 64) for spin in (100,)]
    configs += [(15, 8, 256, 32, 0), (15, 8, 256, 32, 1000), (4, 8, 256, 32, 100), ("off", "", "", "", "")]
    for th, un, uk, sp, spin in configs:
        env = {"GPUSYNC_NO_STAGING": "1"} if th == "off" else \
            {"GPUSYNC_STAGE_THREADS": str(th), "GPUSYNC_STAGE_UNITS": str(un), "GPUSYNC_STAGE_UNIT_KB": str(uk),
             "GPUSYNC_STAGE_SPLIT": str(sp), "GPUSYNC_STAGE_SPIN_US": str(spin)}
        os.environ.update(env)
        try:
            ms = [wall_ms(fn, reps) for _, fn, reps, _ in cases]
        finally:
            for k in env:
                del os.environ[k]
        cells = " | ".join(f"{m:.3f} ({nb / m / 1e6 / pinned:.0%})" for m, (_, _, _, nb) in zip(ms, cases))
        lines.append(f"| {th} | {un} | {uk} | {sp} | {spin} | {cells} |")
        print(lines[-1], flush=True)
    with open(os.path.join(out, "stage_sweep.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(out, rows, pinned):
    """host.png: GB/s across the bus per case and implementation, with the
    pinned ceiling and the 80% target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(r["case"] for r in rows))
    impls = list(dict.fromkeys(r["impl"].split(" (")[0] for r in rows))
    fig, ax = plt.subplots(figsize=(13, 5))
    width = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        vals = [next((r["gbps"] for r in rows if r["case"] == c and r["impl"].split(" (")[0] == impl), 0)
                for c in cases]
        ax.bar(np.arange(len(cases)) + i * width, vals, width, label=impl)
    ax.axhline(pinned, color="k", lw=1, label=f"pinned H2D {pinned:.1f} GB/s")
    ax.axhline(0.8 * pinned, color="k", lw=0.8, ls="--", label="80% of pinned")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(cases)) + 0.4 - width / 2)
    ax.set_xticklabels(cases)
    ax.set_ylabel("GB/s across PCIe, NumPy in to NumPy out (higher is faster)")
    ax.set_title("Host arrays end to end")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "host.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--sweep", action="store_true", help="only sweep the staging knobs")
    ap.add_argument("--replot", action="store_true", help="only redraw host.png from <out>/latest.json")
    args = ap.parse_args()
    if args.replot:
        import json

        with open(os.path.join(args.out, "latest.json")) as f:
            data = json.load(f)
        return plot(args.out, [r for r in data["rows"] if r["op"] == "host"], data["ceilings"]["h2d_pinned_gbps"])
    import cupy as cp

    gs.use_backend("cuda")
    info = gs.device_info()
    pinned = h2d_gbps(cp, 256 << 20, True)
    pageable = h2d_gbps(cp, 256 << 20, False)
    print(f"  H2D pinned {pinned:.1f} GB/s, pageable {pageable:.1f} GB/s", flush=True)
    if args.sweep:
        os.makedirs(args.out, exist_ok=True)
        return sweep(args.out, info, pinned, pageable)
    rng = np.random.default_rng(0)
    rows = []

    def add(case, impl, ms, nbytes, correct=True):
        rows.append({"op": "host", "case": case, "impl": impl, "ms": round(ms, 4),
                     "gbps": round(nbytes / ms / 1e6, 2), "correct": bool(correct)})
        print(f"  {case:24s} {impl:28s} {ms:9.3f} ms {nbytes / ms / 1e6:7.1f} GB/s{'' if correct else '  WRONG'}",
              flush=True)

    # u8 bincount, 256 M
    a = rng.integers(0, 256, 256 << 20, dtype=np.uint8)
    ref = np.bincount(a, minlength=256)
    add("host-u8-bincount-256M", "gpusync", wall_ms(lambda: gs.bincount(a, minlength=256)), a.nbytes,
        np.array_equal(gs.bincount(a, minlength=256), ref))
    add("host-u8-bincount-256M", "cupy (asarray + bincount + get)",
        wall_ms(lambda: cp.bincount(cp.asarray(a), minlength=256).get()), a.nbytes)
    add("host-u8-bincount-256M", "numpy", wall_ms(lambda: np.bincount(a, minlength=256), reps=2), a.nbytes)
    # f32 dot, 64 M
    x = rng.random(64 << 20, dtype=np.float32)
    y = rng.random(64 << 20, dtype=np.float32)
    exact = np.dot(x.astype(np.float64), y.astype(np.float64))
    got = gs.dot(x, y)
    add("host-f32-dot-64M", "gpusync", wall_ms(lambda: gs.dot(x, y)), x.nbytes * 2,
        abs(float(got) - exact) <= 1e-6 * exact)
    add("host-f32-dot-64M", "cupy (asarray x2 + dot + get)",
        wall_ms(lambda: float(cp.dot(cp.asarray(x), cp.asarray(y)))), x.nbytes * 2)
    add("host-f32-dot-64M", "numpy", wall_ms(lambda: np.dot(x, y)), x.nbytes * 2)
    # the seed's 5.7 M text characters, 128 bins
    t = seed_text_host()
    href = np.histogram(t, 128, (0, 128))[0]
    add("host-u8-128-text-5.7M", "gpusync", wall_ms(lambda: gs.histogram(t, bins=128, range=(0, 128)), reps=21),
        t.nbytes, np.array_equal(gs.histogram(t, bins=128, range=(0, 128))[0], href))
    add("host-u8-128-text-5.7M", "cupy (asarray + histogram + get)",
        wall_ms(lambda: cp.histogram(cp.asarray(t), 128, (0, 128))[0].get(), reps=21), t.nbytes)
    add("host-u8-128-text-5.7M", "numpy", wall_ms(lambda: np.histogram(t, 128, (0, 128)), reps=5), t.nbytes)
    # cumsum, 64 M int32 (12 bytes per element cross the bus: 4 in, 8 out)
    c = rng.integers(-100, 100, 64 << 20, dtype=np.int32)
    add("host-i32-cumsum-64M", "gpusync", wall_ms(lambda: gs.cumsum(c), reps=5), c.nbytes * 3,
        np.array_equal(gs.cumsum(c)[-5:], np.cumsum(c)[-5:]))
    add("host-i32-cumsum-64M", "numpy", wall_ms(lambda: np.cumsum(c), reps=3), c.nbytes * 3)
    ceilings = {"h2d_pinned_gbps": round(pinned, 2), "h2d_pageable_gbps": round(pageable, 2)}
    data = merge_results(args.out, info, rows, ceilings=ceilings)
    lines = [f"# NumPy in, NumPy out: {info['name']}, {data['date']}", "",
             f"Host -> device, one 256 MiB cudaMemcpy: pinned **{pinned:.1f} GB/s**, pageable "
             f"**{pageable:.1f} GB/s**. Wall time per call (median), from a pageable NumPy array to a NumPy "
             "result; GB/s counts the bytes that cross the bus.", "",
             "| case | impl | ms | GB/s | % of pinned H2D |", "|---|---|---:|---:|---:|"]
    for r in rows:
        bad = "" if r["correct"] else " **WRONG**"
        lines.append(f"| {r['case']} | {r['impl']}{bad} | {r['ms']:.3f} | {r['gbps']:.1f} | "
                     f"{100 * r['gbps'] / pinned:.0f}% |")
    with open(os.path.join(args.out, "host.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(args.out, rows, pinned)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
