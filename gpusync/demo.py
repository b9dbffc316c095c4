"""Teaching demos, measured: what the seeds show, on your machine.

``python -m gpusync demo`` runs :func:`text_histogram`.
"""
from __future__ import annotations

import time

import numpy as np

from . import _backend, _core
from ._histogram import histogram

_ALPHABET = np.frombuffer(b"  etaoinshrdlucmfwypvbgkqjxz ETAOIN.,", dtype=np.uint8)


def make_text(n: int = 5_700_000, seed: int = 0) -> np.ndarray:
    """A text-like uint8 array (letters, spaces, punctuation; all < 128)."""
    return np.random.default_rng(seed).choice(_ALPHABET, size=n).astype(np.uint8)


def best_of(fn, reps=5):
    """Best wall time of `reps` calls after one warm-up, in ms."""
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts) * 1e3


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


_COUNTER_KINDS = {"race": 0, "atomic": 1, "mutex": 2}


def _counter(kind: str, blocks: int, threads: int) -> dict:
    value, ms = _core.counter(_backend.backend(), _COUNTER_KINDS[kind], int(blocks), int(threads))
    expected = int(blocks) * int(threads)
    return {"kind": kind, "backend": _backend.backend(), "blocks": int(blocks), "threads": int(threads),
            "expected": expected, "value": int(value), "lost": expected - int(value), "ms": ms}


def race_counter(blocks: int = 64, threads: int = 256) -> dict:
    """Seed 001: every one of blocks x threads threads adds 1 to one counter
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
    """Seed 002: the same kernel with its branch on ``tid % 2`` (every warp
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
