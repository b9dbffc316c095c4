"""Array interop: NumPy on the host, CuPy / PyTorch / Numba (or anything with
``__cuda_array_interface__`` or ``__dlpack__``) on the device.

Device arrays are used in place: we read their pointer, length, stride and
dtype, and hand the C core a descriptor tuple ``(ptr, length, stride, dtype
code, device)``.  Results are allocated with the input's own library, on the
input's device and stream, so that a CuPy input gives a CuPy result, a PyTorch
tensor a tensor, and so on.
"""
from __future__ import annotations

import contextlib
import contextvars
import operator as _operator
import functools
import threading
import warnings

import numpy as np

from . import _core

# gs_dtype codes: defined once in C (gpusync.h), exported by the binding
_DTYPE_CODES = {np.dtype(name): code for name, code in _core.DTYPES.items()}

_KDLCPU, _KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED = 1, 2, 3, 13

# The raw cudaStream_t of the call in progress when it was given `stream=`
# (None: each device array's own stream).  Per thread, per task.
_CALL_STREAM: contextvars.ContextVar = contextvars.ContextVar("gpusync_call_stream", default=None)


def stream_handle(stream):
    """The raw ``cudaStream_t`` (an int) of a ``stream=`` argument.

    Takes an int handle (0 is the legacy default stream, 1 and 2 CUDA's
    ``cudaStreamLegacy`` and ``cudaStreamPerThread``), anything with the CUDA
    stream protocol ``__cuda_stream__`` (cuda.core, CuPy 13+), a
    ``cupy.cuda.Stream`` (``.ptr``), a ``torch.cuda.Stream``
    (``.cuda_stream``) or a Numba stream (``int(stream)``).
    """
    if isinstance(stream, (bool, float)):
        raise TypeError(f"stream must be a CUDA stream or its integer handle; got {stream!r}")
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        stream = proto()[1]
    elif hasattr(stream, "cuda_stream"):
        stream = stream.cuda_stream
    elif hasattr(stream, "ptr") and not isinstance(stream, int):
        stream = stream.ptr
    try:
        handle = int(stream)
    except (TypeError, ValueError):
        raise TypeError("stream must be a CUDA stream (CuPy, PyTorch, Numba, cuda.core) or its integer "
                        f"handle; got {type(stream).__name__}") from None
    if handle < 0 or handle >= 1 << 64:
        raise ValueError(f"stream handle {handle} is not a pointer")
    return handle


_STREAM_DOC = """
    ``stream``: the CUDA stream to run on -- an int ``cudaStream_t`` or a
    CuPy / PyTorch / Numba / ``__cuda_stream__`` stream -- ordered after the
    input's producer (its library's current stream, its CAI v3 stream, or
    DLPack's ``stream`` argument) without a host wait; results are allocated
    on it.  Host arrays are staged and computed on it.  See "Streams" in
    docs/index.md.
    """


def takes_stream(func):
    """Document a public function's ``stream=`` argument (one text for all)."""
    func.__doc__ = (func.__doc__ or "").rstrip() + "\n" + _STREAM_DOC
    return func


def host_stream() -> int:
    """The stream host-array work is enqueued on: ``stream=``, else 0."""
    s = _CALL_STREAM.get()
    return 0 if s is None else s


def _device_target(obj):
    """(library, device) of a device-array argument, None for host data."""
    if isinstance(obj, np.ndarray):
        return None
    if hasattr(obj, "__cuda_array_interface__"):
        lib = _lib_name(obj)
        return lib, _device_of(obj, lib, int(obj.__cuda_array_interface__["data"][0]))
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, dev_id = obj.__dlpack_device__()
        if dev_type in (_KDLCUDA, _KDLCUDAMANAGED):
            for lib in ("cupy", "torch"):
                if _import(lib) is not None:
                    return lib, int(dev_id)
    return None


_NO_STREAM = contextlib.nullcontext()


def call_stream(stream, first):
    """Run a call on `stream` (a ``stream=`` argument; None: nothing to do,
    and no generator to run: the per-call cost of the common case)."""
    return _NO_STREAM if stream is None else _call_stream(stream, first)


@contextlib.contextmanager
def _call_stream(stream, first):
    """call_stream with a stream.

    `first` is the call's first array argument.  When it is a device array,
    the stream is first ordered after the work its library has enqueued on its
    current stream (no host wait), and the library's current stream is the
    given one for the call, so the results are allocated and any library
    operation on them runs on it.  Device arrays whose
    ``__cuda_array_interface__`` names another stream are ordered after that
    one too (as_input), and a ``__dlpack__``-only array is exported with this
    stream as DLPack's ``stream`` argument.  Host arrays: the staging and the
    kernels run on the stream of the current device, and the call waits.
    """
    handle = stream_handle(stream)
    token = _CALL_STREAM.set(handle)
    try:
        target = _device_target(first)
        if target is None:
            yield
            return
        lib, device = target
        _need_cuda("stream")
        impl = Lib.of(lib)  # an unknown CAI producer's results: CuPy's, else PyTorch's
        if lib in ("cupy", "torch") and hasattr(first, "__cuda_array_interface__"):
            producer = impl.current_stream(device)
            if producer != handle:
                _core.stream_wait("cuda", device, handle, producer)
        with impl.stream_scope(stream, handle, device):
            yield
    finally:
        _CALL_STREAM.reset(token)


def dtype_code(dt) -> int:
    return _DTYPE_CODES[np.dtype(dt).newbyteorder("=")]


def supported_dtype(dt) -> bool:
    dt = np.dtype(dt)
    return dt.isnative and dt.newbyteorder("=") in _DTYPE_CODES


def check_dtype(dt, name, func):
    """TypeError unless the C core takes this dtype."""
    if not supported_dtype(dt):
        raise TypeError(f"{func}: {name} has dtype {dt}, which is not supported "
                        "(bool, integer and float16/32/64 arrays are)")


def same_dtype(asked, dt) -> bool:
    """Whether dtype= `asked` names dtype `dt` (a name NumPy refuses: no; the general path raises its error)."""
    try:
        return np.dtype(asked) == dt
    except TypeError:
        return False


def index_int(v, name):
    """operator.index refusing bool, as NumPy's integer arguments do (an
    axis, bincount's minlength, unpackbits' count: True is not 1 there)."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    return _operator.index(v)


def own_method(a, name):
    """The method `name` of `a` where it is a NumPy array subclass that
    overrides it, else None.  NumPy hands np.sum / np.cumsum of such an array
    to that method (np.ma.MaskedArray: its mask; np.matrix: its 2-D results),
    and so does gpusync; the plain ndarray, memmaps and device arrays keep
    gpusync's engines."""
    if not subclass(a):
        return None
    return None if getattr(type(a), name) is getattr(np.ndarray, name) else getattr(a, name)


def subclass(a) -> bool:
    """Whether `a` is a NumPy array subclass (np.memmap, np.matrix, a user's
    class), not the plain ndarray."""
    return type(a) is not np.ndarray and isinstance(a, np.ndarray)


def wrap_like(a, r):
    """NumPy's result for a subclass `a` whose class keeps ndarray's method:
    the result `r` computed on its data, passed through `a.__array_wrap__` as
    NumPy's ufuncs pass theirs -- a user's class comes back as that class
    with `a`'s attributes (its __array_finalize__), a 1-D result of an
    np.matrix as a 1 x n matrix, a memmap's result as a plain array or
    scalar; a full reduction asks for a scalar (return_scalar)."""
    arr = np.asarray(r)
    scalar = arr.ndim == 0
    try:
        return a.__array_wrap__(arr, None, scalar)
    except TypeError:  # an __array_wrap__ of NumPy 1's signature: NumPy's retry with the array alone, and its warning
        w = a.__array_wrap__(arr)
        warnings.warn("__array_wrap__ must accept context and return_scalar arguments (positionally) in the "
                      "future. (Deprecated NumPy 2.0)", DeprecationWarning, stacklevel=3)
        return w[()] if scalar and type(w) is np.ndarray else w


def new_like(a, r):
    """NumPy's result of a function that makes its output of the input's
    subclass (packbits, unpackbits: a new array of type(a), no
    __array_wrap__; np.matrix keeps two dimensions)."""
    return np.asarray(r).view(type(a))


def ufunc_override(a) -> bool:
    """Whether `a`'s class overrides ndarray's __array_ufunc__ (astropy's
    Quantity, pint, or None to refuse ufuncs): NumPy's sum and cumsum run
    add.reduce / add.accumulate, which hand the call to it -- gpusync hands
    such an array to NumPy's own function."""
    return type(a).__array_ufunc__ is not np.ndarray.__array_ufunc__


def any_ufunc_override(*args) -> bool:
    """Whether any of `args` (an input, out, where) is an ndarray subclass
    whose class takes over ufuncs: NumPy hands the whole call to it."""
    for v in args:
        if subclass(v) and ufunc_override(v):
            return True
    return False


def checked_input(obj, name, func):
    """as_input() of an argument whose dtype the core must take."""
    x = as_input(obj, name)
    check_dtype(x.dtype, name, func)
    return x


class DeviceArray:
    """A 1-D (flattened) view of a device array: what the C core needs."""

    __slots__ = ("obj", "lib", "ptr", "length", "stride", "dtype", "device", "stream", "shape")

    def __init__(self, obj, lib, ptr, length, stride, dtype, device, stream, shape):
        self.obj, self.lib, self.ptr, self.length, self.stride = obj, lib, ptr, length, stride
        self.dtype, self.device, self.stream, self.shape = dtype, device, stream, shape

    @property
    def size(self):
        return self.length

    @property
    def ndim(self):
        return len(self.shape)

    def desc(self, dtype=None):
        """Descriptor tuple for the C core (dtype overrides, e.g. bool as uint8)."""
        dt = self.dtype if dtype is None else np.dtype(dtype)
        return (self.ptr, self.length, self.stride, dtype_code(dt), self.device)

    def to_host(self) -> np.ndarray:
        return Lib.of(self.lib).to_host(self.obj).reshape(-1)


def _lib_name(obj) -> str:
    mod = type(obj).__module__.split(".")[0]
    return mod if mod in ("cupy", "torch", "numba") else "other"


@functools.lru_cache(maxsize=None)
def _cuda_state():
    return _core.available("cuda")


def _need_cuda(name):
    """A device array needs the CUDA backend: say so clearly where it cannot run."""
    ok, why = _cuda_state()
    if not ok:
        raise _core.NoCudaError(f"{name}: a CUDA device array needs the cuda backend, which cannot run here: {why}")


def _cai_view(obj, name):
    _need_cuda(name)
    cai = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    if not supported_dtype(dtype.newbyteorder("=")):
        raise TypeError(f"{name}: unsupported dtype {dtype}")
    ptr = int(cai["data"][0])
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    strides = cai.get("strides")
    isz = dtype.itemsize
    if not dtype.isnative or (n and (ptr % isz or (strides is not None and any(int(s) % isz for s in strides)))):
        return _NEEDS_COPY
    if strides is None or n <= 1:
        stride = 1
    else:
        # a flat view exists when the array is C-contiguous, or 1-D strided
        contiguous = tuple(int(s) for s in strides) == tuple(
            int(isz * np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))
        )
        if contiguous:
            stride = 1
        elif len([s for s in shape if s != 1]) == 1:
            axis = next(i for i, s in enumerate(shape) if s != 1)
            stride = int(strides[axis]) // isz
        else:
            return None  # needs a copy
    lib = _lib_name(obj)
    device = _device_of(obj, lib, ptr)
    stream = cai.get("stream") if int(cai.get("version", 0)) >= 3 else None
    wanted = _CALL_STREAM.get()
    if wanted is not None:  # stream=: order it after the producer's stream
        if stream is not None and int(stream) != wanted:
            _core.stream_wait("cuda", device, wanted, int(stream))
        stream = wanted
    elif stream is None:
        stream = Lib.of(lib).current_stream(device)
    return DeviceArray(obj, lib, ptr, n, stride, dtype, device, int(stream), shape)


_NEEDS_COPY = object()  # _cai_view: the array must be copied to native order / alignment first


def _device_of(obj, lib, ptr):
    if lib == "cupy":
        return int(obj.device.id)
    if lib == "torch":
        return int(obj.device.index)
    dev = _core.pointer_device("cuda", ptr) if ptr else 0
    return dev if dev >= 0 else 0


def native_host(a: np.ndarray) -> np.ndarray:
    """`a` itself when the core can read it in place; else (byte-swapped
    dtype, or an unaligned view) a native-order, aligned copy of it, the
    only extra copy a call makes for such input."""
    dt = a.dtype
    if (dt.isnative and a.flags.aligned) or dt.kind not in "biuf" or dt.newbyteorder("=") not in _DTYPE_CODES:
        return a  # in place; or a dtype the callers refuse with their own message
    return a.astype(dt.newbyteorder("="), order="K")


def as_input(obj, name):
    """Return a NumPy array (host) or a DeviceArray (device) for `obj`.
    Byte-swapped or unaligned input comes back as a native aligned copy
    (host: native_host; device: a copy by its own library)."""
    if isinstance(obj, np.ndarray):  # (a subclass's data as NumPy's asarray gives it: no method of its class runs)
        return native_host(obj if type(obj) is np.ndarray else obj.view(np.ndarray))
    if isinstance(obj, DeviceArray):  # already parsed (an inner call of a public function)
        return obj
    if hasattr(obj, "__cuda_array_interface__"):
        view = _cai_view(obj, name)
        if view is None:  # non-contiguous N-d: let the owner library flatten it
            view = _cai_view(Lib.of(_lib_name(obj)).ravel(obj), name)
        if view is _NEEDS_COPY:  # byte-swapped or unaligned: a native aligned copy on the device
            view = _cai_view(Lib.of(_lib_name(obj)).native_copy(obj), name)
        return view
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        if dev_type in (_KDLCPU, _KDLCUDAHOST):
            return np.from_dlpack(obj)
        if dev_type in (_KDLCUDA, _KDLCUDAMANAGED):
            # the library passes its current stream -- stream= within a call
            # (call_stream) -- as __dlpack__'s stream argument: the producer
            # orders its work before it
            for lib in ("cupy", "torch"):
                mod = _import(lib)
                if mod is not None:
                    return as_input(mod.from_dlpack(obj), name)
            raise TypeError(f"{name}: a DLPack CUDA array needs CuPy or PyTorch installed to be read in place")
    return native_host(np.asarray(obj))


def _import(name):
    try:
        return __import__(name)
    except Exception:
        return None


class Lib:
    """The few operations gpusync needs from an array library."""

    _cache: dict = {}

    @classmethod
    def of(cls, name):
        if name not in cls._cache:
            impl = {"cupy": _CuPy, "torch": _Torch, "numba": _Numba}.get(name)
            if impl is None:  # an unknown CAI producer: answer with CuPy, else PyTorch
                for cand in ("cupy", "torch"):
                    if _import(cand) is not None:
                        return cls.of(cand)
                raise TypeError("results for this device array need CuPy or PyTorch installed")
            cls._cache[name] = impl()
        return cls._cache[name]


_KEPT: dict = {}  # (lib, device, dtype, shape, bytes) -> device array: never handed out, never freed
_KEPT_BYTES = [0]
_KEPT_ENTRY_MAX = 32 << 10  # an entry's bytes: 4,096 float64 edges (the key holds them too)
_KEPT_BUDGET = 4 << 20  # all entries' bytes; past it, host copies again
_KEPT_LOCK = threading.Lock()


def device_constant(lib_name, a: np.ndarray, device):
    """A new device array of library `lib_name` on `device` equal to the small
    host array `a` (bin edges, bin widths): copied on the device from a kept
    copy of the same values, made on the first call -- so that later calls
    need no host copy, a CUDA graph capture among them (CuPy refuses host
    copies while the current stream captures).  Kept copies are never freed
    (a captured graph reads its kept copy at every replay), so they are
    bounded: arrays up to _KEPT_ENTRY_MAX bytes, _KEPT_BUDGET bytes in all;
    past those, a host copy per call.  The first call waits for its copy
    (later calls may read it from other streams); the result is the caller's
    own array, never the kept one."""
    lib = Lib.of(lib_name)
    a = np.ascontiguousarray(a)
    key = (lib_name, device, a.dtype.str, a.shape, a.tobytes()) if a.nbytes <= _KEPT_ENTRY_MAX else None
    kept = _KEPT.get(key) if key is not None else None
    if kept is not None:
        return lib.device_copy(kept)
    if lib.capturing(device):
        raise RuntimeError("gpusync: these bin edges (or bin widths) have no kept device copy and a host copy "
                           "cannot be captured: make the same call once before the CUDA graph capture")
    fresh = lib.from_host(a, device)
    if key is None or _KEPT_BYTES[0] + a.nbytes > _KEPT_BUDGET:
        return fresh
    lib.wait_current(device)  # (complete before another stream reads it)
    with _KEPT_LOCK:
        stored = key not in _KEPT and _KEPT_BYTES[0] + a.nbytes <= _KEPT_BUDGET
        if stored:
            _KEPT[key] = fresh
            _KEPT_BYTES[0] += a.nbytes
    return lib.device_copy(fresh) if stored else fresh  # (a thread that lost the race keeps its own copy)


def _device_native_copy(a):
    """A native-order, aligned, C-contiguous CuPy copy of any CAI array
    (byte-swapped dtype, unaligned pointer or strides), made on the device:
    the bytes the array spans are copied to a fresh allocation, each
    element's bytes gathered (and reversed when byte-swapped) by CuPy."""
    import cupy as cp

    cai = a.__cuda_array_interface__
    dt = np.dtype(cai["typestr"])
    shape = tuple(int(d) for d in cai["shape"])
    isz = dt.itemsize
    strides = cai.get("strides")
    if strides is None:
        strides = tuple(int(isz * np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    out_dt = dt.newbyteorder("=")
    if n == 0:
        return cp.empty(shape, out_dt)
    lo = sum(min(0, (d - 1) * int(st)) for d, st in zip(shape, strides))
    hi = sum(max(0, (d - 1) * int(st)) for d, st in zip(shape, strides)) + isz
    span = cp.empty(hi - lo, cp.uint8)
    cp.cuda.runtime.memcpy(span.data.ptr, int(cai["data"][0]) + lo, hi - lo, 3)  # cudaMemcpyDeviceToDevice
    off = cp.zeros(shape, cp.int64) - lo
    for axis, (d, st) in enumerate(zip(shape, strides)):
        idx = cp.arange(d, dtype=cp.int64) * int(st)
        off = off + idx.reshape((d,) + (1,) * (len(shape) - axis - 1))
    order = cp.arange(isz, dtype=cp.int64)
    if not dt.isnative:
        order = order[::-1]
    b = span[off.reshape(-1, 1) + order]
    return cp.ascontiguousarray(b).view(out_dt).reshape(shape)


class _StreamHandle:
    """A raw stream handle that speaks the CUDA stream protocol."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


_FTZ_CASTS = {(np.dtype(np.float32), np.dtype(np.float64)), (np.dtype(np.float64), np.dtype(np.float32))}
_FTZ_SOURCES = {  # exact float32 <-> float64 by integer arithmetic on the bits (no float32 operation to flush)
    "f32_f64": ("uint32 u", "float64 y", """
        const unsigned int m = u & 0x7fffffu;
        if ((u & 0x7f800000u) == 0u && m != 0u) {  /* a subnormal: m x 2^-149 (float64 never flushes) */
            const double d = ldexp((double)m, -149);
            y = (u >> 31) ? -d : d;
        } else {
            y = (double)__uint_as_float(u);
        }"""),
    "f64_f32": ("uint64 u", "uint32 y", """
        const double d = __longlong_as_double((long long)u), a = fabs(d);
        const unsigned int s = (unsigned int)(u >> 32) & 0x80000000u;
        if (a < ldexp(1.0, -126)) {  /* below float32's least normal: |d| x 2^149 rounded half to even */
            y = s | (unsigned int)rint(ldexp(a, 149));
        } else {
            y = __float_as_uint(__double2float_rn(d));  /* a normal result (or inf / NaN): nothing flushed */
        }"""),
}
_ftz_kernels: dict = {}


def _ftz_free_kernel(cp, src):
    """CuPy's kernel for an exact float32 <-> float64 conversion of a's bits (compiled once)."""
    key = "f32_f64" if src == np.float32 else "f64_f32"
    k = _ftz_kernels.get(key)
    if k is None:
        params, out, body = _FTZ_SOURCES[key]
        ek = cp.ElementwiseKernel(params, out, body, "gpusync_" + key)
        k = ek if key == "f32_f64" else (lambda v: ek(v).view(cp.float32))
        _ftz_kernels[key] = k
    return k


class _CuPy:
    def __init__(self):
        import cupy

        self.cp = cupy

    def current_stream(self, device):
        with self.cp.cuda.Device(device):
            return self.cp.cuda.get_current_stream().ptr

    def _wrap(self, handle, device):
        """A CuPy stream object for a raw handle (CuPy 14: Stream.from_external
        with the CUDA stream protocol; before: ExternalStream)."""
        from_external = getattr(self.cp.cuda.Stream, "from_external", None)
        if from_external is not None:
            try:
                return from_external(_StreamHandle(handle))
            except TypeError:
                pass
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return self.cp.cuda.ExternalStream(handle, device)

    @contextlib.contextmanager
    def stream_scope(self, stream, handle, device):
        with self.cp.cuda.Device(device):
            s = stream if isinstance(stream, (self.cp.cuda.Stream, self.cp.cuda.ExternalStream)) else \
                self._wrap(handle, device)
            with s:
                yield

    def empty(self, n, dtype, device):
        with self.cp.cuda.Device(device):
            return self.cp.empty(n, dtype=dtype)

    def placed(self, n, dtype, device, lo, src, handle):
        """n zeros with src at lo .. lo + len(src) - 1, made on `device` and stream `handle` (src's
        producer's: a GPU that is not the current one, a non-blocking stream)."""
        with self.stream_scope(None, handle, device):
            out = self.cp.zeros(n, dtype=dtype)
            out[lo:lo + src.shape[0]] = src
        return out

    def ptr(self, a):  # the device pointer of an array we allocated (contiguous)
        return int(a.data.ptr)

    def from_host(self, a, device):
        with self.cp.cuda.Device(device):
            return self.cp.asarray(a)

    def device_copy(self, a):  # on the current stream
        with self.cp.cuda.Device(a.device.id):
            return a.copy()

    def wait_current(self, device):
        with self.cp.cuda.Device(device):
            self.cp.cuda.get_current_stream().synchronize()

    def capturing(self, device):
        with self.cp.cuda.Device(device):
            return bool(self.cp.cuda.get_current_stream().is_capturing())

    def astype(self, a, dtype):
        """a in `dtype`, exactly: CuPy builds its kernels with -ftz=true, so its own float32 <-> float64
        conversions flush float32 subnormals to zero (cupy/cupy#8382); those two take integer kernels."""
        src, dst = np.dtype(a.dtype), np.dtype(dtype)
        if (src, dst) in _FTZ_CASTS and a.size:
            with self.cp.cuda.Device(a.device.id):
                return _ftz_free_kernel(self.cp, src)(a.view(self.cp.uint32 if src == np.float32 else self.cp.uint64))
        return a.astype(dtype, copy=False)

    def ravel(self, a):
        return self.cp.ravel(a)

    def native_copy(self, a):
        return _device_native_copy(a)

    def scalar(self, a):
        return a.reshape(())

    def to_host(self, a):
        return self.cp.asnumpy(a)


class _Torch:
    def __init__(self):
        import torch

        self.torch = torch

    def _dt(self, dtype):
        return getattr(self.torch, {"bool": "bool"}.get(np.dtype(dtype).name, np.dtype(dtype).name))

    def current_stream(self, device):
        return self.torch.cuda.current_stream(device).cuda_stream

    def stream_scope(self, stream, handle, device):
        s = stream if isinstance(stream, self.torch.cuda.Stream) else \
            self.torch.cuda.ExternalStream(handle, device=f"cuda:{device}")
        return self.torch.cuda.stream(s)

    def empty(self, n, dtype, device):
        return self.torch.empty(n, dtype=self._dt(dtype), device=f"cuda:{device}")

    def placed(self, n, dtype, device, lo, src, handle):
        """n zeros with src at lo .. lo + len(src) - 1 on `device`: torch runs them on that device's
        current stream, where src was made (a tensor's stream is its device's current one); r181: wrapping
        the handle in an ExternalStream here lost the ordering."""
        out = self.torch.zeros(n, dtype=self._dt(dtype), device=f"cuda:{device}")
        out[lo:lo + src.shape[0]] = src
        return out

    def ptr(self, a):  # the device pointer of a tensor we allocated (contiguous)
        return int(a.data_ptr())

    def from_host(self, a, device):
        return self.torch.as_tensor(a, device=f"cuda:{device}")

    def device_copy(self, a):  # on the current stream
        return a.clone()

    def wait_current(self, device):
        self.torch.cuda.current_stream(device).synchronize()

    def capturing(self, device):
        with self.torch.cuda.device(device):
            return bool(self.torch.cuda.is_current_stream_capturing())

    def astype(self, a, dtype):
        return a.to(self._dt(dtype))

    def ravel(self, a):
        return a.reshape(-1).contiguous()

    def native_copy(self, a):  # tensors are native and aligned; a foreign CAI array needs CuPy
        if isinstance(a, self.torch.Tensor):
            return a.contiguous().clone()
        if _import("cupy") is None:
            raise TypeError("a byte-swapped or unaligned device array needs CuPy installed to be copied")
        return _device_native_copy(a)

    def scalar(self, a):
        return a.reshape(())

    def to_host(self, a):
        return a.detach().cpu().numpy()


class _Numba:
    def __init__(self):
        from numba import cuda

        self.cuda = cuda

    def current_stream(self, device):
        return 0

    def stream_scope(self, stream, handle, device):  # Numba has no current stream
        return contextlib.nullcontext()

    def empty(self, n, dtype, device):
        with self.cuda.gpus[device]:
            return self.cuda.device_array(n, dtype=dtype)

    def placed(self, n, dtype, device, lo, src, handle):
        """n zeros with src at lo .. lo + len(src) - 1 on `device`: Numba has no current stream to order
        the copy after src's producer on, so the host waits for the device first, and after the copy."""
        from numba.cuda.cudadrv import driver

        with self.cuda.gpus[device]:
            self.cuda.synchronize()
            out = self.cuda.device_array(n, dtype=dtype)
            driver.device_memset(out, 0, out.nbytes)  # (on the device: no host buffer of n zeros)
            out[lo:lo + src.shape[0]].copy_to_device(src)
            self.cuda.synchronize()
        return out

    def from_host(self, a, device):
        with self.cuda.gpus[device]:
            return self.cuda.to_device(np.ascontiguousarray(a))

    def device_copy(self, a):  # Numba has no current stream: a copy on the device, on the default stream
        with self.cuda.gpus[_device_of(a, "numba", a.__cuda_array_interface__["data"][0])]:
            out = self.cuda.device_array_like(a)
            out.copy_to_device(a)
        return out

    def wait_current(self, device):
        with self.cuda.gpus[device]:
            self.cuda.synchronize()

    def capturing(self, device):  # (Numba arrays are not captured here: no current stream)
        return False

    def astype(self, a, dtype):
        if np.dtype(a.dtype) == np.dtype(dtype):
            return a
        return self.from_host(a.copy_to_host().astype(dtype), _device_of(a, "numba", 0))

    def ravel(self, a):
        return a.ravel()

    def native_copy(self, a):
        """Byte-swapped / unaligned Numba array: CuPy's device-side copy when
        CuPy is installed, else one round trip through the host."""
        if _import("cupy") is not None:
            return _device_native_copy(a)
        h = a.copy_to_host()
        return self.from_host(h.astype(h.dtype.newbyteorder("=")), _device_of(a, "numba", 0))

    def scalar(self, a):  # Numba has no 0-d device arrays: a host scalar
        return a.copy_to_host()[0]

    def to_host(self, a):
        return a.copy_to_host()
