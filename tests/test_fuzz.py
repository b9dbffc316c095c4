"""Differential fuzz: every public function x dtype (both byte orders) x
layout (contiguous, strided, negative strides, unaligned, 0-d, N-d, empty)
x value mode (ordinary, extremes, subnormals, NaN/inf, integers above 2^53)
x backend, against NumPy / SciPy, on seeded random cases.

The default run is a few hundred cases; ``pytest --fuzz-long`` runs
thousands (FUZZ_SEEDS below x CASES_PER_SEED per function and backend).
Device arrays (CuPy / PyTorch, when importable) get the same cases, marked
``gpu``.

Comparisons are exact wherever NumPy's result is exact (integer counts,
integer sums modulo 2^64, bin numbers, edges, bits).  Floating-point sums
are compared with a bound on the rounding of a float64 sum in another order.
Where the reference itself is wrong, the case says why and what it checks
instead:

* NaN weights with an array of edges: NumPy sums weights by a cumulative sum
  over the sorted data, so one NaN weight makes every later bin NaN; the
  fuzz uses finite weights with edge arrays (NaN weights are checked with
  equal-width bins, where NumPy adds per bin).
* SciPy's "on the last edge" test rounds x with ``np.around(x, decimal)``,
  which overflows to NaN/inf for float16 or near the float maximum, so SciPy
  drops values equal to the last edge there; gpusync keeps them in the last
  bin (the documented intent).  Such cases compare everything but the values
  at or beyond the last edge.
* SciPy's per-bin sums (for mean and std) overflow to inf for bins of huge
  finite values whose exact mean and spread are finite; gpusync's running
  update does not.  Bins whose float64 sum of |values| exceeds 2^1020 are
  not compared for mean/std.
* NumPy's equal-width path corrects its bin estimate by one step; in ranges
  only a few ulps per bin wide it misses the bin its own edges define, and
  returns a count that its edge-array path (a binary search) does not; the
  fuzz then compares with the edge-array result (gpusync's documented rule).
  On some subnormal ranges that path even indexes out of bounds
  (IndexError); those cases are compared with the edge-array path too.
* Known gpusync limit (documented in gpusync/_bits.py): count_nonzero /
  packbits of 64-bit integers with an integer threshold of magnitude >= 2^53
  (compared in float64); that combination is not generated.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import gpusync as gs
from conftest import scipy_binned_statistic

CASES_PER_SEED = 6


def pytest_generate_tests(metafunc):
    if "fuzz_seed" in metafunc.fixturenames:
        n = 200 if metafunc.config.getoption("--fuzz-long") else 6
        metafunc.parametrize("fuzz_seed", range(n))


def _lib_params():
    out = [pytest.param("numpy", id="host")]
    for name in ("cupy", "torch"):
        out.append(pytest.param(name, id=name, marks=pytest.mark.gpu))
    return out


@pytest.fixture(params=_lib_params())
def lib(request):
    if request.param != "numpy":
        pytest.importorskip(request.param)
    return request.param


DTYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]
LAYOUTS = ["contiguous", "strided", "negative", "unaligned", "0d", "nd", "empty"]
MODES = ["ordinary", "extremes", "subnormal", "nonfinite", "big"]
TORCH_DTYPES = {"?", "i1", "u1", "i2", "i4", "i8", "f2", "f4", "f8"}


# ----------------------------------------------------------------------------- generators

def _values(rng, dt, n, mode):
    """n values of dtype dt (native) in the value mode."""
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if mode == "extremes":
            pool = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1], dtype=dt)
            return rng.choice(pool, n)
        if mode == "big" and dt.itemsize == 8:
            base = np.uint64(2**53) if dt.kind == "u" else np.int64(2**53)
            v = rng.integers(0, 2**10, n).astype(dt) * dt.type(3) + base
            if dt.kind == "u":
                v[rng.random(n) < 0.3] += np.uint64(2**63)
            else:
                neg = rng.random(n) < 0.3
                v[neg] = -v[neg]
            return v
        lo, hi = max(int(info.min), -50), min(int(info.max), 50)
        return rng.integers(lo, hi, n, endpoint=True).astype(dt)
    fi = np.finfo(dt)
    v = rng.standard_normal(n) * 10
    if mode == "extremes":
        pool = np.array([fi.max, -fi.max, fi.max / 2, -fi.max / 3, fi.tiny, 0.0, -0.0, 1.0], dtype=dt)
        return rng.choice(pool, n)
    if mode == "subnormal":
        sub = float(fi.smallest_subnormal)
        return (rng.integers(-40, 40, n) * sub).astype(dt)
    if mode == "nonfinite":
        v = v.astype(dt)
        pick = rng.random(n)
        v[pick < 0.15] = np.nan
        v[(pick >= 0.15) & (pick < 0.25)] = np.inf
        v[(pick >= 0.25) & (pick < 0.3)] = -np.inf
        return v
    if mode == "big":
        return (rng.standard_normal(n) * 2.0**60).astype(dt) if dt.itemsize == 8 else v.astype(dt)
    return v.astype(dt)


def make_array(rng, dtype, layout, mode, swapped=False, ndim1=False):
    """A NumPy array of `dtype` in `layout` holding values of `mode`."""
    dt = np.dtype(dtype)
    if layout == "0d" and ndim1:
        layout = "contiguous"
    if layout == "nd" and ndim1:
        layout = "strided"
    n = int(rng.integers(1, 80))
    if layout == "empty":
        n = 0
    if layout == "0d":
        n = 1
    vals = _values(rng, dt, n if layout not in ("strided", "negative") else 3 * n, mode)
    st = dt.newbyteorder(">" if np.little_endian else "<") if (swapped and dt.itemsize > 1) else dt
    if layout == "unaligned" and dt.itemsize > 1:
        buf = np.zeros(n * dt.itemsize + 1, np.uint8)
        a = buf[1:].view(st)
        a[...] = vals
        return a
    a = vals.astype(st)
    if layout == "strided":
        return a[::3]
    if layout == "negative":
        return a[::-3]
    if layout == "0d":
        return a.reshape(())
    if layout == "nd":
        m = (n // 6) * 6 or 0
        return a[:m].reshape(2, 3, -1) if m else a[:0].reshape(0, 2)
    return a


def to_lib(a, lib):
    """The array on the device of `lib` (same layout where the library has it)."""
    if lib == "numpy":
        return a
    h = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("="))
    if lib == "cupy":
        import cupy as cp

        d = cp.asarray(h)
        if a.ndim == 1 and a.size > 1 and a.strides[0] < 0:
            d = cp.asarray(h[::-1].copy())[::-1]  # a negative-stride device view
        return d
    import torch

    if h.dtype == bool:
        return torch.as_tensor(h.astype(np.uint8), device="cuda").to(torch.bool)
    return torch.as_tensor(h, device="cuda")


def host(r):
    """A result (NumPy, CuPy, torch, scalar) as a NumPy array."""
    if hasattr(r, "get"):
        r = r.get()
    elif hasattr(r, "detach"):
        r = r.detach().cpu().numpy()
    return np.asarray(r)


def case(rng, lib, only_1d=False, dtypes=DTYPES):
    dtypes = [d for d in dtypes if lib != "torch" or d in TORCH_DTYPES]
    dt = np.dtype(str(rng.choice(dtypes)))
    layouts = LAYOUTS if lib == "numpy" else ["contiguous", "strided", "0d", "nd", "empty"] + (
        ["negative"] if lib == "cupy" else [])
    layout = str(rng.choice(layouts))
    mode = str(rng.choice(MODES))
    swapped = lib == "numpy" and bool(rng.integers(0, 2))
    return make_array(rng, dt, layout, mode, swapped, ndim1=only_1d), (dt, layout, mode, swapped)


def _quiet():
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("ignore")
    return w


def outcome(f, *also):
    """(result, None) or (None, exception type)."""
    w = _quiet()
    try:
        with np.errstate(all="ignore"):
            return f(), None
    except (ValueError, TypeError, OverflowError) + also as e:
        return None, type(e)
    finally:
        w.__exit__(None, None, None)


def same_error(ref_err, got_err, what):
    if ref_err is not None or got_err is not None:
        assert ref_err is not None and got_err is not None and issubclass(got_err, ref_err) or (
            ref_err is not None and got_err is not None and issubclass(ref_err, got_err)), \
            f"{what}: NumPy/SciPy raised {ref_err}, gpusync {got_err}"
        return True
    return False


def exact_sum(x):
    """The exact sum of finite float values (Fraction); None if any is not finite."""
    if not np.all(np.isfinite(x)):
        return None
    return sum((Fraction(float(v)) for v in np.ravel(x)), Fraction(0))


def float_sum_expect(x, dt):
    """What a correct float sum of x in dtype dt is: NaN/inf by IEEE rules for
    non-finite input, +-inf when the exact sum leaves dt's range, else the
    exact sum (compared with a rounding tolerance)."""
    x = np.ravel(x).astype(np.float64)
    if np.isnan(x).any() or (np.isposinf(x).any() and np.isneginf(x).any()):
        return np.nan, 0.0
    if np.isposinf(x).any():
        return np.inf, 0.0
    if np.isneginf(x).any():
        return -np.inf, 0.0
    ex = exact_sum(x)
    big = float(np.finfo(dt).max)
    if abs(ex) > Fraction(big) * (1 + Fraction(1, 2**(np.finfo(dt).nmant + 1))):
        return (np.inf if ex > 0 else -np.inf), 0.0
    tol = float(np.abs(x).sum()) * len(x) * 2.0**-52 + float(np.finfo(dt).eps) * abs(float(ex)) + \
        float(np.finfo(dt).smallest_subnormal)
    return float(ex), tol


def check_float(got, want, tol, what):
    got = float(got)
    if math.isnan(want) or math.isinf(want):
        assert (math.isnan(got) and math.isnan(want)) or got == want, f"{what}: got {got}, want {want}"
        return
    if math.isinf(got):  # the exact sum is within range but at its edge: allowed only within tol of it
        assert tol == math.inf or abs(want) + tol >= np.finfo(np.float64).max / 2, f"{what}: got {got}, want {want}"
        return
    assert abs(got - want) <= tol, f"{what}: got {got!r}, want {want!r} (tol {tol})"


# ----------------------------------------------------------------------------- histogram, bincount

def _hist_case(rng, lib, backend):
    a, (dt, layout, mode, swapped) = case(rng, lib)
    kind = rng.integers(0, 4)
    flat = np.ravel(a).astype(dt.newbyteorder("="))
    kw = {}
    if kind == 0:
        bins = int(rng.integers(1, 12))
    elif kind == 1:
        bins = int(rng.integers(1, 12))
        fin = flat[np.isfinite(flat.astype(np.float64))] if flat.size else flat
        if fin.size:
            lo, hi = sorted(rng.choice(fin, 2))
            kw["range"] = (lo, hi)
        else:
            kw["range"] = (0, 1)
    else:
        fin = flat[np.isfinite(flat.astype(np.float64))] if flat.size else flat
        pool = np.concatenate([fin, rng.integers(-60, 60, 4).astype(dt if dt.kind != "b" else np.uint8)])
        if kind == 3 or pool.size < 2:
            edt = np.dtype(str(rng.choice(["f8", "f4", "i8", dt.str if dt.kind != "b" else "u1"])))
        else:
            edt = dt if dt.kind != "b" else np.dtype(np.uint8)
        with np.errstate(all="ignore"):
            e = np.unique(pool.astype(edt)) if pool.size else np.arange(3, dtype=edt)
        e = e[np.isfinite(e.astype(np.float64))] if e.size else e
        if e.size < 2:
            e = np.arange(3).astype(edt)
        if rng.integers(0, 2):
            e = e[np.sort(rng.choice(e.size, min(e.size, int(rng.integers(2, 10))), replace=False))]
        bins = e
    w = None
    if rng.integers(0, 3) == 0 and a.ndim:
        wdt = np.dtype(str(rng.choice(["f8", "f4", "i4", "i8"])))
        w = (rng.standard_normal(a.shape) * 5).astype(wdt) if wdt.kind == "f" else \
            rng.integers(-1000, 1000, a.shape).astype(wdt)
        if mode == "nonfinite" and wdt.kind == "f" and np.ndim(bins) == 0 and w.size:
            w.flat[0] = np.nan  # NaN weights only with equal-width bins (module docstring)
        kw["weights"] = w
    density = bool(rng.integers(0, 5) == 0)
    if density:
        kw["density"] = True
    ref, rerr = outcome(lambda: np.histogram(a, bins, **kw), IndexError)
    if rerr is IndexError:  # NumPy's equal-width path indexes out of bounds on subnormal ranges (docstring)
        edges = np.histogram_bin_edges(a, bins, kw.get("range"), kw.get("weights"))
        ref, rerr = outcome(lambda: np.histogram(a, edges, **{k: v for k, v in kw.items() if k != "range"}))
        if rerr is None:
            ref = (ref[0], edges)
    gkw = dict(kw)
    if w is not None:
        gkw["weights"] = to_lib(w, lib)
    got, gerr = outcome(lambda: gs.histogram(to_lib(a, lib), bins, **gkw))
    what = f"histogram {dt}{' swapped' if swapped else ''} {layout} {mode} bins={bins!r} kw={list(kw)}"
    if same_error(rerr, gerr, what):
        return
    h, e = host(got[0]), host(got[1])
    if np.ndim(bins) == 0 and dt.kind == "f":
        # NumPy's equal-width path corrects its estimate by one step only; in ranges a few ulps per bin
        # wide (subnormals) it can miss the bin its own edges define, which its edge-array path (a
        # binary search) and gpusync return (docs/histogram.md) -- compare with that then
        by_edges, err = outcome(lambda: np.histogram(a, ref[1], **{k: v for k, v in kw.items() if k != "range"}))
        if err is None and not np.array_equal(by_edges[0], ref[0]) and w is None:
            ref = (by_edges[0], ref[1])
    np.testing.assert_array_equal(e, ref[1], err_msg=what)
    assert e.dtype == ref[1].dtype, what
    assert h.dtype == ref[0].dtype, what
    if w is None and not density:
        np.testing.assert_array_equal(h, ref[0], err_msg=what)
    else:
        # NumPy sums weights per block in float64 (equal-width bins) or as differences of a cumulative sum
        # in the weights' dtype (edge arrays): its error is relative to the total |weight|
        scale = float(np.abs(w[np.isfinite(w)]).sum()) if w is not None else 0.0
        f32 = w is not None and w.dtype == np.float32
        atol = scale * (2.0**-18 if f32 else 2.0**-40)
        if density:  # raw errors divided by the bin widths and the (possibly cancelling) total
            raw = np.histogram(a, ref[1], **{k: v for k, v in kw.items() if k not in ("density", "range")})[0]
            raw = raw.astype(np.float64)
            total = abs(float(raw.sum()))
            db = np.diff(ref[1].astype(np.float64))
            atol = (atol + 1e-300) / db.min() / max(total, 1e-300) * (1 + np.abs(raw).max() / max(total, 1e-300)) \
                * 4 + 1e-9
        np.testing.assert_allclose(h, ref[0], rtol=1e-6 if f32 else 1e-12, atol=atol, equal_nan=True,
                                   err_msg=what)


def test_fuzz_histogram(backend, lib, fuzz_seed):
    rng = np.random.default_rng([1, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _hist_case(rng, lib, backend)


def _bincount_case(rng, lib):
    dt = np.dtype(str(rng.choice(["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8"])))
    if lib == "torch" and dt.str[1:] not in TORCH_DTYPES and dt.char not in TORCH_DTYPES:
        dt = np.dtype(np.int32)
    layout = str(rng.choice(["contiguous", "strided", "negative", "unaligned", "empty"] if lib == "numpy"
                            else ["contiguous", "strided", "empty"]))
    swapped = lib == "numpy" and bool(rng.integers(0, 2))
    a = make_array(rng, dt, layout, "ordinary", swapped, ndim1=True)
    if dt.kind != "b" and a.size:  # mostly non-negative; sometimes one negative
        a = np.abs(a.astype(np.int64)).astype(a.dtype) if dt.kind == "i" else a
        if dt.kind == "i" and rng.integers(0, 4) == 0:
            a = a.copy()
            a[int(rng.integers(0, a.size))] = -1
    kw = {}
    if rng.integers(0, 2):
        kw["weights"] = (rng.standard_normal(a.shape) * 3).astype(str(rng.choice(["f8", "f4", "i4"])))
    if rng.integers(0, 2):
        kw["minlength"] = int(rng.integers(0, 70))
    ref, rerr = outcome(lambda: np.bincount(a, **kw))
    gkw = dict(kw)
    if "weights" in kw:
        gkw["weights"] = to_lib(kw["weights"], lib)
    got, gerr = outcome(lambda: gs.bincount(to_lib(a, lib), **gkw))
    what = f"bincount {a.dtype} {layout} kw={list(kw)}"
    if same_error(rerr, gerr, what):
        return
    g = host(got)
    assert g.dtype == ref.dtype, what
    if "weights" in kw:
        np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-9, err_msg=what)
    else:
        np.testing.assert_array_equal(g, ref, err_msg=what)


def test_fuzz_bincount(backend, lib, fuzz_seed):
    rng = np.random.default_rng([2, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _bincount_case(rng, lib)


# ----------------------------------------------------------------------------- sum, dot, cumsum

def _sum_case(rng, lib):
    a, (dt, layout, mode, swapped) = case(rng, lib)
    what = f"sum {dt}{' swapped' if swapped else ''} {layout} {mode}"
    got, gerr = outcome(lambda: gs.sum(to_lib(a, lib)))
    assert gerr is None, f"{what}: raised {gerr}"
    g = host(got)
    ref = np.sum(a)
    assert g.dtype == ref.dtype, what
    if dt.kind in "biu":
        assert int(g) == int(ref), what  # exact, modulo 2^64 like NumPy
        return
    if lib != "numpy" and dt == np.float64 and mode == "extremes":
        return  # device float64 sums are not re-added after an overflow (gpusync.sum's docstring)
    want, tol = float_sum_expect(a, dt)
    check_float(g, want, tol, what)


def test_fuzz_sum(backend, lib, fuzz_seed):
    rng = np.random.default_rng([3, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _sum_case(rng, lib)


def _dot_case(rng, lib):
    a, (dt, layout, mode, swapped) = case(rng, lib, only_1d=True)
    if a.ndim != 1:
        a = np.ravel(a)
    b = make_array(rng, dt, "contiguous", mode if mode != "extremes" else "ordinary", swapped, ndim1=True)
    b = np.resize(b, a.shape) if b.size else np.zeros(a.shape, dt)
    b = b.astype(dt)
    what = f"dot {dt} {layout} {mode}"
    ref, rerr = outcome(lambda: np.dot(a, b))
    got, gerr = outcome(lambda: gs.dot(to_lib(a, lib), to_lib(b, lib)))
    if same_error(rerr, gerr, what):
        return
    g = host(got)
    assert g.dtype == np.asarray(ref).dtype, what
    if dt.kind in "biu":
        assert g == ref, what
        return
    prods = a.astype(np.float64) * b.astype(np.float64)
    with np.errstate(all="ignore"):
        want, tol = float_sum_expect(prods, dt)
    check_float(g, want, tol + float(np.abs(prods[np.isfinite(prods)]).sum()) * 2.0**-40 if np.isfinite(want) else tol,
                what)


def test_fuzz_dot(backend, lib, fuzz_seed):
    rng = np.random.default_rng([4, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _dot_case(rng, lib)


def _cumsum_case(rng, lib):
    a, (dt, layout, mode, swapped) = case(rng, lib)
    what = f"cumsum {dt}{' swapped' if swapped else ''} {layout} {mode}"
    got, gerr = outcome(lambda: gs.cumsum(to_lib(a, lib)))
    ref = np.cumsum(a)
    assert gerr is None, f"{what}: raised {gerr}"
    g = host(got)
    assert g.dtype == ref.dtype and g.shape == ref.shape, what
    if dt.kind in "biu":
        np.testing.assert_array_equal(g, ref, err_msg=what)
        return
    x = np.ravel(a).astype(np.float64)
    nonfin = ~np.isfinite(x)
    # prefixes containing inf / NaN follow IEEE rules whatever the order
    seen_nan = np.cumsum(np.isnan(x)) > 0
    pinf, ninf = np.cumsum(np.isposinf(x)) > 0, np.cumsum(np.isneginf(x)) > 0
    expect_nan = seen_nan | (pinf & ninf)
    assert np.array_equal(np.isnan(g) & expect_nan, expect_nan), what
    sel = pinf & ~expect_nan
    assert np.all(g[sel] == np.inf), what
    sel = ninf & ~expect_nan & ~pinf
    assert np.all(g[sel] == -np.inf), what
    fin = ~(seen_nan | pinf | ninf)
    if not nonfin.any():
        run = np.cumsum(np.abs(x))
        ok = fin & (run < float(np.finfo(dt).max) / 4)  # partial sums in range: order cannot overflow
        exact = np.array([float(v) if abs(v) < 2**1023 else np.inf
                          for v in np.cumsum([Fraction(float(v)) for v in x])]) if x.size else x
        tol = run * x.size * 2.0**-52 + np.abs(exact) * float(np.finfo(dt).eps) + float(np.finfo(dt).smallest_subnormal)
        assert np.all(np.abs(g.astype(np.float64)[ok] - exact[ok]) <= tol[ok]), what


def test_fuzz_cumsum(backend, lib, fuzz_seed):
    rng = np.random.default_rng([5, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _cumsum_case(rng, lib)


# ----------------------------------------------------------------------------- bits

def _threshold(rng, dt, a):
    k = rng.integers(0, 5)
    if k == 0:
        return None
    flat = np.ravel(a)
    if k == 1:
        return float(rng.standard_normal() * 10)
    if k == 2:
        return int(rng.integers(-60, 60))
    if k == 3:
        return np.float64(rng.standard_normal())
    return np.float32(flat[0]) if flat.size and dt.kind == "f" else np.float32(0.5)


def _bits_case(rng, lib, func):
    a, (dt, layout, mode, swapped) = case(rng, lib, only_1d=func == "packbits")
    if func == "packbits" and a.ndim != 1:
        a = np.ravel(a)
    thr = _threshold(rng, dt, a)
    what = f"{func} {dt}{' swapped' if swapped else ''} {layout} {mode} threshold={thr!r}"
    pred = (np.ravel(a) != 0) if thr is None else (np.ravel(a) > thr)
    if func == "packbits":
        order = str(rng.choice(["big", "little"]))
        got = host(gs.packbits(to_lib(a, lib), bitorder=order, threshold=thr))
        np.testing.assert_array_equal(got, np.packbits(pred, bitorder=order), err_msg=what)
    else:
        got = int(host(gs.count_nonzero(to_lib(a, lib), threshold=thr)))
        assert got == int(np.count_nonzero(pred)), what


def test_fuzz_packbits(backend, lib, fuzz_seed):
    rng = np.random.default_rng([6, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _bits_case(rng, lib, "packbits")


def test_fuzz_count_nonzero(backend, lib, fuzz_seed):
    rng = np.random.default_rng([7, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _bits_case(rng, lib, "count_nonzero")


# ----------------------------------------------------------------------------- binned_statistic

def _binstat_case(rng, lib):
    import scipy.stats

    dts = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]
    x, (dt, layout, mode, swapped) = case(rng, lib, only_1d=True, dtypes=dts)
    if x.ndim != 1:
        x = np.ravel(x)
    vmode = str(rng.choice(MODES))
    v = make_array(rng, np.dtype(str(rng.choice(["f8", "f4", "i4"]))), "contiguous", vmode, swapped, ndim1=True)
    v = np.resize(v, x.shape) if v.size else np.zeros(x.shape, v.dtype)
    stat = str(rng.choice(["count", "sum", "mean", "std", "min", "max"]))
    if rng.integers(0, 2) or x.size == 0:
        bins = int(rng.integers(1, 10))
    else:
        xf = x.astype(np.float64)
        fin = np.unique(xf[np.isfinite(xf)])
        bins = np.sort(rng.choice(fin, min(fin.size, int(rng.integers(2, 8))), replace=False)) if fin.size >= 2 \
            else np.array([0.0, 1.0, 2.0])
    kw = {}
    if rng.integers(0, 3) == 0 and np.ndim(bins) == 0:
        xf = x.astype(np.float64)
        fin = xf[np.isfinite(xf)]
        kw["range"] = tuple(sorted(rng.choice(fin, 2))) if fin.size else (0.0, 1.0)
    what = f"binned_statistic x={dt}{' swapped' if swapped else ''} {layout} {mode} v={v.dtype} {vmode} {stat} " \
           f"bins={bins!r} {kw}"
    ref, rerr = outcome(lambda: scipy_binned_statistic(x, v, stat, bins, **kw))
    got, gerr = outcome(lambda: gs.binned_statistic(to_lib(x, lib), to_lib(v, lib), stat, bins, **kw))
    if same_error(rerr, gerr, what):
        return
    edges = np.asarray(ref.bin_edges)
    np.testing.assert_array_equal(host(got.bin_edges), edges, err_msg=what)
    gb, rb = host(got.binnumber), np.asarray(ref.binnumber)
    keep = np.ones(x.shape, bool)
    dmin = np.diff(edges).min()
    decimal = int(-np.log10(dmin)) + 6
    with np.errstate(all="ignore"):
        top = np.around(edges[-1:], decimal)
        at_top = x[x >= edges[-1]]
        rounded = np.around(at_top, decimal).astype(np.float64)
        overflow = not np.all(np.isfinite(rounded)) or (  # integers wrap in np.around
            x.dtype.kind in "iu" and not np.array_equal(rounded, np.around(at_top.astype(np.float64), decimal)))
    if not np.all(np.isfinite(top)) or overflow:
        keep = x.astype(np.float64) < edges[-1]  # SciPy's on-edge test overflowed (module docstring)
        ok_bins = np.ones(len(edges) - 1, bool)
        ok_bins[-1] = False
    else:
        ok_bins = np.ones(len(edges) - 1, bool)
    np.testing.assert_array_equal(gb[keep], rb[keep], err_msg=what)
    gs_stat, ref_stat = host(got.statistic), np.asarray(ref.statistic)
    vf = v.astype(np.float64)
    if stat in ("mean", "std", "sum"):  # SciPy's float64 bin sums overflow (module docstring)
        for k in range(len(edges) - 1):
            sel = rb == k + 1
            if np.isfinite(vf[sel]).all() and np.abs(vf[sel]).sum() > 2.0**1020:
                ok_bins[k] = False
    if stat in ("count", "min", "max"):  # no rounding anywhere: exact
        np.testing.assert_array_equal(gs_stat[ok_bins], ref_stat[ok_bins], err_msg=what)
        return
    with np.errstate(over="ignore"):
        tol_scale = np.array([np.abs(vf[(rb == k + 1) & np.isfinite(vf)]).sum() for k in range(len(edges) - 1)])
    atol = float(tol_scale[ok_bins].max(initial=0)) * 1e-12
    assert np.isfinite(atol), what
    np.testing.assert_allclose(gs_stat[ok_bins], ref_stat[ok_bins], rtol=1e-6 if v.dtype == np.float32 else 1e-9,
                               atol=atol, equal_nan=True, err_msg=what)


def test_fuzz_binned_statistic(backend, lib, fuzz_seed):
    rng = np.random.default_rng([8, fuzz_seed])
    for _ in range(CASES_PER_SEED):
        _binstat_case(rng, lib)
