"""gpusync on Dask arrays: lazy reductions over chunks spread over workers and GPUs.

    import dask.array as da, gpusync.dask as gsd
    x = da.from_array(big, chunks=64 << 20)          # NumPy or CuPy chunks
    counts, edges = gsd.histogram(x, bins=256, range=(0, 256))   # lazy
    total = gsd.sum(x)                                             # lazy
    counts, edges, total = dask.compute(counts, edges, total)

Every function returns Dask arrays and computes nothing (like
``dask.array.histogram``).  The graph is: one task per chunk, which calls the
single-array gpusync function on the chunk where it lives (a CuPy chunk on its
worker's GPU, a NumPy chunk through gpusync's engine choice), producing a
small partial (bins, not elements); a tree of combine tasks, ``split_every``
partials at a time; one final task.  ``.compute()`` gives what
``gpusync.<fn>`` gives for the concatenated array: the same edges (decided by
the same code, ``_histogram.plan_edges`` / the single-array call on a
two-element [min, max] proxy), dtypes and integer counts; floating sums, dot
products and binned means add the chunks' float64 partials in another order
(equal to rounding).  Results follow the chunks: NumPy chunks give NumPy,
CuPy chunks give CuPy arrays on a worker's device.

Data-dependent edges (``bins`` a number and ``range=None``, in histogram and
histogramdd; the sqrt / sturges / rice estimators; binned_statistic with a
number of bins) add a small min/max reduction to the graph: one more read of
the data, still lazy.  Nothing here calls ``compute``.

All chunks of an array must be of one kind (NumPy or CuPy, as the array's
``_meta``): a chunk of the other kind raises TypeError at compute time --
convert explicitly with ``x.map_blocks(cupy.asarray)`` or
``x.map_blocks(cupy.asnumpy)``.  Works on any scheduler: the synchronous and
threaded local ones, ``dask.distributed`` (``LocalCluster``, a remote
scheduler) and ``dask_cuda.LocalCUDACluster`` (one worker per GPU).
See docs/dask.md.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import operator
import warnings

import numpy as np

from . import _arrays, _binstat, _bits, _dispatch, _histdd, _histogram, _reduce, _scan
from ._arrays import DeviceArray
from ._reduce import _dot_dtype, _sum_dtype
from ._scan import _cumsum_dtype

__all__ = ["histogram", "histogram2d", "histogramdd", "bincount", "sum", "dot", "cumsum", "count_nonzero",
           "binned_statistic"]


try:
    import dask.array as _da
    from dask.delayed import single_key as _single_key
except ImportError:  # pragma: no cover - the functions raise _dask()'s ImportError
    OneBlockArray = None
else:
    class OneBlockArray(_da.Array):
        """A Dask array of one block (a histogram, a bincount, a sum): a dask
        Array in every way, except that computing it hands back its block
        itself.  Dask adds a finalize task to an Array's graph (it joins the
        blocks on a worker) and skips it only for a one-key postcompute like
        Delayed's: this one.  That is one scheduler hop less per compute:
        25-26 ms against 29 ms for the sum of a persisted array on a two-worker
        LocalCluster (development host)."""

        __slots__ = ()

        def __dask_postcompute__(self):
            return _single_key, ()


def _dask():
    try:
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph
    except ImportError as e:  # pragma: no cover - exercised only without dask
        raise ImportError("gpusync.dask needs Dask: pip install 'dask[array]'") from e
    return da, HighLevelGraph


# --------------------------------------------------------------------------
# graph building: one mechanism for every reduction here


def _as_dask(a, name, func):
    da, _ = _dask()
    if not isinstance(a, da.Array):
        raise TypeError(f"gpusync.dask.{func}: {name} must be a dask.array.Array; "
                        f"use gpusync.{func} for other arrays")
    if any(np.isnan(c) for cs in a.chunks for c in cs):
        raise ValueError(f"gpusync.dask.{func}: {name} has unknown chunk sizes; call {name}.compute_chunk_sizes()")
    return a


def _lib(x):
    """The module of the array's chunk type ('numpy', 'cupy'), from its meta."""
    return type(x._meta).__module__.split(".")[0]


def _check_chunk(c, lib, name):
    mod = type(c).__module__.split(".")[0]
    if mod != lib:
        raise TypeError(f"gpusync.dask: {name} has a {mod} chunk in an array of {lib} chunks; mixed NumPy/CuPy "
                        f"chunks are not converted implicitly: convert them all, e.g. "
                        f"{name}.map_blocks(cupy.asarray) or {name}.map_blocks(cupy.asnumpy)")
    if isinstance(c, np.ndarray) and not c.flags.aligned:
        # dask.distributed may hand a NumPy chunk over as an unaligned view
        # of a received frame; an aligned copy for the core
        c = np.require(c, requirements="A")
    return c


def _keys(x):
    from dask.core import flatten
    return list(flatten(x.__dask_keys__()))


def _name(prefix, *args):
    from dask.base import tokenize
    return f"gsd-{prefix}-{tokenize(*args)}"


def _meta(x, ndim, dtype):
    from dask.array.utils import meta_from_array
    return meta_from_array(x._meta, ndim=ndim, dtype=dtype)


def _check_split_every(split_every):
    """The fan-in of the combine tree: an integer (NumPy's too) of at least 2, or dask's {axis: n} spelling (the
    reductions here combine over every element: the largest n given)."""
    s = split_every
    if isinstance(s, dict) and s:
        s = max(s.values())
    try:
        s = operator.index(s) if not isinstance(s, (bool, np.bool_)) else None
    except TypeError:
        s = None
    if s is None or s < 2:
        raise ValueError(f"split_every must be an integer of at least 2 (or dask's {{axis: n}}); got {split_every!r}")
    return s


def _tree(layer, name, parts, combine, split_every):
    """Add tasks to `layer` that combine the partials under keys `parts`,
    `split_every` at a time, level by level; return the root's key."""
    split_every = _check_split_every(split_every)
    level, depth = list(parts), 0
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level), split_every):
            key = (f"{name}-combine{depth}", j // split_every)
            layer[key] = (combine,) + tuple(level[j:j + split_every])
            nxt.append(key)
        level, depth = nxt, depth + 1
    return level[0]


def _at(func, c, *rest):
    """func(c, ...) with c's device current (CuPy chunks may sit on several
    GPUs of one process under a local scheduler)."""
    with _on(c):
        return func(c, *rest)


def _per_chunk(layer, name, func, *arrays, extra=(), keys=None):
    """One task per block of arrays[0] (the others chunked alike, or None):
    func(block, other blocks..., *extra) on the block's device.  Returns the
    tasks' keys.  keys: the arrays' block keys, when the caller has them."""
    if keys is None:
        keys = [_keys(a) if a is not None else None for a in arrays]
    task = functools.partial(_at, func)
    out = []
    for i, k0 in enumerate(keys[0]):
        key = (f"{name}-part", i)
        layer[key] = (task, k0) + tuple(k[i] if k is not None else None for k in keys[1:]) + tuple(extra)
        out.append(key)
    return out


def _placement(x, keys):
    """(the worker holding each chunk of x, each worker's thread count) when
    x is persisted on a dask.distributed cluster -- every chunk a finished
    Future of one synchronous client -- else None (a graph still to run, a
    local scheduler).  Metadata only: one who_has query, nothing computed."""
    try:
        from distributed import Future
    except ImportError:
        return None
    graph = x.__dask_graph__()
    layer = getattr(graph, "layers", {}).get(x.name)
    if layer is None or type(layer).__name__ != "MaterializedLayer":
        return None  # a graph still to run (a layer is not materialized to look)
    futures = []
    for k in keys:
        f = layer.get(k)
        if not isinstance(f, Future) or f.status != "finished":
            return None
        futures.append(f)
    client = futures[0].client if futures else None
    if client is None or client.asynchronous or any(f.client is not client for f in futures):
        return None
    try:
        who, threads = client.who_has(futures), client.nthreads()
    except Exception:  # noqa: BLE001 - a placement hint only; one task per chunk without it
        return None
    where, load = [], {}
    for k in keys:
        holders = who.get(k) or who.get(str(k))
        if not holders:
            return None
        w = builtins.min(sorted(holders), key=lambda h: load.get(h, 0))  # replicas: the least loaded holder
        load[w] = load.get(w, 0) + 1
        where.append(w)
    return where, threads


def _groups(arrays, keys):
    """The chunk indices of each partial's task (keys: the arrays' block keys).  One
    task per chunk, except for arrays persisted on a dask.distributed
    cluster, every one placed alike (weights or a second operand still to
    compute would be gathered a worker's share at a time): there each
    worker's chunks go in as many tasks as the worker has threads (one per
    GPU under dask-cuda).  The distributed scheduler costs about a
    millisecond per task (docs/dask.md), more than a GPU takes to read a
    1 GiB chunk, and one task that reads its worker's chunks back to back
    costs that once."""
    x, n = arrays[0], len(keys[0])
    placed = _placement(x, keys[0]) if n > 1 else None
    for a, k in zip(arrays[1:], keys[1:]):
        if placed is not None and a is not None and a is not x:
            other = _placement(a, k)
            if other is None or other[0] != placed[0]:
                placed = None
    if placed is None:
        return [[i] for i in range(n)]
    where, threads = placed
    mine = {}
    for i, w in enumerate(where):
        mine.setdefault(w, []).append(i)
    groups = []
    for w, idx in mine.items():
        t = builtins.max(1, builtins.min(int(threads.get(w, 1)), len(idx)))
        groups += [list(g) for g in np.array_split(np.asarray(idx), t)]
    return sorted(groups, key=lambda g: g[0])


def _run_group(func, combine, chunks, *extra):
    """func over the chunks of one task (each a list of the arrays' blocks),
    each on its block's device, the partials combined as they come."""
    acc = None
    for blocks in chunks:
        p = _at(func, *blocks, *extra)
        acc = p if acc is None else combine(acc, p)
    return acc


def _reduce_chunks(layer, name, func, combine, split_every, *arrays, extra=()):
    """The partials of func over the blocks of arrays[0] (the others chunked
    alike, or None), combined by a tree of `combine` tasks: the root's key,
    or None for an array with no blocks."""
    split_every = _check_split_every(split_every)
    keys = [_keys(a) if a is not None else None for a in arrays]
    groups = _groups(arrays, keys)
    if builtins.all(len(g) == 1 for g in groups):
        parts = _per_chunk(layer, name, func, *arrays, extra=extra, keys=keys)
    else:
        # the grouping is part of the keys: a grouped and a per-chunk graph of
        # the same call (placement known or not) never share a key
        from dask.base import tokenize
        name = f"{name}-g{tokenize(groups)}"
        task = functools.partial(_run_group, func, combine)
        parts = []
        for j, g in enumerate(groups):
            key = (f"{name}-group", j)
            layer[key] = (task, [[k[i] if k is not None else None for k in keys] for i in g]) + tuple(extra)
            parts.append(key)
    return _tree(layer, name, parts, combine, split_every) if parts else None


def _const(value):
    return value


def _put(layer, key, value):
    """A literal in the graph (wrapped so Dask never parses it as a task)."""
    layer[key] = (functools.partial(_const, value),)
    return key


def _array(name, layer, deps, chunks, meta):
    da, HighLevelGraph = _dask()
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[d for d in deps if d is not None])
    # one block of 0 or 1 dimensions (Dask before its expression-based compute applied the postcompute to
    # the nested key list: single_key of a 2-D block's [[key]] would give a list)
    one = len(chunks) <= 1 and builtins.all(len(c) == 1 for c in chunks)
    return (OneBlockArray if one else da.Array)(graph, name, chunks, meta=meta)


def _xp(a):
    return np if isinstance(a, np.ndarray) else __import__(type(a).__module__.split(".")[0])


def _on(ref):
    """The device context of a CuPy array (nothing for NumPy)."""
    dev = getattr(ref, "device", None)
    return dev if hasattr(dev, "__enter__") else contextlib.nullcontext()


def _gather(parts):
    """Partials on one device.  Under dask-cuda every worker has one GPU and
    a partial from another worker arrives deserialized on this one's; with a
    local scheduler, chunks on several GPUs of one process give partials on
    different devices: those (small: bins) are copied over the host to the
    first one's device."""
    first = parts[0]
    if isinstance(first, np.ndarray) or not hasattr(first, "device"):
        return parts
    xp = _xp(first)
    with _on(first):
        return [p if p.device == first.device else xp.asarray(p.get()) for p in parts]


def _add(*parts):
    parts = _gather(parts)
    # (float partials of inf and -inf: NaN, which the single call's rules say what to do with -- _sum64_final --
    # not a warning from a worker thread)
    with _on(parts[0]), np.errstate(over="ignore", invalid="ignore"):
        return functools.reduce(operator.add, parts)


def _with_lib(value, lib):
    """A host result as an array of the chunks' library (on the current GPU)."""
    if lib == "numpy" or value is None:
        return value
    import importlib
    return importlib.import_module(lib).asarray(value)


def _like(value, ref):
    """A host array as an array of ref's library on ref's device."""
    if isinstance(ref, np.ndarray):
        return value
    with _on(ref):
        return _xp(ref).asarray(value)


def _to_host(v):
    if isinstance(v, np.ndarray) or np.isscalar(v):
        return np.asarray(v)
    d = _arrays.as_input(v, "a")
    return d.to_host() if isinstance(d, DeviceArray) else np.asarray(d)


# min and max over all chunks, lazily: for data-dependent edges

def _minmax_part(c, lib, name, columns, finite=False):
    """[min, max] of a chunk (of each column of an (n, D) chunk), on the host; `finite`: of its finite
    values where it holds no NaN ([inf, -inf] when none: SciPy 1.18's range of binned_statistic's x)."""
    c = _check_chunk(c, lib, name)
    if c.size == 0:
        return None
    if columns:
        return np.stack([_to_host(c.min(axis=0)), _to_host(c.max(axis=0))])
    lo, hi = _histogram._minmax(_arrays.as_input(c.reshape(-1), name))  # one pass  # synchronize! (tiny)
    if finite and not np.isnan(lo) and not (np.isfinite(lo) and np.isfinite(hi)):
        h = _to_host(c.reshape(-1))  # (a chunk that holds an inf: its finite values' range)
        f = h[np.isfinite(h)]
        lo, hi = (f.min(), f.max()) if f.size else (np.inf, -np.inf)
    return np.array([lo, hi])


def _minmax_combine(*parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    p = np.stack(parts)  # (k, 2[, D]); NaN propagates like the single call's min / max
    return np.stack([p[:, 0].min(axis=0), p[:, 1].max(axis=0)])


def _minmax_tree(layer, name, x, split_every, lib, argname, columns=False, finite=False):
    return _reduce_chunks(layer, name + "-mm", functools.partial(_minmax_part, lib=lib, name=argname, columns=columns,
                                                                 finite=finite),
                          _minmax_combine, split_every, x)


# --------------------------------------------------------------------------
# histogram


def _hist_part(c, wc, plan, *, lib, bins, range, strategy, as_uint8):  # noqa: A002
    c = _check_chunk(c, lib, "a")
    v = c.reshape(-1)
    if as_uint8:
        v = v.view(np.uint8)
    if wc is not None:
        wc = _check_chunk(wc, lib, "weights")
        wc = wc.reshape(-1)
        if wc.dtype != np.float64:  # float64 partials; the final cast is done once
            wc = wc.astype(np.float64)
    return _histogram._histogram_impl(v, bins, range, wc, None, strategy, plan=plan)[0]


def _hist_plan(mm, *, dt, bins, range):  # noqa: A002
    lo, hi = (None, None) if mm is None else (mm[0], mm[1])
    return _histogram.plan_edges(dt, bins, range, lo, hi)


def _hist_final(total, plan, *, out_dtype, density):
    with _on(total):
        out = total if total.dtype == out_dtype else total.astype(out_dtype)
    if density:
        db = _like(np.array(np.diff(plan[0]), float), out)
        with _on(out):
            return out / db / out.sum()
    return out


def _edges_out(plan, *, lib, index=None):
    e = plan[0] if index is None else plan[index]
    return _with_lib(np.array(e), lib)


# NumPy's bin estimators that read only the data's size, min and max: exact
# from a lazy (count, min, max) reduction.  The others (auto, fd, scott,
# doane, stone) need percentiles or moments of all the data.
_ESTIMATORS = ("sqrt", "sturges", "rice")


def _np_hist():
    return getattr(np.lib, "_histograms_impl", None) or np.lib.histograms


class _Summary:
    """What NumPy's sqrt / sturges / rice selectors read of the data."""

    def __init__(self, size, lo, hi):
        self.size, self._lo, self._hi = size, lo, hi

    def min(self):
        return self._lo

    def max(self):
        return self._hi


def _est_part(c, *, lib, keep, as_uint8):
    """(count, min, max) of a chunk's values inside `keep` (NumPy's range filter)."""
    c = _check_chunk(c, lib, "a")
    v = c.reshape(-1)
    if as_uint8:
        v = v.view(np.uint8)
    if keep is not None:
        with _on(v):
            v = v[(v >= keep[0]) & (v <= keep[1])]
    if v.size == 0:
        return (0, None, None)
    lo, hi = _histogram._minmax(_arrays.as_input(v, "a"))
    return (int(v.size), lo, hi)


def _est_combine(*parts):
    parts = [p for p in parts if p[0]]
    if not parts:
        return (0, None, None)
    lo = np.array([p[1] for p in parts])
    hi = np.array([p[2] for p in parts])
    return (builtins.sum(p[0] for p in parts), lo.min(), hi.max())  # NaN propagates like the single call's


def _est_plan(stats, *, dt, bins, range):  # noqa: A002
    """np.histogram_bin_edges' estimator branch (numpy/lib/_histograms_impl.py,
    _get_bin_edges) on the data's (count, min, max), then the same plan as a
    number of bins over [first_edge, last_edge]."""
    h = _np_hist()
    n, lo, hi = stats
    proxy = np.array([lo, hi], dt) if (range is None and n) else np.empty(0, dt)
    first, last = h._get_outer_edges(proxy, range)
    nbins = 1
    if n:
        width = h._hist_bin_selectors[bins](_Summary(n, lo, hi), (first, last))
        if width:
            if np.issubdtype(dt, np.integer) and width < 1:
                width = 1
            nbins = int(np.ceil(h._unsigned_subtract(last, first) / width))
    return _histogram.plan_edges(dt, nbins, (first, last))


def histogram(a, bins=10, range=None, density=None, weights=None, *, strategy="auto",  # noqa: A002
              split_every=8):
    """Lazy :func:`gpusync.histogram` of a Dask array; returns ``(hist,
    bin_edges)`` as Dask arrays (compute them together: ``dask.compute(h, e)``).

    Same edges, dtypes and counts as ``gpusync.histogram`` of the whole array.
    `bins` a number with ``range=None`` adds a min/max reduction (the edges
    depend on the data).  String bins (NumPy's estimators) need all the data
    and are refused, except ``"sqrt"``, ``"sturges"`` and ``"rice"``, which
    need only the count, min and max (a lazy reduction; the number of bins is
    then unknown until computed).  `weights`: a Dask array of a's shape
    (rechunked like a).
    """
    x = _as_dask(a, "a", "histogram")
    _dispatch.check_strategy("histogram", strategy)
    estimator = isinstance(bins, str)
    if estimator:
        if bins not in _ESTIMATORS:
            np.histogram_bin_edges(np.empty(0), bins=bins)  # NumPy's error for an unknown name
            raise ValueError(f"gpusync.dask.histogram: the bin estimator {bins!r} needs all the data at once; "
                             f"use one of {', '.join(map(repr, _ESTIMATORS))}, a number of bins or the edges")
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported for weighted data")
    dt = np.dtype(x.dtype)
    _arrays.check_dtype(dt, "a", "histogram")
    as_uint8 = dt == np.bool_
    if as_uint8:
        warnings.warn(f"Converting input from {dt} to {np.uint8} for compatibility.", RuntimeWarning, stacklevel=2)
        dt = np.dtype(np.uint8)
    w = None
    if weights is not None:
        w = _as_dask(weights, "weights", "histogram")
        if w.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        if np.dtype(w.dtype).kind not in "biuf":
            raise TypeError(f"histogram: weights has dtype {w.dtype}, which is not supported "
                            "(bool, integer and float weights are)")
        w = w.rechunk(x.chunks)
    if not np.ndim(bins) == 0:
        bins = np.asarray(bins)
    lib = _lib(x)
    static = _histogram.plan_edges(dt, 1 if estimator else bins, range)  # NumPy's errors, now
    nbins = np.nan if estimator else max(len(static[0]) - 1, 0)  # bins=[]: NumPy's empty histogram
    name = _name("histogram", x, w, bins, range, density, strategy, split_every)
    layer = {}
    if estimator:
        keep = None if range is None else _np_hist()._get_outer_edges(np.empty(0, dt), range)
        est = _reduce_chunks(layer, name + "-est",
                             functools.partial(_est_part, lib=lib, keep=keep, as_uint8=as_uint8), _est_combine,
                             split_every, x)
        if est is None:
            est = _put(layer, (name + "-est-empty",), (0, None, None))
        plan = (name + "-plan",)
        layer[plan] = (functools.partial(_est_plan, dt=dt, bins=bins, range=range), est)
    elif np.ndim(bins) == 0 and range is None and x.size:
        mm = _minmax_tree(layer, name, x, split_every, lib, "a")
        plan = (name + "-plan",)
        layer[plan] = (functools.partial(_hist_plan, dt=dt, bins=bins, range=range), mm)
    else:
        plan = _put(layer, (name + "-plan",), static)
    part = functools.partial(_hist_part, lib=lib, bins=bins, range=range, strategy=strategy, as_uint8=as_uint8)
    root = _reduce_chunks(layer, name, part, _add, split_every, x, w, extra=(plan,))
    acc = np.dtype(np.float64 if w is not None else np.int64)
    out_dtype = np.dtype(w.dtype) if w is not None else acc
    if root is None:  # an array with no blocks
        root = _put(layer, (name + "-empty",), np.zeros(0 if estimator else nbins, acc))
    layer[(name, 0)] = (functools.partial(_hist_final, out_dtype=out_dtype, density=density), root, plan)
    hist = _array(name, layer, [x, w], ((nbins,),),
                  _meta(x, 1, np.float64 if density else out_dtype))
    ename = name.replace("gsd-histogram", "gsd-histogram-edges")
    elayer = {(ename, 0): (functools.partial(_edges_out, lib=lib), plan)}
    edges = _array(ename, elayer, [hist], ((np.nan if estimator else len(static[0]),),),
                   _meta(x, 1, static[0].dtype))
    return hist, edges


# --------------------------------------------------------------------------
# histogramdd / histogram2d: NumPy's rules, a combined bin index counted by
# gpusync's bincount


def _dd_plan(mm, *, dt, D, bins, range):  # noqa: A002
    """The edges NumPy gives for data whose columns have these min and max:
    np.histogramdd's own code on a two-row proxy."""
    proxy = np.empty((0, D), dt) if mm is None else np.asarray(mm, dt).reshape(2, D)
    return tuple(np.histogramdd(proxy, bins=bins, range=range)[1])


def _dd_part(c, wc, edges, *, lib, strategy, nbin):
    c = _check_chunk(c, lib, "sample")
    xp = _xp(c)
    size = int(np.prod(nbin))
    with _on(c):
        idx = []
        for i, e in enumerate(edges):  # np.histogramdd's bin of each coordinate
            col = c[:, i]
            ed = xp.asarray(e)
            k = xp.searchsorted(ed, col, side="right")
            k[col == ed[-1]] -= 1  # the last bin is closed
            idx.append(k)
        xy = xp.ravel_multi_index(tuple(idx), tuple(int(n) for n in nbin))
        if wc is not None:
            wc = _check_chunk(wc, lib, "weights")
            wc = wc.astype(np.float64)
        if xy.size == 0:
            return xp.zeros(size, np.float64 if wc is not None else np.int64)
        return _histogram._bincount_impl(xy.astype(np.int64), wc, size, strategy)


def _dd_final(total, edges, *, nbin, density):
    D = len(nbin)
    hist = total.reshape(tuple(int(n) for n in nbin)).astype(float)
    hist = hist[D * (slice(1, -1),)]
    if density:  # NumPy's order of operations
        with _on(hist):
            s = hist.sum()
            for i in range(D):
                shape = np.ones(D, int)
                shape[i] = nbin[i] - 2
                hist = hist / _like(np.diff(edges[i]), hist).reshape(tuple(shape))
            hist /= s
    return hist


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, strategy="auto",  # noqa: A002
                split_every=8):
    """Lazy ``np.histogramdd`` of a Dask array of shape (N, D) (or a
    sequence of D 1-D Dask arrays); returns ``(hist, [edges...])`` as Dask
    arrays.  NumPy's edges (its own code on the columns' [min, max]) and
    bin rules; the combined bin index of each chunk is counted with
    gpusync's bincount on the chunk's device."""
    da, _ = _dask()
    _dispatch.check_strategy("bincount", strategy)
    if isinstance(sample, da.Array):
        x = _as_dask(sample, "sample", "histogramdd")
        if x.ndim == 1:
            x = x[:, None]
    else:
        cols = [_as_dask(s, "sample", "histogramdd") for s in sample]
        x = da.stack([c.reshape(-1) for c in cols], axis=1)
    if x.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D); got shape {x.shape}")
    x = x.rechunk({1: -1})
    N, D = x.shape
    dt = np.dtype(x.dtype)
    _arrays.check_dtype(dt, "sample", "histogramdd")
    static = tuple(np.histogramdd(np.empty((0, D), dt), bins=bins, range=range)[1])  # NumPy's errors, now
    nbin = tuple(len(e) + 1 for e in static)
    w = None
    if weights is not None:
        w = _as_dask(weights, "weights", "histogramdd").reshape(-1)
        if w.shape != (N,):
            raise ValueError("weights should have the same length as sample.")  # NumPy fails later, in bincount
        w = w.rechunk((x.chunks[0],))
    lib = _lib(x)
    name = _name("histogramdd", x, w, bins, range, density, strategy, split_every)
    layer = {}
    try:
        nb = len(bins)
    except TypeError:
        nb = None
    per_dim = [bins] * D if nb is None else list(bins)
    rng = (None,) * D if range is None else range
    if N and any(np.ndim(b) == 0 and r is None for b, r in zip(per_dim, rng)):
        mm = _minmax_tree(layer, name, x, split_every, lib, "sample", columns=True)
        plan = (name + "-plan",)
        layer[plan] = (functools.partial(_dd_plan, dt=dt, D=D, bins=bins, range=range), mm)
    else:
        plan = _put(layer, (name + "-plan",), static)
    part = functools.partial(_dd_part, lib=lib, strategy=strategy, nbin=nbin)
    root = _reduce_chunks(layer, name, part, _add, split_every, x, w, extra=(plan,))
    if root is None:
        root = _put(layer, (name + "-empty",), np.zeros(int(np.prod(nbin)), np.int64))
    layer[(name,) + (0,) * D] = (functools.partial(_dd_final, nbin=nbin, density=density), root, plan)
    hist = _array(name, layer, [x, w], tuple((n - 2,) for n in nbin), _meta(x, D, np.float64))
    edges = []
    for i, e in enumerate(static):
        ename = f"{name}-edges{i}"
        # edges from the data's range have its float dtype in NumPy (the empty sample's static ones: float64)
        edt = (dt if dt.kind == "f" else np.dtype(np.float64)) if N and np.ndim(per_dim[i]) == 0 and \
            rng[i] is None else e.dtype
        edges.append(_array(ename, {(ename, 0): (functools.partial(_edges_out, lib=lib, index=i), plan)}, [hist],
                            ((len(e),),), _meta(x, 1, edt)))
    return hist, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, strategy="auto",  # noqa: A002
                split_every=8):
    """Lazy ``np.histogram2d`` of two 1-D Dask arrays: ``(hist, xedges,
    yedges)`` as Dask arrays (see :func:`histogramdd`)."""
    xv, yv = _as_dask(x, "x", "histogram2d"), _as_dask(y, "y", "histogram2d")
    if xv.shape[0] != yv.shape[0]:
        raise ValueError("x and y must have the same length.")
    bins = _histdd._histogram2d_bins(bins)
    hist, edges = histogramdd([xv, yv], bins, range, density, weights, strategy=strategy,
                              split_every=split_every)
    return hist, edges[0], edges[1]


# --------------------------------------------------------------------------
# bincount


def _bincount_part(c, wc, *, lib, minlength, strategy):
    c = _check_chunk(c, lib, "x")
    if wc is not None:
        wc = _check_chunk(wc, lib, "weights")
    return _histogram._bincount_impl(c, wc, minlength, strategy)


def _bincount_full_part(c, wc, *, lib, strategy):
    """The count of every value of an 8-bit chunk (no read-back: the chunks'
    counts are added where they are, the length is cut once at the end)."""
    c = _check_chunk(c, lib, "x")
    xa = _arrays.as_input(c.reshape(-1), "x")
    device = isinstance(xa, DeviceArray)
    if xa.size == 0:
        return _like(np.zeros(256, np.int64), c)
    return _histogram._bincount_full(xa, xa if device else _histogram._flat_host(xa), None, strategy, device)


def _bincount_cut_final(total, *, dtype, minlength):
    return _like(_histogram._bincount_cut(_to_host(total), dtype, minlength), total)


def _add_padded(*parts):
    """Sum of bincounts of different lengths (each max + 1 of its chunk)."""
    parts = _gather(parts)
    n = max(len(p) for p in parts)
    with _on(parts[0]):
        total = _xp(parts[0]).zeros(n, np.result_type(*[p.dtype for p in parts]))
        for p in parts:
            total[:len(p)] += p
    return total


def bincount(x, weights=None, minlength=0, *, strategy="auto", split_every=8):
    """Lazy :func:`gpusync.bincount` of a 1-D Dask array of non-negative
    integers: a Dask array of ``max(x.max() + 1, minlength)`` counts (its
    length is unknown until computed, as in ``dask.array.bincount``).
    Negative values raise ValueError at compute time."""
    v = _as_dask(x, "x", "bincount")
    w = None if weights is None else _as_dask(weights, "weights", "bincount")
    # NumPy's errors for dtype, ndim, minlength and strategy, now (empty proxies)
    proto = np.zeros((0,) * v.ndim, v.dtype)
    _histogram._bincount_impl(proto, None if w is None else np.zeros((0,) * w.ndim, w.dtype), minlength, strategy)
    if w is not None:
        if w.shape != v.shape:
            raise ValueError("The weights and list don't have the same length.")
        w = w.rechunk(v.chunks)
    lib = _lib(v)
    name = _name("bincount", v, w, minlength, strategy, split_every)
    layer = {}
    # float64 with weights, except NumPy's int64 counts of an empty x (np.bincount's own, and the single call's)
    out_dtype = np.float64 if w is not None and v.shape[0] != 0 else np.int64
    if w is None and np.dtype(v.dtype).itemsize == 1:  # every value's count, added; NumPy's length cut once
        root = _reduce_chunks(layer, name, functools.partial(_bincount_full_part, lib=lib, strategy=strategy),
                              _add, split_every, v, w)
        final = functools.partial(_bincount_cut_final, dtype=np.dtype(v.dtype), minlength=minlength)
    else:
        root = _reduce_chunks(layer, name,
                              functools.partial(_bincount_part, lib=lib, minlength=minlength, strategy=strategy),
                              _add_padded, split_every, v, w)
        final = _const
    if root is None:
        root = _put(layer, (name + "-empty",), np.zeros(minlength, out_dtype))
        final = _const
    layer[(name, 0)] = (final, root)
    return _array(name, layer, [v, w], ((np.nan,),), _meta(v, 1, out_dtype))


# --------------------------------------------------------------------------
# sum, dot, count_nonzero: one element per chunk


def _acc_dtype(rt):
    """Chunks' partials: float64 for floats (the single call accumulates in
    float64 and rounds once), the result dtype (wrapping) for integers."""
    return np.dtype(np.float64) if rt.kind == "f" else rt


def _flat(v, dtype):
    if isinstance(v, DeviceArray):
        return v if v.dtype == dtype else _arrays.as_input(_arrays.Lib.of(v.lib).astype(v.obj, dtype), "a")
    return _reduce._host_flat(v, dtype)


# float64 sums carry each chunk's partial twice: as it is and scaled by 2^-64 (exact for normal numbers), so that
# chunk partials whose sum leaves the float64 range while the whole does not (1e308s in one chunk, -1e308s in
# another) still give the single call's finite sum; a chunk whose own sum overflows is summed scaled once more
_SCALE = 2.0 ** -64


def _sum_part(c, *, lib, strategy, scaled=False):
    c = _check_chunk(c, lib, "a")
    x = _arrays.checked_input(c, "a", "sum")
    rt = _sum_dtype(np.dtype(x.dtype))
    if rt == np.float64:  # the single call itself (with its overflow rescaling)
        p = _reduce._sum_impl(c, strategy=strategy)
        if scaled and isinstance(x, DeviceArray):  # (no read-back: the device single call does not rescale either)
            with _on(p):
                p = p.reshape(())
                return _xp(p).stack([p, p * _SCALE])
        if scaled:
            s = float(p)
            with np.errstate(over="ignore", under="ignore"):
                sc = s * _SCALE if np.isfinite(s) else float(_reduce._sum_impl(c * _SCALE, strategy=strategy))
            return np.array([s, sc])
    else:
        p = _reduce._run("sum", [x if isinstance(x, DeviceArray) else _reduce._host_flat(x, x.dtype)],
                         _acc_dtype(rt), strategy, False)
    return p.reshape(1) if hasattr(p, "reshape") else np.asarray(p).reshape(1)


def _dot_part(c, d, *, lib, strategy, rt):
    c = _check_chunk(c, lib, "a")
    d = _check_chunk(d, lib, "b")
    x, y = _arrays.checked_input(c, "a", "dot"), _arrays.checked_input(d, "b", "dot")
    p = _reduce._run("dot", [_flat(x, rt), _flat(y, rt)], _acc_dtype(rt), strategy, False)
    return p.reshape(1) if hasattr(p, "reshape") else np.asarray(p).reshape(1)


def _sum64_final(total):
    """The float64 sum from the two accumulated partials: the plain one where finite, else the scaled one
    scaled back (inf where the true sum leaves the range; NaN for NaN or inf - inf data)."""
    if not isinstance(total, np.ndarray):  # a CuPy total: on its device, no read-back
        with _on(total):
            xp = _xp(total)
            return xp.where(xp.isfinite(total[0]), total[0], total[1] / _SCALE).reshape(())
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float64(total[0] if np.isfinite(total[0]) else total[1] / _SCALE)


def _scalar_final(total, *, out_dtype):
    if isinstance(total, np.ndarray):
        return out_dtype.type(total[0])
    with _on(total):
        return total.astype(out_dtype).reshape(())


def _one_element(name, func, out_dtype, x, y=None, split_every=8, final=None, width=1):
    """A 0-d result from per-chunk partials of `width` elements, added by a tree."""
    layer = {}
    root = _reduce_chunks(layer, name, func, _add, split_every, *([x] if y is None else [x, y]))
    if root is None:
        root = _put(layer, (name + "-empty",), np.zeros(width, _acc_dtype(out_dtype)))
    layer[(name,)] = (final or functools.partial(_scalar_final, out_dtype=out_dtype), root)
    return _array(name, layer, [x, y], (), _meta(x, 0, out_dtype))


def sum(a, *, strategy="auto", split_every=8):  # noqa: A001 - NumPy's name
    """Lazy :func:`gpusync.sum` of all elements of a Dask array: a 0-d Dask
    array; NumPy's result dtype, integer wrap-around, floats accumulated in
    float64 and rounded once."""
    x = _as_dask(a, "a", "sum")
    _dispatch.check_strategy("sum", strategy)
    _arrays.check_dtype(np.dtype(x.dtype), "a", "sum")
    out = _sum_dtype(np.dtype(x.dtype))
    name = _name("sum", x, strategy, split_every)
    f64 = out == np.float64  # two partials a chunk (_SCALE)
    return _one_element(name, functools.partial(_sum_part, lib=_lib(x), strategy=strategy, scaled=f64), out, x,
                        split_every=split_every, final=_sum64_final if f64 else None, width=2 if f64 else 1)


def dot(a, b, *, strategy="auto", split_every=8):
    """Lazy :func:`gpusync.dot` of two 1-D Dask arrays (b is rechunked like
    a): a 0-d Dask array of np.dot's dtype (int8 . int8 wraps in int8)."""
    x, y = _as_dask(a, "a", "dot"), _as_dask(b, "b", "dot")
    _dispatch.check_strategy("dot", strategy)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"dot: gpusync.dask.dot takes two 1-D arrays; got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[0]} (dim 0) != {y.shape[0]} (dim 0)")
    for v, n in ((x, "a"), (y, "b")):
        _arrays.check_dtype(np.dtype(v.dtype), n, "dot")
    rt = _dot_dtype(np.dtype(x.dtype), np.dtype(y.dtype))
    y = y.rechunk(x.chunks)
    name = _name("dot", x, y, strategy, split_every)
    return _one_element(name, functools.partial(_dot_part, lib=_lib(x), strategy=strategy, rt=rt), rt, x, y,
                        split_every=split_every)


def _count_part(c, *, lib, threshold):
    c = _check_chunk(c, lib, "a")
    p = _bits._count_nonzero_impl(c, threshold=threshold)
    return p.reshape(1) if hasattr(p, "reshape") else np.array([p], np.int64)


def _count_final(total):
    # a NumPy integer, not an int: dask's int() / float() of the 0-d result call .item() on it
    return np.int64(total[0]) if isinstance(total, np.ndarray) else total.reshape(())


def count_nonzero(a, *, threshold=None):
    """Lazy :func:`gpusync.count_nonzero` (of ``a > threshold`` when given)
    over all elements: a 0-d Dask array (a NumPy int64 for NumPy chunks, a
    0-d int64 CuPy array for CuPy chunks)."""
    x = _as_dask(a, "a", "count_nonzero")
    _arrays.check_dtype(np.dtype(x.dtype), "a", "count_nonzero")
    _bits._threshold(threshold, np.dtype(x.dtype))  # its errors, now
    name = _name("count_nonzero", x, threshold)
    return _one_element(name, functools.partial(_count_part, lib=_lib(x), threshold=threshold),
                        np.dtype(np.int64), x, final=_count_final)


# --------------------------------------------------------------------------
# cumsum: Dask's own scan machinery


def _cumsum_chunk(c, axis=None, dtype=None, *, lib, strategy):
    c = _check_chunk(c, lib, "a")
    return _scan._cumsum_impl(_arrays.checked_input(c, "a", "cumsum"), strategy)  # the flat scan


def _cum_add(carry, block):
    # the running total carried into the next block, added in the result
    # dtype (integers wrap like NumPy's), on the block's device
    return _add(block, carry)


def cumsum(a, axis=None, *, strategy="auto", method="sequential"):
    """Lazy :func:`gpusync.cumsum` of a 1-D Dask array (any array flattened
    when ``axis`` is None): each chunk's prefix sums by gpusync on its
    device, the chunks' totals carried by ``dask.array.reductions.cumreduction``
    (`method` ``"sequential"`` or ``"blelloch"``).  Integers are exact
    (wrapping); floats agree with the single call to rounding (the carry is
    added in the result dtype)."""
    da, _ = _dask()
    from dask.array.reductions import cumreduction
    x = _as_dask(a, "a", "cumsum")
    _scan._axis(axis, x.ndim)  # gs.cumsum's errors
    _dispatch.check_strategy("cumsum", strategy)
    _arrays.check_dtype(np.dtype(x.dtype), "a", "cumsum")
    out = _cumsum_dtype(np.dtype(x.dtype))
    if x.ndim != 1:
        x = x.reshape(-1)
    sizes = x.chunks[0]
    if len(sizes) > 1 and 0 in sizes and not any(s != s for s in sizes):  # (NaN: unknown sizes)
        # an empty chunk carries an empty total into the next (dask's cumreduction takes the block's last
        # element): the blocks after it were broadcast away, or raised; dropped here (no data moves)
        x = x.rechunk({0: tuple(s for s in sizes if s) or (0,)})
    func = functools.partial(_cumsum_chunk, lib=_lib(x), strategy=strategy)
    preop = functools.partial(_cumsum_total, lib=_lib(x), strategy=strategy, out=out)
    func.__name__ = "gsd-cumsum"  # cumreduction names its tasks after it
    return cumreduction(func, _cum_add, 0, x, axis=0, dtype=out, method=method, preop=preop)


def _cumsum_total(c, axis=None, dtype=None, keepdims=True, *, lib, strategy, out):
    # blelloch's per-block total, in the result dtype
    with _on(c):
        return _sum_part(c, lib=lib, strategy="auto").astype(out)


# --------------------------------------------------------------------------
# binned_statistic: Chan et al.'s parallel merge of per-bin moments


_NEEDS = {"count": ("count",), "sum": ("sum",), "mean": ("count", "mean"), "var": ("count", "mean", "var"),
          "std": ("count", "mean", "var"), "min": ("min",), "max": ("count", "max")}


def _bs_plan(mm, *, x_dtype, n, bins, range):  # noqa: A002
    """gs.binned_statistic's own edges and errors, on a proxy of x: its
    [min, max] (or nothing, or one 0 when the edges are given)."""
    if n == 0:
        proxy = np.empty(0, x_dtype)
    elif mm is None:
        proxy = np.zeros(1, x_dtype)
    else:
        proxy = np.asarray(mm, x_dtype).reshape(2)
    r = _binstat._binned_statistic_impl(proxy, np.zeros(len(proxy)), "count", bins, range)
    return (np.asarray(r.bin_edges),)


def _bs_part(c, v, plan, *, lib, statistic, strategy):
    c = _check_chunk(c, lib, "x")
    v = _check_chunk(v, lib, "values")
    edges = plan[0]
    nb = len(edges) - 1
    out = {}
    if c.size == 0:
        z = np.zeros(nb)
        nan = np.full(nb, np.nan)
        out = {"count": z, "sum": z, "mean": nan, "var": nan, "min": nan, "max": nan}
        return {k: _like(out[k], c) for k in _NEEDS[statistic]}, c.reshape(-1).astype(np.int64)
    binnumber = None
    for st in _NEEDS[statistic]:
        r = _binstat._binned_statistic_impl(c, v, st, edges, None, strategy)
        out[st] = r.statistic
        binnumber = r.binnumber if binnumber is None else binnumber
    return out, binnumber


def _bs_stats(part):
    return part[0]


def _bs_binnumber(part):
    return part[1]


def _bs_merge(*parts):
    """Merge per-bin (count, sum, mean, var, min, max) of disjoint parts.
    Mean and variance: Chan, Golub & LeVeque's pairwise update; min skips
    NaN and empty bins (fmin), max propagates a NaN value."""
    keys = list(parts[0])
    moved = _gather([p[k] for p in parts for k in keys])
    parts = [dict(zip(keys, moved[i * len(keys):(i + 1) * len(keys)])) for i in range(len(parts))]
    with _on(moved[0]):
        return _bs_merge_on(parts)


def _bs_merge_on(parts):
    acc = dict(parts[0])
    for p in parts[1:]:
        if "sum" in acc:
            acc["sum"] = acc["sum"] + p["sum"]
        if "min" in acc:
            acc["min"] = _xp(acc["min"]).fmin(acc["min"], p["min"])
        if "count" not in acc:
            continue
        na, nb = acc["count"], p["count"]
        xp = _xp(na)
        n = na + nb
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if "max" in acc:
                acc["max"] = xp.where(na == 0, p["max"], xp.where(nb == 0, acc["max"], xp.maximum(acc["max"], p["max"])))
            if "mean" in acc:
                delta = p["mean"] - acc["mean"]
                frac = nb / xp.maximum(n, 1)
                # a non-finite difference (an inf mean, or two means of opposite sign near the range's end): the
                # weighted mean, which gives the single call's sum / count there (inf, NaN for inf - inf, 0 for
                # 1e308 and -1e308) where Chan's update gave NaN or -inf
                chan = xp.where(xp.isfinite(delta), acc["mean"] + delta * frac,
                                acc["mean"] * (na / xp.maximum(n, 1)) + p["mean"] * frac)
                mean = xp.where(na == 0, p["mean"], xp.where(nb == 0, acc["mean"], chan))
                if "var" in acc:
                    m2 = (acc["var"] * na + p["var"] * nb + delta * delta * (na * nb / xp.maximum(n, 1)))
                    acc["var"] = xp.where(na == 0, p["var"], xp.where(nb == 0, acc["var"], m2 / xp.maximum(n, 1)))
                acc["mean"] = mean
        acc["count"] = n
    return acc


def _bs_final(acc, *, statistic):
    if statistic == "std":
        with _on(acc["var"]):
            return _xp(acc["var"]).sqrt(acc["var"])
    return acc[statistic]


def binned_statistic(x, values, statistic="mean", bins=10, range=None, *, strategy="auto",  # noqa: A002
                     split_every=8):
    """Lazy :func:`gpusync.binned_statistic` of 1-D Dask arrays (values
    rechunked like x).  Returns ``BinnedStatisticResult(statistic,
    bin_edges, binnumber)`` of Dask arrays; `binnumber` has x's chunks and
    stays on the workers until computed.  Edges and bin numbers are the
    single call's (a number of bins adds a min/max reduction); count, min
    and max are exact; sum, mean, std and var merge the chunks' float64
    partials (Chan et al. for mean and variance), equal to rounding."""
    xv = _as_dask(x, "x", "binned_statistic")
    vv = _as_dask(values, "values", "binned_statistic")
    if statistic not in _binstat.STATISTICS:
        _binstat._binned_statistic_impl(np.zeros(1), np.zeros(1), statistic)  # its ValueError
    _dispatch.check_strategy("binned_statistic", strategy)
    for v, nm in ((xv, "x"), (vv, "values")):
        if v.ndim != 1:
            raise ValueError(f"binned_statistic: {nm} must be 1-D; got shape {tuple(v.shape)}")
        _arrays.check_dtype(np.dtype(v.dtype), nm, "binned_statistic")
    if vv.shape[0] != xv.shape[0]:
        raise ValueError("The number of `values` elements must match the length of each `sample` dimension.")
    vv = vv.rechunk(xv.chunks)
    n = xv.shape[0]
    x_dtype = np.dtype(xv.dtype)
    # the edges now when they do not depend on the data; the call's errors for
    # bins and range now in any case
    static = _bs_plan(None, x_dtype=x_dtype, n=n if np.ndim(bins) != 0 or n == 0 else 1, bins=bins, range=range)
    nb = len(static[0]) - 1
    lib = _lib(xv)
    name = _name("binned-statistic", xv, vv, statistic, bins, range, strategy, split_every)
    layer = {}
    if np.ndim(bins) == 0 and n:  # equal-width bins over the data's range
        mm = _minmax_tree(layer, name, xv, split_every, lib, "x",
                          finite=x_dtype.kind == "f" and range is None and _binstat.nan_only())
        plan = (name + "-plan",)
        layer[plan] = (functools.partial(_bs_plan, x_dtype=x_dtype, n=n, bins=bins, range=range), mm)
    else:
        plan = _put(layer, (name + "-plan",), static)
    parts = _per_chunk(layer, name, functools.partial(_bs_part, lib=lib, statistic=statistic, strategy=strategy),
                       xv, vv, extra=(plan,))
    stats = []
    for i, p in enumerate(parts):
        k = (f"{name}-stats", i)
        layer[k] = (_bs_stats, p)
        stats.append(k)
    root = _tree(layer, name, stats, _bs_merge, split_every)
    layer[(name, 0)] = (functools.partial(_bs_final, statistic=statistic), root)
    stat = _array(name, layer, [xv, vv], ((nb,),), _meta(xv, 1, np.float64))
    ename = f"{name}-edges"
    edges = _array(ename, {(ename, 0): (functools.partial(_edges_out, lib=lib), plan)}, [stat],
                   ((nb + 1,),), _meta(xv, 1, static[0].dtype))
    bname = f"{name}-binnumber"
    blayer = {(bname, i): (_bs_binnumber, p) for i, p in enumerate(parts)}
    binnumber = _array(bname, blayer, [stat], (xv.chunks[0],), _meta(xv, 1, np.int64))
    return _binstat.BinnedStatisticResult(stat, edges, binnumber)
