"""gpusync on Dask arrays: data larger than one GPU, or spread over several.

    import dask.array as da, gpusync.dask as gsd
    x = da.from_array(big, chunks=64 << 20)          # NumPy or CuPy chunks
    counts, edges = gsd.histogram(x, bins=256, range=(0, 256))
    total = gsd.sum(x)

Each chunk is reduced by the single-array gpusync call on the worker that
holds it (its GPU, or CPU threads where there is none); the chunks' partial
results are combined pairwise in a tree (``split_every`` at a time) as Dask
tasks, and the result is computed and returned -- what the single-array call
returns for the whole array, with two exceptions: floating sums and dot
products add the chunks' float64 partials in a different order (equal to
rounding), and device (CuPy) chunks give NumPy results.

One worker per GPU (e.g. ``dask_cuda.LocalCUDACluster()``, with CuPy chunks)
spreads the chunks over the GPUs; any scheduler works, including the
synchronous and threaded local ones (tests use them on the CPU backend).
"""
from __future__ import annotations

import numpy as np

from . import _binstat, _histogram, _reduce
from ._reduce import _dot_dtype, _sum_dtype

__all__ = ["histogram", "bincount", "sum", "dot", "binned_statistic"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as e:  # pragma: no cover - exercised only without dask
        raise ImportError("gpusync.dask needs Dask: pip install 'dask[array]'") from e
    return dask, da


def _host(x):
    """NumPy view of a chunk result (CuPy / PyTorch -> host)."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return np.asarray(x)
    if hasattr(x, "get"):
        return np.asarray(x.get())
    if hasattr(x, "cpu"):
        return x.cpu().numpy()
    return np.asarray(x)


def _tree(parts, combine, split_every):
    """Combine delayed partial results `split_every` at a time, level by
    level, and compute the root."""
    dask, _ = _dask()
    if split_every < 2:
        raise ValueError("split_every must be at least 2")
    level = list(parts)
    if not level:
        raise ValueError("empty dask array")
    while len(level) > 1:
        level = [dask.delayed(combine)(*level[i:i + split_every]) for i in range(0, len(level), split_every)]
    return dask.compute(level[0])[0]


def _blocks(x):
    return list(x.ravel().to_delayed().ravel())


def _as_dask(a, name):
    _, da = _dask()
    if not isinstance(a, da.Array):
        raise TypeError(f"gpusync.dask: {name} must be a dask.array.Array; use gpusync.{name} for other arrays")
    return a


def _float_partial(func):
    """Chunk sum / dot with float64 partials for floating inputs (the
    single-array call accumulates in float64 and rounds once)."""
    def chunk(*xs):
        xs = [np.asarray(x).ravel() if isinstance(x, np.ndarray) else x.ravel() for x in xs]
        if any(np.dtype(x.dtype).kind == "f" for x in xs):
            xs = [x.astype(np.float64) for x in xs]
        return _host(func(*xs))
    return chunk


def sum(a, *, strategy="auto", split_every=8):  # noqa: A001 - NumPy's name
    """gs.sum over a Dask array: NumPy's result dtype, integer wrap-around."""
    dask, _ = _dask()
    x = _as_dask(a, "sum")
    out = _sum_dtype(np.dtype(x.dtype))
    chunk = _float_partial(lambda v: _reduce.sum(v, strategy=strategy))
    parts = [dask.delayed(chunk)(b) for b in _blocks(x)]

    def combine(*ps):
        with np.errstate(over="ignore"):
            return np.add.reduce(np.array(ps, dtype=np.float64 if out.kind == "f" else out))
    return out.type(_tree(parts, combine, split_every))


def dot(a, b, *, strategy="auto", split_every=8):
    """gs.dot of two 1-D Dask arrays (b is rechunked like a)."""
    dask, _ = _dask()
    x, y = _as_dask(a, "dot"), _as_dask(b, "dot")
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"dot: gpusync.dask.dot takes two 1-D arrays; got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[0]} (dim 0) != {y.shape[0]} (dim 0)")
    out = _dot_dtype(np.dtype(x.dtype), np.dtype(y.dtype))
    y = y.rechunk(x.chunks)
    chunk = _float_partial(lambda u, v: _reduce.dot(u.astype(out) if u.dtype != out else u,
                                                    v.astype(out) if v.dtype != out else v, strategy=strategy))
    parts = [dask.delayed(chunk)(p, q) for p, q in zip(_blocks(x), _blocks(y))]

    def combine(*ps):
        with np.errstate(over="ignore"):
            return np.add.reduce(np.array(ps, dtype=np.float64 if out.kind == "f" else out))
    return out.type(_tree(parts, combine, split_every))


def _add(*ps):
    n = max(len(p) for p in ps)
    total = np.zeros(n, np.result_type(*ps))
    for p in ps:
        total[:len(p)] += p
    return total


def _range_of(x, range):  # noqa: A002
    """NumPy's default range: the data's min and max (one Dask pass)."""
    dask, _ = _dask()
    if range is not None:
        return range
    if x.size == 0:
        return (0.0, 1.0)
    mn, mx = dask.compute(x.min(), x.max())
    return (float(_host(mn)), float(_host(mx)))


def histogram(a, bins=10, range=None, density=None, weights=None, *, strategy="auto",  # noqa: A002
              split_every=8):
    """gs.histogram over a Dask array (weights: a Dask array of a's shape).
    Returns (hist, bin_edges) as NumPy arrays, like np.histogram."""
    dask, _ = _dask()
    x = _as_dask(a, "histogram")
    if isinstance(bins, str):
        raise ValueError("gpusync.dask.histogram: bin estimators need all the data; give a number of bins or edges")
    if np.ndim(bins) == 0:
        range = _range_of(x, range)  # noqa: A001 - every chunk must use the same edges
    w = None if weights is None else _as_dask(weights, "histogram").rechunk(x.chunks)

    def chunk(v, wv=None):
        h, e = _histogram.histogram(v.ravel(), bins=bins, range=range,
                                    weights=None if wv is None else wv.ravel(), strategy=strategy)
        return _host(h), _host(e)

    blocks = _blocks(x)
    wblocks = _blocks(w) if w is not None else [None] * len(blocks)
    parts = [dask.delayed(chunk)(b, wb) for b, wb in zip(blocks, wblocks)]
    hist, edges = _tree(parts, lambda *ps: (_add(*[p[0] for p in ps]), ps[0][1]), split_every)
    if density:
        db = np.diff(edges).astype(np.float64)
        return hist / db / hist.sum(), edges
    return hist, edges


def bincount(x, weights=None, minlength=0, *, strategy="auto", split_every=8):
    """gs.bincount over a Dask array: max(x.max() + 1, minlength) bins."""
    dask, _ = _dask()
    v = _as_dask(x, "bincount")
    w = None if weights is None else _as_dask(weights, "bincount").rechunk(v.chunks)

    def chunk(c, wc=None):
        return _host(_histogram.bincount(c.ravel(), weights=None if wc is None else wc.ravel(),
                                         minlength=minlength, strategy=strategy))

    blocks = _blocks(v)
    wblocks = _blocks(w) if w is not None else [None] * len(blocks)
    parts = [dask.delayed(chunk)(b, wb) for b, wb in zip(blocks, wblocks)]
    out = _tree(parts, _add, split_every)
    return out.astype(np.float64 if weights is not None else np.int64, copy=False)


def _merge_stats(*ps):
    """Chan et al.'s parallel merge of per-bin (count, sum, mean, M2, min, max)."""
    n = sum_ = mean = m2 = lo = hi = None
    for cnt, s, mu, q, mn, mx in ps:
        if n is None:
            n, sum_, mean, m2, lo, hi = cnt.copy(), s.copy(), mu.copy(), q.copy(), mn.copy(), mx.copy()
            continue
        tot = n + cnt
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = mu - mean
            new_mean = np.where(n == 0, mu, np.where(cnt == 0, mean, mean + delta * (cnt / np.maximum(tot, 1))))
            new_m2 = np.where(n == 0, q, np.where(cnt == 0, m2, m2 + q + delta * delta * (n * cnt / np.maximum(tot, 1))))
        lo = np.fmin(lo, mn)                                          # min skips NaN and empty bins
        hi = np.where(n == 0, mx, np.where(cnt == 0, hi, np.maximum(hi, mx)))  # max propagates a NaN value
        n, sum_, mean, m2 = tot, sum_ + s, new_mean, new_m2
    return n, sum_, mean, m2, lo, hi


def binned_statistic(x, values, statistic="mean", bins=10, range=None, *, strategy="auto",  # noqa: A002
                     split_every=8):
    """gs.binned_statistic over 1-D Dask arrays (values rechunked like x).
    Returns BinnedStatisticResult(statistic, bin_edges, binnumber) of NumPy
    arrays; mean, std and var merge the chunks' counts, means and squared
    deviations (Chan et al.), so they match the single call to rounding."""
    dask, _ = _dask()
    xv = _as_dask(x, "binned_statistic")
    vv = _as_dask(values, "binned_statistic").rechunk(xv.chunks)
    if statistic not in _binstat.STATISTICS:
        raise ValueError(f"invalid statistic {statistic!r}")
    if np.ndim(bins) == 0:
        range = _range_of(xv, range)  # noqa: A001

    def chunk(c, v):
        c, v = c.ravel(), v.ravel()
        res = {}
        for st in ("count", "sum", "mean", "var", "min", "max"):
            r = _binstat.binned_statistic(c, v, st, bins=bins, range=range, strategy=strategy)
            res[st] = _host(r.statistic)
        cnt = res["count"]
        return ((cnt, res["sum"], res["mean"], res["var"] * cnt, res["min"], res["max"]),
                _host(r.bin_edges), _host(r.binnumber))

    parts = [dask.delayed(chunk)(b, w) for b, w in zip(_blocks(xv), _blocks(vv))]

    def combine(*ps):
        return _merge_stats(*[p[0] for p in ps]), ps[0][1], np.concatenate([p[2] for p in ps])
    (n, s, mean, m2, lo, hi), edges, binnumber = _tree(parts, lambda *ps: combine(*ps), split_every)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = {"count": n.astype(np.float64), "sum": s, "mean": np.where(n > 0, mean, np.nan),
                "var": np.where(n > 0, m2 / np.maximum(n, 1), np.nan), "min": np.where(n > 0, lo, np.nan),
                "max": np.where(n > 0, hi, np.nan)}
    stat["std"] = np.sqrt(stat["var"])
    return _binstat.BinnedStatisticResult(stat[statistic], edges, binnumber)
