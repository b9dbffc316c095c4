"""Teaching demos, measured: the experiments of the original articles gpusync
grew from (docs/index.md, "The original articles"), on your machine.

``python -m gpusync demo`` runs :func:`text_histogram` and :func:`tour` (a
compact version of ``python -m benchmarks``).
"""
from __future__ import annotations

import time

import numpy as np

from . import _backend, _core, _dispatch
from ._histogram import histogram

_ALPHABET = np.frombuffer(b"  etaoinshrdlucmfwypvbgkqjxz ETAOIN.,", dtype=np.uint8)


def make_text(n: int = 5_700_000, seed: int = 0) -> np.ndarray:
    """A text-like uint8 array (letters, spaces, punctuation; all < 128)."""
    return np.random.default_rng(seed).choice(_ALPHABET, size=n).astype(np.uint8)


def wall_times_ms(fn, reps=5):
    """Wall times of `reps` calls after one warm-up, in ms (the one host
    timing loop: the demos and benchmarks/ take their best or median)."""
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return ts


def best_of(fn, reps=5):
    """Best wall time of `reps` calls after one warm-up, in ms."""
    return min(wall_times_ms(fn, reps))


def text_histogram(n: int = 5_700_000, reps: int = 5, verbose: bool = True) -> dict:
    """Histogram of ~6 M characters (128 bins, range (0, 128)) with every
    strategy of the current backend, checked against NumPy, with timings
    (wall clock, end to end from a NumPy array to a NumPy result)."""
    text = make_text(n)
    ref, _ = np.histogram(text, bins=128, range=(0, 128))
    t_np = best_of(lambda: np.histogram(text, bins=128, range=(0, 128)), reps)
    be = _backend.backend()
    strategies = ["auto", "global", "shared", "warp"]
    if be == "cuda" and _backend.device_info()["compute_capability"][0] >= 9:
        strategies.append("cluster")
    rows = []
    for s in strategies:
        got, _ = histogram(text, bins=128, range=(0, 128), strategy=s)
        ok = bool(np.array_equal(got, ref))
        ms = best_of(lambda: histogram(text, bins=128, range=(0, 128), strategy=s), reps)
        rows.append({"strategy": s, "ms": ms, "matches_numpy": ok})
    info = _backend.device_info()
    result = {"backend": be, "device": info["name"], "n": n, "numpy_ms": t_np, "rows": rows}
    if verbose:
        print(f"gpusync demo: histogram of {n:,} text-like characters, 128 bins, on {be} ({info['name']})")
        print(f"  {'numpy':10s} {t_np:9.3f} ms")
        for r in rows:
            flag = "matches NumPy" if r["matches_numpy"] else "MISMATCH"
            print(f"  {r['strategy']:10s} {r['ms']:9.3f} ms  {t_np / r['ms']:7.1f}x NumPy  {flag}")
        top = sorted(((c, chr(i)) for i, c in enumerate(ref) if c), reverse=True)[:5]
        print("  most frequent:", ", ".join(f"{ch!r}: {c:,}" for c, ch in top))
    return result


def tour(n: int | None = None, reps: int = 5, verbose: bool = True) -> dict:
    """One call of each capability on `n` elements (16 M on the GPU, 4 M on
    CPU threads) -- NumPy in, NumPy out on the current backend, and (with CuPy
    on the CUDA backend) device arrays against CuPy -- each checked against
    NumPy, best-of-`reps` wall times."""
    from . import _binstat, _bits, _reduce, _scan
    from ._histogram import bincount

    if n is None:
        n = 1 << 24 if _backend.backend() == "cuda" else 1 << 22

    rng = np.random.default_rng(1)
    u8 = rng.integers(0, 256, n, dtype=np.uint8)
    f32 = rng.random(n, dtype=np.float32)
    i32 = rng.integers(-100, 100, n, dtype=np.int32)
    f64 = f32.astype(np.float64)
    cases = [  # name, gpusync call, numpy call, check
        ("bincount u8", lambda m: bincount(m["u8"], minlength=256), lambda: np.bincount(u8, minlength=256),
         np.array_equal),
        ("histogram f32, 100 bins", lambda m: histogram(m["f32"], bins=100, range=(0, 1))[0],
         lambda: np.histogram(f32, bins=100, range=(0, 1))[0], np.array_equal),
        ("sum f32", lambda m: _reduce.sum(m["f32"]), lambda: np.sum(f32),
         lambda a, b: abs(float(a) - f64.sum()) <= 1e-6 * f64.sum()),
        ("dot f32", lambda m: _reduce.dot(m["f32"], m["f32"]), lambda: np.dot(f32, f32),
         lambda a, b: abs(float(a) - f64 @ f64) <= 1e-6 * (f64 @ f64)),
        ("cumsum i32", lambda m: _scan.cumsum(m["i32"]), lambda: np.cumsum(i32), np.array_equal),
        ("packbits u8 > 127", lambda m: _bits.packbits(m["u8"], threshold=127), lambda: np.packbits(u8 > 127),
         np.array_equal),
        ("binned mean, 64 bins", lambda m: _binstat.binned_statistic(m["f32"], m["f32"], "mean", bins=64).statistic,
         None, None),
    ]
    host = {"u8": u8, "f32": f32, "i32": i32}
    dev = None
    cp = None
    if _backend.backend() == "cuda":
        try:
            import cupy as cp

            dev = {k: cp.asarray(v) for k, v in host.items()}
        except Exception:  # CuPy missing or unusable: host rows only
            cp = None
    peers = {"bincount u8": lambda d: cp.bincount(d["u8"], minlength=256),
             "histogram f32, 100 bins": lambda d: cp.histogram(d["f32"], bins=100, range=(0, 1))[0],
             "sum f32": lambda d: cp.sum(d["f32"]), "dot f32": lambda d: cp.dot(d["f32"], d["f32"]),
             "cumsum i32": lambda d: cp.cumsum(d["i32"]),
             "packbits u8 > 127": lambda d: cp.packbits(d["u8"] > 127)}

    def dev_ms(fn):
        def run():
            fn()
            cp.cuda.Device().synchronize()
        return best_of(run, reps)

    rows = []
    for name, ours, ref_fn, same in cases:
        got = ours(host)
        plan = _dispatch.last_plan() or {}
        engine = plan.get("engine") or "-"
        ref = ref_fn() if ref_fn else None
        if name.startswith("binned"):
            from numpy import histogram as _h
            sums = _h(f64, bins=64, range=(float(f32.min()), float(f32.max())), weights=f64)[0]
            cnt = _h(f64, bins=64, range=(float(f32.min()), float(f32.max())))[0]
            ok = bool(np.allclose(got, sums / cnt, rtol=1e-6, equal_nan=True))
        else:
            ok = bool(same(got, ref))
        row = {"case": name, "engine": engine, "ms": best_of(lambda: ours(host), reps), "matches_numpy": ok,
               "numpy_ms": best_of(ref_fn, max(1, reps // 2)) if ref_fn else None}
        if dev is not None:
            row["device_ms"] = dev_ms(lambda: ours(dev))
            row["cupy_ms"] = dev_ms(lambda: peers[name](dev)) if name in peers else None
        rows.append(row)
    info = _backend.device_info()
    if verbose:
        print(f"\ngpusync tour: {n:,} elements on {_backend.backend()} ({info['name']}); best of {reps}, wall ms")
        head = f"  {'case':26s} {'engine':>8s} {'NumPy in/out':>12s} {'NumPy':>9s}"
        if dev is not None:
            head += f" {'CuPy in/out':>12s} {'CuPy':>9s}"
        print(head)
        for r in rows:
            line = f"  {r['case']:26s} {r['engine']:>8s} {r['ms']:12.3f} " + (f"{r['numpy_ms']:9.3f}" if r["numpy_ms"] else f"{'-':>9s}")
            if dev is not None:
                line += f" {r['device_ms']:12.3f} " + (f"{r['cupy_ms']:9.3f}" if r["cupy_ms"] else f"{'-':>9s}")
            print(line + ("" if r["matches_numpy"] else "  MISMATCH"))
        print("  full tables: python -m benchmarks (GPU) -- docs/performance.md")
    return {"backend": _backend.backend(), "device": info["name"], "n": n, "rows": rows}


_COUNTER_KINDS = _core.COUNTER_KINDS  # codes defined once in C (gpusync.h)


def _counter(kind: str, blocks: int, threads: int) -> dict:
    value, ms = _core.counter(_backend.backend(), _COUNTER_KINDS[kind], int(blocks), int(threads))
    expected = int(blocks) * int(threads)
    return {"kind": kind, "backend": _backend.backend(), "blocks": int(blocks), "threads": int(threads),
            "expected": expected, "value": int(value), "lost": expected - int(value), "ms": ms}


def race_counter(blocks: int = 64, threads: int = 256) -> dict:
    """The lost-update experiment of the original article on atomics: every one of blocks x threads threads adds 1 to one counter
    with a plain load, add and store.  Returns the final ``value``, the
    ``expected`` count, how many updates were ``lost`` and the time in ``ms``.
    (On the CPU backend the increments are spread over the machine's
    threads.)"""
    return _counter("race", blocks, threads)


def atomic_counter(blocks: int = 64, threads: int = 256) -> dict:
    """The same with atomicAdd: nothing is lost."""
    return _counter("atomic", blocks, threads)


def mutex_counter(blocks: int = 64, threads: int = 256) -> dict:
    """The same with every increment under a spin-lock mutex (compare-and-swap
    to take it, fences, exchange to release it): nothing is lost, and every
    thread waits its turn -- the price of a lock at one address."""
    return _counter("mutex", blocks, threads)


def counters(blocks: int = 64, threads: int = 256, verbose: bool = True) -> list:
    """The three counters side by side (the table in docs/reductions.md)."""
    rows = [race_counter(blocks, threads), atomic_counter(blocks, threads), mutex_counter(blocks, threads)]
    if verbose:
        print(f"{blocks} blocks x {threads} threads add 1 to one counter ({rows[0]['backend']}):")
        for r in rows:
            print(f"  {r['kind']:7s} value {r['value']:>10,}  lost {r['lost']:>10,}  {r['ms']:9.3f} ms")
    return rows


_DIVERGENCE = (
    ("simple branch on tid % 2", 0),
    ("simple branch on (tid / 32) % 2", 1),
    ("loop branch on tid % 2", 2),
    ("loop branch on (tid / 32) % 2", 3),
)


def divergence(n: int = 1 << 24, block: int = 256, iters: int = 256, verbose: bool = True) -> dict:
    """The branch-divergence experiment of the original article on warps: the same kernel with its branch on ``tid % 2`` (every warp
    split: both paths run one after the other) and on ``(tid / 32) % 2``
    (whole warps take one path).  A branch over one assignment is turned into
    predicated instructions by the compiler, so the split costs nothing; a
    branch over loops of `iters` steps cannot be, and costs about 2x.
    Returns the best-of-5 kernel time in ms of each variant (CUDA only)."""
    be = _backend.backend()
    res = {name: _core.divergence(be, kind, int(n), int(block), int(iters)) for name, kind in _DIVERGENCE}
    if verbose:
        print(f"branch divergence, {n:,} threads, blocks of {block}, loops of {iters} steps:")
        for name, ms in res.items():
            print(f"  {name:34s} {ms:8.4f} ms")
    return res
