"""Complex numbers in sum, cumsum, count_nonzero and dot: the float kernels
on a real view.

A complex64 / complex128 array is a float32 / float64 array with a trailing
axis of 2 (real, imaginary) -- NumPy's strided view of the same memory,
CuPy's ``view`` of a contiguous array, PyTorch's ``view_as_real``.  So

* the sum of a complex array over some axes is the float sum of that view
  over the same axes (the trailing axis kept), read back as complex; a real
  input with a complex ``dtype=`` is summed in the float of that width and
  made complex;
* its cumsum along an axis is the float scan of the view along that axis
  (axis None: of the flattened array's view);
* an element counts for count_nonzero when ``x != 0`` (real or imaginary
  part non-zero, NaN included);
* the dot of two complex vectors (np.dot, no conjugation) is two float dots
  of 2n elements: real = view(a) . view(conj(b)) (ar br - ai bi) and
  imag = view(a) . swap(view(b)) (ar bi + ai br).

NumPy's argument rules (axis, dtype, out, keepdims, initial, where, their
errors and ComplexWarnings) are checked first by the same code that checks
them for real inputs (``_axis.sum_args`` / ``cumsum_args``), on proxies of
the complex input's shape and dtype; the work then runs on the real path
(``_axis.reduce`` / ``_axis.cumsum`` / the dot reduction), for NumPy arrays
and for CuPy / PyTorch device arrays alike (the few array operations below
are each library's own).  The C fast paths take no complex input: they
return NotImplemented and the callers come here.
"""
from __future__ import annotations

import math

import numpy as np

from . import _arrays, _core, _dispatch
from . import _axis as _nd

_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)
_SUPPORTED = "bool, integer, float16/32/64 and complex64/128 arrays are"


# ---- detection ----------------------------------------------------------------------------------------------

def _kind(obj) -> str:
    """The dtype kind of an array-like (``"c"`` for complex), cheaply; ``""``
    where it cannot be told without converting (the real path decides)."""
    dt = getattr(obj, "dtype", None)
    if dt is None:
        if isinstance(obj, complex):
            return "c"
        if isinstance(obj, (list, tuple)):
            try:
                return np.asarray(obj).dtype.kind
            except Exception:  # noqa: BLE001 - ragged or device lists: the real path gives the error
                return ""
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return np.dtype(cai["typestr"]).kind
        iface = getattr(obj, "__array_interface__", None)
        if isinstance(iface, dict) and "typestr" in iface:
            return np.dtype(iface["typestr"]).kind
        if hasattr(obj, "__array__") and not hasattr(obj, "__dlpack_device__"):  # a host array-like: as NumPy reads it
            try:
                return np.asarray(obj).dtype.kind
            except Exception:  # noqa: BLE001 - the real path gives the error
                return ""
        return ""
    if isinstance(dt, np.dtype):
        return dt.kind
    return "c" if getattr(dt, "is_complex", False) else ""  # a torch.dtype


def _complex_dtype(dtype) -> bool:
    if dtype is None:
        return False
    try:
        return np.dtype(dtype).kind == "c"
    except TypeError:  # not a dtype NumPy knows: the real path raises its error
        return False


def takes(a, dtype=None, out=None) -> bool:
    """Whether a sum / cumsum (or, with `a` alone, a count_nonzero or a dot
    operand) involves complex numbers: a complex input, ``dtype`` or
    ``out``.  Called after the fast paths, which never take such calls."""
    if dtype is not None and _complex_dtype(dtype):
        return True
    if out is not None:
        o = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if _kind(o) == "c":
            return True
    return _kind(a) == "c"


# ---- the array operations of each library -------------------------------------------------------------------

def _real_dtype(cdt: np.dtype) -> np.dtype:
    """float32 of complex64, float64 of complex128."""
    return np.dtype(cdt.type(0).real.dtype)


class _NumPy:
    name = "numpy"
    device = False

    @staticmethod
    def view2(x):
        """The (..., 2) float view of a complex array: same memory, any strides."""
        r = x.real  # a view: the real parts, the input's strides
        return np.lib.stride_tricks.as_strided(r, tuple(x.shape) + (2,), tuple(x.strides) + (r.itemsize,),
                                               writeable=False)

    @staticmethod
    def to_complex(r, cdt):
        """The complex array whose (..., 2) float view `r` is (float dtype of `cdt`)."""
        r = np.ascontiguousarray(r)
        return r.reshape(-1).view(cdt).reshape(r.shape[:-1])

    @staticmethod
    def astype(r, dt):
        return np.asarray(r).astype(dt)

    @staticmethod
    def real(x):
        return x.real

    @staticmethod
    def imag(x):
        return x.imag

    @staticmethod
    def conj(x):
        return np.conj(x)

    @staticmethod
    def flat(x):
        return x.reshape(-1)

    @staticmethod
    def swap(v):
        return v[..., ::-1]

    @staticmethod
    def complex_of(re, im, cdt):
        """The complex array of `cdt` with real parts `re` and imaginary parts `im` (one shape)."""
        res = np.empty(np.shape(re), cdt)
        res.real, res.imag = re, im
        return res

    @staticmethod
    def mask(w):
        """`where` with a trailing axis of 1 (broadcasts against the view): a
        device mask stays on its device, anything else becomes a NumPy array."""
        return w[..., None] if _is_device_mask(w) else np.asarray(w)[..., None]

    @staticmethod
    def add(res, init):
        return np.add(res, init, out=res)

    @staticmethod
    def mul(x, y):
        return x * y


def _is_device_mask(w):
    return hasattr(w, "__cuda_array_interface__") or type(w).__module__.split(".")[0] in ("cupy", "torch")


class _CuPy(_NumPy):
    name = "cupy"
    device = True

    def __init__(self):
        import cupy

        self.cp = cupy

    def view2(self, x):
        x = self.cp.ascontiguousarray(x)
        return x.reshape(-1).view(_real_dtype(np.dtype(x.dtype))).reshape(tuple(x.shape) + (2,))

    def to_complex(self, r, cdt):
        r = self.cp.ascontiguousarray(r)
        return r.reshape(-1).view(cdt).reshape(r.shape[:-1])

    def astype(self, r, dt):
        return r.astype(dt)

    def conj(self, x):
        return self.cp.conj(x)

    def complex_of(self, re, im, cdt):
        res = self.cp.empty(re.shape, cdt)
        v = res.reshape(-1).view(_real_dtype(cdt)).reshape(tuple(res.shape) + (2,))
        v[..., 0] = re
        v[..., 1] = im
        return res

    def add(self, res, init):
        res += complex(init)
        return res


class _Torch(_NumPy):
    name = "torch"
    device = True

    def __init__(self):
        import torch

        self.torch = torch

    def _dt(self, dt):
        return getattr(self.torch, np.dtype(dt).name)

    def view2(self, x):
        return self.torch.view_as_real(x.resolve_conj())

    def to_complex(self, r, cdt):
        return self.torch.view_as_complex(r.contiguous())

    def astype(self, r, dt):
        return r.to(self._dt(dt))

    def imag(self, x):
        return x.resolve_conj().imag

    def conj(self, x):
        return x.conj().resolve_conj()

    def swap(self, v):
        return v[..., [1, 0]]  # (PyTorch has no negative steps)

    def complex_of(self, re, im, cdt):
        return self.torch.complex(re, im)

    def add(self, res, init):
        return res + complex(init)


_LIBS: dict = {}


def _lib(name):
    if name not in _LIBS:
        _LIBS[name] = {"numpy": _NumPy, "cupy": _CuPy, "torch": _Torch}[name]()
    return _LIBS[name]


def _prepare(a):
    """(array, its library's operations): a NumPy array for host data (lists,
    scalars, CPU tensors), the CuPy array or PyTorch tensor itself for
    device data (another ``__cuda_array_interface__`` / DLPack producer
    through CuPy, else PyTorch, zero-copy)."""
    if type(a) is np.ndarray:
        return a, _lib("numpy")
    mod = type(a).__module__.split(".")[0]
    if mod == "cupy" and hasattr(a, "__cuda_array_interface__"):
        return a, _lib("cupy")
    if mod == "torch" and hasattr(a, "is_cuda"):
        if a.is_cuda:
            return a, _lib("torch")
        return np.asarray(a.detach().resolve_conj()), _lib("numpy")
    dev = _arrays._device_target(a)
    if dev is not None:
        for name in ("cupy", "torch"):
            mod = _arrays._import(name)
            if mod is None:
                continue
            if name == "cupy":
                return (mod.asarray(a) if hasattr(a, "__cuda_array_interface__") else mod.from_dlpack(a)), _lib(name)
            return (mod.as_tensor(a, device=f"cuda:{dev[1]}") if hasattr(a, "__cuda_array_interface__")
                    else mod.from_dlpack(a)), _lib(name)
        raise TypeError("a complex device array needs CuPy or PyTorch installed")
    if hasattr(a, "__dlpack__") and not isinstance(a, np.generic):
        return np.from_dlpack(a), _lib("numpy")
    return np.asarray(a), _lib("numpy")


def _np_dtype(x) -> np.dtype:
    dt = x.dtype
    return dt if isinstance(dt, np.dtype) else np.dtype(str(dt).replace("torch.", ""))


def _check(dt: np.dtype, func: str, name="a"):
    """TypeError for complex dtypes the float kernels cannot take (clongdouble)."""
    if dt.kind == "c" and dt.newbyteorder("=") not in (_C64, _C128):
        what = f"dtype {dt} is" if name == "dtype" else f"{name} has dtype {dt}, which is"
        raise TypeError(f"{func}: {what} not supported ({_SUPPORTED})")


def _to_real(x, ops, target):
    """NumPy's cast of complex `x` toward the real dtype `target`: the real
    parts (with the ComplexWarning the argument check gave), but ``x != 0``
    for bool (either part non-zero)."""
    return x != 0 if np.dtype(target).kind == "b" else ops.real(x)


def _out_dtype(out):
    """An out's NumPy dtype (NumPy, CuPy, PyTorch), without a copy."""
    o = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return _np_dtype(o)


class _Owner:
    """What _axis._write_out needs of the input: its library's name."""

    def __init__(self, lib):
        self.lib = lib


def _finish(res, out, ops):
    """The complex result `res` written into `out` (its real part into a
    real out: NumPy's cast, whose ComplexWarning the argument check gave),
    or returned (a NumPy scalar for a 0-d host result)."""
    if out is not None:
        if _kind(out) != "c":
            res = _to_real(res, ops, _out_dtype(out))
        return _nd._write_out(res, out, _Owner(ops.name))
    if not ops.device and res.ndim == 0:
        return res[()]
    return res


# ---- host inputs: NumPy's own loops --------------------------------------------------------------------------

def _numpy_runs(op, x, *ops_list, others=()):
    """Whether NumPy itself runs this call: every operand (and `others`:
    out, where) on the host, and no engine forced (use_backend /
    GPUSYNC_BACKEND / GPUSYNC_ENGINE).  gpusync has no complex kernel: the
    real view costs a host input extra passes and copies (10M complex64 on
    two cores: sum 18 ms, dot 73 ms against NumPy's 4 and 3 ms), and the GPU
    is bound by PCIe below the host's memory speed, so NumPy's own loop is
    the fastest engine a host input has.  The plan says so."""
    if any(o.device for o in ops_list) or any(_is_device_mask(v) for v in others if v is not None):
        return False
    if _dispatch.forced_backend() is not None or _dispatch.env_engine() != "auto":
        return False
    _dispatch.record(op, engine="caller", strategy="auto", used="numpy", n=int(np.size(x)), dtype=_np_dtype(x),
                     notes=["complex host input: NumPy's own loop (gpusync has no complex kernel)"])
    return True


# ---- sum ----------------------------------------------------------------------------------------------------

_FAST_PLAIN = (_C64, _C128)


def _engine_free() -> bool:
    """No engine forced (use_backend / GPUSYNC_BACKEND / GPUSYNC_ENGINE): the fast routes below may choose."""
    return _dispatch.forced_backend() is None and _dispatch.env_engine() == "auto"


def _sum_impl(v):
    from ._reduce import _sum_impl as run  # (_reduce imports this module)

    return run(v)


def plain_sum(a):
    """gs.sum(a) of a complex array with every other argument at its default
    (strategy auto), or NotImplemented (the general path below):

    * a NumPy complex64 / complex128 C-contiguous array, short or on a
      machine with a pool of 8 threads or more (_core.fast_complex_takes,
      module.c's rule): the float sums of its real and of its imaginary
      parts (strided, in place; float64 accumulation), then +0 (NumPy's
      complex sums start from +0: an all -0.0 part sums to +0).  NumPy's own
      loop is one thread (H200 host, 10^7 complex128: 19.7 ms against
      torch's 0.92 ms) but beat both our sums on a 2-core box.  A non-finite
      part: NumPy's own call, which owns inf / NaN there.
    * a CuPy array or a CUDA PyTorch tensor: the library's own sum (CUB),
      on the array's stream -- gpusync has no complex kernel, and the
      general path's (n, 2) view sum plus the conversion back cost
      0.18-0.28 ms a call against CuPy / torch's 0.015-0.06 ms (r272)."""
    t = type(a)
    if t is np.ndarray:
        dt = a.dtype
        if dt not in _FAST_PLAIN or not a.size or not a.flags.c_contiguous or not _engine_free():
            return NotImplemented
        _dispatch.fast_ready()  # (the next call: the C fast path, module.c fast_complex_sum, by its rule)
        if not _core.fast_complex_takes(a.size):
            return NotImplemented  # (NumPy's own loop: one fast thread against a small pool)
        v = a.reshape(-1).view(_real_dtype(dt))
        re, im = _sum_impl(v[0::2]), _sum_impl(v[1::2])  # (the engine the cost model picks; strided in place)
        re, im = float(re), float(im)
        if not (math.isfinite(re) and math.isfinite(im)):
            return NotImplemented
        p = _dispatch.last_plan()  # (the view's sum: the plan of the complex call)
        _dispatch.record("sum", engine=p["engine"], strategy="auto", used=p["strategy_used"], n=a.size, dtype=dt,
                         threads=p["threads"], notes=["complex: the float sums of the real and imaginary parts"])
        return dt.type(complex(re + 0.0, im + 0.0))
    mod = t.__module__.split(".")[0]
    if mod not in ("cupy", "torch") or not _engine_free():
        return NotImplemented
    if mod == "torch" and not getattr(a, "is_cuda", False):
        return NotImplemented
    dt = _np_dtype(a)
    if dt not in _FAST_PLAIN:
        return NotImplemented
    res = a.sum()
    _dispatch.record("sum", engine="cuda", strategy="auto", used=f"{mod}.sum", n=int(a.numel() if mod == "torch"
                                                                                    else a.size),
                     dtype=dt, place="device", notes=["complex device input: the library's own sum (gpusync has "
                                                      "no complex kernel)"])
    return res


def plain_dot(a, b):
    """gs.dot(a, b) of two 1-D arrays of one length, at least one complex,
    with no out and strategy auto, or NotImplemented: NumPy arrays -- NumPy's
    own np.dot (BLAS zdotu / cdotu, threaded: 10^7 complex128 2.16 ms on the
    H200 host, where the two float dots of the real views took 2.49 ms and
    1,000 elements 18.6 us against 1.7 us, r272); CuPy arrays -- cupy.dot
    (cuBLAS); CUDA PyTorch tensors of one dtype -- torch.dot.  gpusync has
    no complex kernel; the general path's four real passes and copies are
    what these calls replaced."""
    ta, tb = type(a), type(b)
    if ta is not tb or not _engine_free():
        return NotImplemented
    if ta is np.ndarray:
        da, db = a.dtype, b.dtype
        if (da.kind != "c" and db.kind != "c") or a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
            return NotImplemented
        if (da.kind == "c" and da not in _FAST_PLAIN) or (db.kind == "c" and db not in _FAST_PLAIN) or \
                da.kind not in "biufc" or db.kind not in "biufc" or np.longdouble in (da.type, db.type):
            return NotImplemented
        _dispatch.fast_ready()  # (the next call: the C fast path's own np.dot, module.c fast_complex_dot)
        res = np.dot(a, b)
        _dispatch.record("dot", engine="caller", strategy="auto", used="numpy", n=a.shape[0], dtype=res.dtype,
                         notes=["complex host input: NumPy's own np.dot (gpusync has no complex kernel)"])
        return res
    mod = ta.__module__.split(".")[0]
    if mod not in ("cupy", "torch") or a.ndim != 1 or b.ndim != 1 or tuple(a.shape) != tuple(b.shape):
        return NotImplemented
    da, db = _np_dtype(a), _np_dtype(b)
    if not ((da in _FAST_PLAIN and db in _FAST_PLAIN) or (da in _FAST_PLAIN and db.kind in "biuf") or
            (db in _FAST_PLAIN and da.kind in "biuf")):
        return NotImplemented
    if mod == "torch":
        if da != db or not a.is_cuda or a.device != b.device:  # (torch.dot takes one dtype and device)
            return NotImplemented
        res = __import__("torch").dot(a.resolve_conj(), b.resolve_conj())
    else:
        if a.device != b.device:
            return NotImplemented
        res = __import__("cupy").dot(a, b)
    _dispatch.record("dot", engine="cuda", strategy="auto", used=f"{mod}.dot", n=int(a.shape[0]),
                     dtype=np.result_type(da, db), place="device",
                     notes=["complex device input: the library's own dot (gpusync has no complex kernel)"])
    return res


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):  # noqa: A001
    """np.sum with a complex input, dtype or out (takes() is true)."""
    x, ops = _prepare(a)
    xdt = _np_dtype(x)
    _check(xdt, "sum")
    if _numpy_runs("sum", x, ops, others=(out, where)):
        return np.sum(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    shape = tuple(x.shape)
    axis, axes, out, _ref, loop, init = _nd.sum_args("sum", shape, xdt, axis, dtype, out, keepdims, initial, where,
                                                     src=x if isinstance(x, np.ndarray) else None)
    if loop.kind != "c":
        # a real accumulator: NumPy casts each element to it (a complex one: its real part, with the
        # ComplexWarning sum_args gave) -- the real path, with every argument as given
        if xdt.kind == "c":
            x = _to_real(x, ops, loop)
        return _nd.reduce("sum", _nd.SUM, x, axis, dtype, out, keepdims, initial, where)
    _check(loop, "sum", "dtype")
    fl = _real_dtype(loop)
    if xdt.kind == "c":  # the float sums of the (..., 2) view over the same axes
        w = where if where is True else ops.mask(where)
        r = _nd.reduce("sum", _nd.SUM, ops.view2(x), axes, fl, None, keepdims, 0, w)
        res = ops.to_complex(r, loop)
    else:  # a real input summed in the float of the complex dtype's width
        r = _nd.reduce("sum", _nd.SUM, x, axis, fl, None, keepdims, 0, where)
        res = ops.astype(r, loop)
    # initial, or +0: NumPy's complex sums start from +0, so an all -0.0 sum is +0 (the float kernels keep -0.0)
    res = ops.add(res, loop.type(0) if init is None else init)
    return _finish(res, out, ops)


# ---- cumsum -------------------------------------------------------------------------------------------------

def cumsum(a, axis, dtype, out, flat_scan):
    """np.cumsum with a complex input, dtype or out (takes() is true)."""
    x, ops = _prepare(a)
    xdt = _np_dtype(x)
    _check(xdt, "cumsum")
    ax, shape, res_shape, rt, out = _nd.cumsum_args(tuple(x.shape), xdt, axis, dtype, out)
    # NumPy's casting warnings and errors (a ComplexWarning for a real dtype or out) on a 1-element proxy
    small = np.zeros((1,) * len(x.shape), xdt)
    outp = None if out is None else _nd._host_out_proxy(out)
    np.cumsum(small, axis=axis, dtype=dtype,
              out=None if outp is None else np.empty((1,) * max(1 if axis is None else len(x.shape), 1), outp.dtype))
    if rt.kind != "c":  # a real accumulator: the real path on the real parts (NumPy's cast)
        return _nd.cumsum(_to_real(x, ops, rt) if xdt.kind == "c" else x, axis, dtype, out, flat_scan)
    _check(rt, "cumsum", "dtype")
    fl = _real_dtype(rt)
    if xdt.kind == "c" and (ax is None or len(shape) == 1):
        # one line (the flattened array, or 1-D): the flat scans -- the strategy kernels -- of the real
        # parts and of the imaginary parts (strided views: the device kernels read them in place)
        x = ops.flat(x)
        re = _nd.cumsum(ops.real(x), None, fl, None, flat_scan)
        im = _nd.cumsum(ops.imag(x), None, fl, None, flat_scan)
        res = ops.complex_of(re, im, rt)
    elif xdt.kind == "c":  # along an axis of an N-D array: the segmented scan of the (..., 2) view along it
        res = ops.to_complex(_nd.cumsum(ops.view2(x), ax, fl, None, flat_scan), rt)
    else:
        res = ops.astype(_nd.cumsum(x, axis, fl, None, flat_scan), rt)
    return _finish(res.reshape(res_shape), out, ops)


# ---- count_nonzero ------------------------------------------------------------------------------------------

def nonzero_mask(a, threshold=None):
    """The boolean array ``a != 0`` of a complex input (true where the real
    or the imaginary part is non-zero), in its own library, for
    count_nonzero's real path."""
    x, _ops = _prepare(a)
    _check(_np_dtype(x), "count_nonzero")
    if threshold is not None:
        raise TypeError("count_nonzero: threshold= compares values with >, which complex numbers do not have "
                        "(count a.real > t or abs(a) > t instead)")
    return x != 0


# ---- dot ----------------------------------------------------------------------------------------------------

def dot(a, b, out, real_dot):
    """np.dot with a complex operand; `real_dot(u, v)` is the dot of two real
    1-D arrays (with the caller's strategy), which also raises NumPy's errors
    for shapes that are not two vectors of one length."""
    x, ops = _prepare(a)
    y, ops_y = _prepare(b)
    dx, dy = _np_dtype(x), _np_dtype(y)
    _check(dx, "dot", "a")
    _check(dy, "dot", "b")
    if ops_y.device and not ops.device:
        ops = ops_y
    rt = np.result_type(dx, dy)
    sx, sy = tuple(x.shape), tuple(y.shape)
    if not sx or not sy:  # np.dot of a scalar: a product in the common dtype
        if not ops.device:
            return np.dot(x, y, out=out)  # NumPy's own (its out rules and errors)
        dev = _arrays._device_target(y if ops_y.device else x)[1]
        res = ops.mul(_on(ops, x, rt, dev), _on(ops, y, rt, dev))
        return res if out is None else _nd._write_out(res, out, _Owner(ops.name))
    if len(sx) != 1 or len(sy) != 1 or sx != sy:  # the real dot's errors for these shapes
        real_dot(np.broadcast_to(np.zeros((), np.float64), sx), np.broadcast_to(np.zeros((), np.float64), sy))
    if out is not None:
        op = _nd._host_out_proxy(out)
        if op.shape != () or op.dtype != rt or not op.flags.c_contiguous:
            raise ValueError("output array is not acceptable (must have the right datatype, number of "
                             "dimensions, and be a C-Array)")
    if _numpy_runs("dot", x, ops, ops_y, others=(out,)):  # (after gpusync's shape rules: 1-D vectors only)
        return np.dot(x, y, out=out)
    x, y = _on(ops, x, rt), _on(ops, y, rt)  # (a host and a device vector: the real dot's error)
    va = ops.flat(ops.view2(x))  # (ar, ai) pairs
    re = real_dot(va, ops.flat(ops.view2(ops.conj(y))))  # ar br - ai bi
    im = real_dot(va, ops.flat(ops.swap(ops.view2(y))))  # ar bi + ai br
    res = ops.complex_of(re, im, rt)
    if out is None:
        return res[()] if not ops.device else res
    written = _nd._write_out(res, out, _Owner(ops.name))
    return written[()] if type(written) is np.ndarray else written  # NumPy returns the value, not the 0-d out


def _on(ops, v, dt, device=None):
    """`v` as an array of `dt` (with `device`: a host scalar moved to that device of the library of `ops`)."""
    if device is not None and isinstance(v, np.ndarray):
        v = _arrays.Lib.of(ops.name).from_host(np.asarray(v, dt), device)
    if _np_dtype(v) != dt:
        v = (_lib("numpy") if isinstance(v, np.ndarray) else ops).astype(v, dt)
    return v
