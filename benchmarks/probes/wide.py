"""Cells outside the named sweep: is gpusync ahead of what the user has on
the dtypes, layouts and arguments that benchmarks/sizes.py does not time?

    python -m benchmarks.probes.wide [--places host,device] [--sizes 1000,30001,1000003,10000007]
                                     [--only SUBSTR] [--budget 0.04] [--rounds 3]

For each case (an op with its dtype, layout and arguments), each size and
each input place (NumPy arrays; CuPy arrays where CuPy is installed): the
median wall time per call (synchronized on device) of gs.<op> and of the
peers a user holds there -- NumPy (host), torch (CPU tensors sharing the
NumPy memory on host, CUDA tensors on device), CuPy (device) -- in
interleaved rounds; the result of gs.<op> checked against NumPy's.  Prints
every cell, then the cells where gpusync is behind its best peer, worst first
(ratio = best peer ms / gpusync ms), and the cells whose result differed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import gpusync as gs  # noqa: E402
from benchmarks.sizes import timed, same  # noqa: E402


def optional(name):
    try:
        return __import__(name)
    except Exception:
        return None


torch = optional("torch")
cp = optional("cupy")
if cp is not None:
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:
        cp = None


def _r(seed=1):
    return np.random.default_rng(seed)


def ints(dt, lo, hi):
    return lambda n, r: (r.integers(lo, hi, n).astype(dt),)


def floats(dt, k=1):
    return lambda n, r: tuple(r.random(n).astype(dt) for _ in range(k))


def normal(dt):
    return lambda n, r: (r.standard_normal(n).astype(dt),)


def two_d(dt, cols):
    return lambda n, r: (r.random((max(n // cols, 1), cols)).astype(dt),)


def strided(dt):
    return lambda n, r: (r.random(2 * n).astype(dt)[::2], r.random(2 * n).astype(dt)[::2])


def complex_(dt):
    return lambda n, r: ((r.random(n) + 1j * r.random(n)).astype(dt),)


def weights_of(make_x):
    def f(n, r):
        return make_x(n, r) + (r.random(n),)
    return f


def t_(x, dev):
    return torch.as_tensor(x, device=dev) if dev == "cuda" else torch.from_numpy(np.ascontiguousarray(x))


# name: (inputs(n, rng), gs fn, numpy fn, torch fn(tensors) or None, cupy fn or None)
CASES = {
    # sums of every dtype class the named sweep skips
    "sum-f16": (floats(np.float16), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-i8": (ints(np.int8, -100, 100), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-u8": (ints(np.uint8, 0, 256), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-i16": (ints(np.int16, -1000, 1000), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-i32": (ints(np.int32, -10**6, 10**6), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-u32": (ints(np.uint32, 0, 10**6), gs.sum, np.sum, None, lambda x: x.sum()),
    "sum-u64": (ints(np.uint64, 0, 10**9), gs.sum, np.sum, None, lambda x: x.sum()),
    "sum-bool": (ints(np.bool_, 0, 2), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-c128": (complex_(np.complex128), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-f32-normal": (normal(np.float32), gs.sum, np.sum, lambda x: x.sum(), lambda x: x.sum()),
    "sum-f64-strided": (lambda n, r: (r.random(2 * n)[::2],), gs.sum, np.sum, None, lambda x: x.sum()),
    "sum-f64-axis0": (two_d(np.float64, 64), lambda x: gs.sum(x, axis=0), lambda x: np.sum(x, axis=0),
                      lambda x: x.sum(0), lambda x: x.sum(axis=0)),
    "sum-f64-axis1": (two_d(np.float64, 64), lambda x: gs.sum(x, axis=1), lambda x: np.sum(x, axis=1),
                      lambda x: x.sum(1), lambda x: x.sum(axis=1)),
    "sum-f32-axis0-wide": (two_d(np.float32, 4096), lambda x: gs.sum(x, axis=0), lambda x: np.sum(x, axis=0),
                           lambda x: x.sum(0), lambda x: x.sum(axis=0)),
    "sum-f32-axis1-wide": (two_d(np.float32, 4096), lambda x: gs.sum(x, axis=1), lambda x: np.sum(x, axis=1),
                           lambda x: x.sum(1), lambda x: x.sum(axis=1)),
    "sum-i64-dtype-f64": (ints(np.int64, -1000, 1000), lambda x: gs.sum(x, dtype=np.float64),
                          lambda x: np.sum(x, dtype=np.float64), None, lambda x: x.sum(dtype=np.float64)),
    # dots
    "dot-i32": (lambda n, r: (r.integers(-100, 100, n).astype(np.int32), r.integers(-100, 100, n).astype(np.int32)),
                gs.dot, np.dot, None, lambda x, y: x.dot(y)),
    "dot-i64": (lambda n, r: (r.integers(-100, 100, n), r.integers(-100, 100, n)), gs.dot, np.dot,
                lambda x, y: torch.dot(x, y), lambda x, y: x.dot(y)),
    "dot-f64-strided": (strided(np.float64), gs.dot, np.dot, None, lambda x, y: x.dot(y)),
    "dot-c128": (lambda n, r: (complex_(np.complex128)(n, r)[0], complex_(np.complex128)(n, _r(2))[0]), gs.dot,
                 np.dot, lambda x, y: torch.dot(x, y), lambda x, y: x.dot(y)),
    "dot-f16": (floats(np.float16, 2), gs.dot, np.dot, None, lambda x, y: x.dot(y)),
    # scans
    "cumsum-u8": (ints(np.uint8, 0, 256), gs.cumsum, np.cumsum, None, lambda x: x.cumsum()),
    "cumsum-i64": (ints(np.int64, -1000, 1000), gs.cumsum, np.cumsum, lambda x: x.cumsum(0), lambda x: x.cumsum()),
    "cumsum-f32": (floats(np.float32), gs.cumsum, np.cumsum, lambda x: x.cumsum(0), lambda x: x.cumsum()),
    "cumsum-f64-axis1": (two_d(np.float64, 64), lambda x: gs.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1),
                         lambda x: x.cumsum(1), lambda x: x.cumsum(axis=1)),
    # bit ops
    "count_nonzero-f64": (lambda n, r: ((r.random(n) < .5) * r.random(n),), gs.count_nonzero, np.count_nonzero,
                          lambda x: torch.count_nonzero(x), lambda x: cp.count_nonzero(x)),
    "count_nonzero-bool": (ints(np.bool_, 0, 2), gs.count_nonzero, np.count_nonzero,
                           lambda x: torch.count_nonzero(x), lambda x: cp.count_nonzero(x)),
    "count_nonzero-i32": (ints(np.int32, -1, 2), gs.count_nonzero, np.count_nonzero,
                          lambda x: torch.count_nonzero(x), lambda x: cp.count_nonzero(x)),
    "packbits-bool": (ints(np.bool_, 0, 2), gs.packbits, np.packbits, None, lambda x: cp.packbits(x)),
    "packbits-u8-little": (ints(np.uint8, 0, 2), lambda x: gs.packbits(x, bitorder="little"),
                           lambda x: np.packbits(x, bitorder="little"), None,
                           lambda x: cp.packbits(x, bitorder="little")),
    "unpackbits-u8": (ints(np.uint8, 0, 256), gs.unpackbits, np.unpackbits, None, lambda x: cp.unpackbits(x)),
    # histograms
    "histogram-f32-100": (floats(np.float32), lambda x: gs.histogram(x, 100, (0, 1))[0],
                          lambda x: np.histogram(x, 100, (0, 1))[0], lambda x: torch.histc(x, 100, 0, 1),
                          lambda x: cp.histogram(x, 100, (0, 1))[0]),
    "histogram-f64-1000-norange": (normal(np.float64), lambda x: gs.histogram(x, 1000)[0],
                                   lambda x: np.histogram(x, 1000)[0], None, lambda x: cp.histogram(x, 1000)[0]),
    "histogram-f32-10000": (floats(np.float32), lambda x: gs.histogram(x, 10000, (0, 1))[0],
                            lambda x: np.histogram(x, 10000, (0, 1))[0], lambda x: torch.histc(x, 10000, 0, 1),
                            lambda x: cp.histogram(x, 10000, (0, 1))[0]),
    "histogram-i32-100": (ints(np.int32, 0, 1000), lambda x: gs.histogram(x, 100, (0, 1000))[0],
                          lambda x: np.histogram(x, 100, (0, 1000))[0], None,
                          lambda x: cp.histogram(x, 100, (0, 1000))[0]),
    "histogram-i16-unit": (ints(np.int16, 0, 4096), lambda x: gs.histogram(x, 4096, (0, 4096))[0],
                           lambda x: np.histogram(x, 4096, (0, 4096))[0], None,
                           lambda x: cp.histogram(x, 4096, (0, 4096))[0]),
    "histogram-f64-edges50": (normal(np.float64),
                              lambda x: gs.histogram(x, np.linspace(-3, 3, 51) ** 3 / 9)[0],
                              lambda x: np.histogram(x, np.linspace(-3, 3, 51) ** 3 / 9)[0], None,
                              lambda x: cp.histogram(x, cp.asarray(np.linspace(-3, 3, 51) ** 3 / 9))[0]),
    "histogram-f64-100-weights": (weights_of(floats(np.float64)),
                                  lambda x, w: gs.histogram(x, 100, (0, 1), weights=w)[0],
                                  lambda x, w: np.histogram(x, 100, (0, 1), weights=w)[0], None,
                                  lambda x, w: cp.histogram(x, 100, (0, 1), weights=w)[0]),
    "histogram-f64-100-density": (floats(np.float64), lambda x: gs.histogram(x, 100, (0, 1), density=True)[0],
                                  lambda x: np.histogram(x, 100, (0, 1), density=True)[0], None,
                                  lambda x: cp.histogram(x, 100, (0, 1), density=True)[0]),
    "histogram2d-f64-64": (floats(np.float64, 2), lambda x, y: gs.histogram2d(x, y, 64, [[0, 1], [0, 1]])[0],
                           lambda x, y: np.histogram2d(x, y, 64, [[0, 1], [0, 1]])[0], None,
                           lambda x, y: cp.histogram2d(x, y, 64, [[0, 1], [0, 1]])[0]),
    "bincount-i32-100": (ints(np.int32, 0, 100), gs.bincount, np.bincount, lambda x: torch.bincount(x),
                         lambda x: cp.bincount(x)),
    "bincount-u16-60000": (ints(np.uint16, 0, 60000), gs.bincount, np.bincount, None, lambda x: cp.bincount(x)),
    "bincount-i64-weights": (weights_of(ints(np.int64, 0, 1000)), lambda x, w: gs.bincount(x, w),
                             lambda x, w: np.bincount(x, w), lambda x, w: torch.bincount(x, w),
                             lambda x, w: cp.bincount(x, w)),
    "bincount-i64-1M": (ints(np.int64, 0, 10**6), gs.bincount, np.bincount, lambda x: torch.bincount(x),
                        lambda x: cp.bincount(x)),
}


# the reference where NumPy's own result is not gpusync's documented one: float32 prefixes accumulate in
# float64, each rounded once (docs/cumsum.md)
REFERENCE = {"cumsum-f32": lambda x: np.cumsum(x.astype(np.float64)).astype(np.float32)}


def _scipy_cases():
    ss = optional("scipy.stats")
    if ss is None:
        return {}
    import scipy.stats as st
    out = {}
    for stat in ("sum", "std", "max", "count"):
        out[f"binned_statistic-{stat}-100"] = (
            floats(np.float64, 2),
            lambda x, v, s=stat: gs.binned_statistic(x, v, s, 100, (0, 1))[0],
            lambda x, v, s=stat: st.binned_statistic(x, v, s, 100, (0, 1))[0], None, None)
    out["binned_statistic-mean-100-f32"] = (
        floats(np.float32, 2), lambda x, v: gs.binned_statistic(x, v, "mean", 100, (0, 1))[0],
        lambda x, v: st.binned_statistic(x, v, "mean", 100, (0, 1))[0], None, None)
    return out


CASES.update(_scipy_cases())


def check(got, ref):
    got = got.get() if hasattr(got, "get") and not isinstance(got, np.ndarray) else got
    if torch is not None and isinstance(got, torch.Tensor):
        got = got.cpu().numpy()
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.dtype.kind in "fc" or got.dtype.kind in "fc":
        tol = 2e-2 if np.float16 in (got.dtype, ref.dtype) else 1e-5
        ok = np.allclose(got.astype(np.complex128), ref.astype(np.complex128), rtol=tol, atol=tol, equal_nan=True)
    else:
        ok = np.array_equal(got, ref)
    if not ok:
        return "values differ"
    if got.dtype != ref.dtype:
        return f"dtype {got.dtype} != {ref.dtype}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--places", default="host,device")
    ap.add_argument("--sizes", default="1000,30001,1000003,10000007")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=float, default=0.04)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    places = [p for p in args.places.split(",") if p == "host" or cp is not None]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    sync = cp.cuda.Device().synchronize if cp is not None else None
    cells, bad = [], []
    print(f"# gpusync {gs.__version__}, backend {gs.backend()}, torch {getattr(torch, '__version__', None)}, "
          f"cupy {getattr(cp, '__version__', None)}", flush=True)
    for name, (make, gfn, nfn, tfn, cfn) in CASES.items():
        if args.only and args.only not in name:
            continue
        for n in sizes:
            host = make(n, _r())
            ref = REFERENCE.get(name, nfn)(*host)
            for place in places:
                if place == "host":
                    impls = [("gpusync", lambda h=host: gfn(*h)), ("numpy", lambda h=host: nfn(*h))]
                    if tfn is not None and torch is not None:
                        th = [t_(a, "cpu") for a in host]
                        impls.append(("torch", lambda th=th: tfn(*th)))
                    s = None
                else:
                    dv = [cp.asarray(a) for a in host]
                    impls = [("gpusync", lambda dv=dv: gfn(*dv))]
                    if cfn is not None:
                        impls.append(("cupy", lambda dv=dv: cfn(*dv)))
                    if tfn is not None and torch is not None:
                        td = [t_(a, "cuda") for a in dv]
                        impls.append(("torch", lambda td=td: tfn(*td)))
                    s = sync
                try:
                    err = check(impls[0][1](), ref)
                except Exception as e:  # noqa: BLE001
                    err = f"{type(e).__name__}: {e}"
                if err:
                    bad.append((name, place, n, err))
                ms = {k: [] for k, _ in impls}
                for _ in range(args.rounds):
                    for k, fn in impls:
                        try:
                            ms[k].append(timed(fn, args.budget, sync=s))
                        except Exception:  # noqa: BLE001  (a peer without this dtype)
                            ms[k].append(float("nan"))
                med = {k: float(np.median(v)) for k, v in ms.items()}
                peers = {k: v for k, v in med.items() if k != "gpusync" and v == v}
                best = min(peers.items(), key=lambda kv: kv[1]) if peers else (None, float("nan"))
                ratio = best[1] / med["gpusync"] if peers else float("nan")
                impls[0][1]()
                eng = (gs.last_plan() or {}).get("engine")
                cells.append((name, place, n, med["gpusync"], best[0], best[1], ratio, eng))
                print(f"{name:30s} {place:6s} {n:>10d}  gs {med['gpusync']:9.4f} ms  best {best[0]!s:7s} "
                      f"{best[1]:9.4f} ms  ratio {ratio:6.2f}  {' '.join(f'{k}={v:.4f}' for k, v in med.items())}"
                      f"{'  ERR ' + err if err else ''}", flush=True)
    print("\n## behind the best peer (ratio < 0.95), worst first")
    for c in sorted((c for c in cells if c[6] == c[6] and c[6] < 0.95), key=lambda c: c[6]):
        print(f"{c[0]:30s} {c[1]:6s} {c[2]:>10d}  gs {c[3]:9.4f}  {c[4]} {c[5]:9.4f}  ratio {c[6]:5.2f}  engine {c[7]}")
    print("\n## results that differ from NumPy's")
    for b in bad:
        print(*b)
    print(f"\n{len(cells)} cells, {sum(1 for c in cells if c[6] == c[6] and c[6] < 0.95)} behind, {len(bad)} differ")


if __name__ == "__main__":
    main()
