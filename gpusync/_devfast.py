"""The per-call fast path of device arrays (CuPy arrays, PyTorch tensors).

A device-array call with default options takes a short road: the array's
pointer, length, dtype and device read straight from its library (no
``__cuda_array_interface__`` dict, no descriptor object), the result
allocated by that library, one call into the core on the library's current
stream, and a plan record (engine ``cuda``).  The general path
(gpusync/_dispatch.py) does the same work through its routing, output
allocation and checks; it stays the one owner of every rule, and this path
only takes what it can decide in a few attribute reads:

* a C-contiguous, native-order, aligned array of a dtype the core reads, on
  the library's current device, no ``stream=`` and no outer stream scope;
* the dispatcher turned the path on (:func:`enable`, from ``fast_sync``):
  not when the cpu backend is forced (device input then goes to the host);
* ``GPUSYNC_DEBUG`` does not log plans (asked per call: a state the sync
  saw once outlived the variable either way -- plans unlogged after it was
  set, the path off for the process after it went).

Anything else returns ``NotImplemented`` and the wrapper takes the general
path.  The results are the general path's: same kernels, same dtypes, same
library types (a 0-d array for a reduction, no host wait).
"""
from __future__ import annotations

import sys

import numpy as np

from . import _arrays, _core, _costmodel

_state = {"on": False}
_handlers: dict = {}  # array type -> its library's reader (None: not a device array type)
_names: dict = {}  # dtype -> str(dtype) (NumPy's __str__ is slow)


def enable(on: bool) -> None:
    _state["on"] = bool(on)


class _Cupy:
    lib = "cupy"

    def __init__(self, cp):
        # the ndarray constructor itself: cp.empty is a Python function around it (3.4 against 4.4 us a
        # call, H200 host r164)
        self.empty = cp.ndarray
        self.alloc = cp.cuda.alloc
        self.zeros_ = cp.zeros
        self.get_device = cp.cuda.runtime.getDevice
        self.get_stream = cp.cuda.get_current_stream

    @staticmethod
    def readable(cp):
        """Whether this CuPy exposes the fields view() reads (a.flags builds a Flags object and a.device a
        Device object every call: 0.70 against 0.36 us, H200 r151); else the general path takes its arrays."""
        mp = cp.cuda.MemoryPointer
        return hasattr(cp.ndarray, "_c_contiguous") and hasattr(mp, "device_id") and hasattr(mp, "ptr")

    def view(self, a):
        """(ptr, n, dtype, code, device) of a readable array, else None: the ndarray's and its
        MemoryPointer's own fields."""
        if not a._c_contiguous:
            return None
        dt = a.dtype
        code = _arrays._DTYPE_CODES.get(dt)
        if code is None or not dt.isnative:
            return None
        m = a.data
        dev = m.device_id
        ptr = m.ptr
        if dev != self.get_device() or ptr % dt.itemsize:
            return None
        return ptr, a.size, dt, code, dev

    def stream(self, dev):
        return self.get_stream().ptr

    def out(self, shape, dt, dev):
        r = self.empty(shape, dt)
        return r, r.data.ptr

    def out2(self, n1, dt1, n2, dt2, dev):
        """Two new 1-D arrays from one allocation (two arrays each with its own: 10.4 against 5.2 us,
        H200 host r164): (a1, ptr1, a2, ptr2)."""
        off = (n1 * dt1.itemsize + 255) & ~255
        m = self.alloc(off + n2 * dt2.itemsize)
        a1, a2 = self.empty((n1,), dt1, m), self.empty((n2,), dt2, m + off)
        return a1, m.ptr, a2, m.ptr + off

    def zeros(self, shape, dt, dev):
        r = self.zeros_(shape, dt)
        return r, r.data.ptr

    def word(self, a):
        """The first element of a small device array, on the host (waits)."""
        return int(a.get()[0])

    def host(self, a):
        """A small device array as a NumPy array (waits)."""
        return a.get()


class _Torch:
    lib = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.empty = torch.empty
        # torch's own C entry points where present (what its compiler's generated code calls: no Python
        # Stream / device objects per call), else the public functions
        c = torch._C
        raw = getattr(c, "_cuda_getCurrentRawStream", None)
        self.current_device = getattr(c, "_cuda_getDevice", None) or torch.cuda.current_device
        self.raw_stream = raw if callable(raw) else (lambda dev: torch.cuda.current_stream(dev).cuda_stream)
        names = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                 "float32", "float64")
        self.to_np = {getattr(torch, n): np.dtype(n) for n in names if hasattr(torch, n)}
        self.to_torch = {v: k for k, v in self.to_np.items()}
        self.devices = {}

    def view(self, t):
        if not t.is_cuda or t.requires_grad or not t.is_contiguous():
            return None
        dt = self.to_np.get(t.dtype)
        code = None if dt is None else _arrays._DTYPE_CODES.get(dt)
        if code is None:
            return None
        dev = t.get_device()
        ptr = t.data_ptr()
        if dev != self.current_device() or ptr % dt.itemsize:
            return None
        return ptr, t.numel(), dt, code, dev

    def stream(self, dev):
        return self.raw_stream(dev)

    def out(self, shape, dt, dev):
        d = self.devices.get(dev)
        if d is None:
            d = self.devices[dev] = self.torch.device("cuda", dev)
        r = self.empty(shape, dtype=self.to_torch[dt], device=d)
        return r, r.data_ptr()

    def out2(self, n1, dt1, n2, dt2, dev):
        """Two new 1-D tensors: (a1, ptr1, a2, ptr2)."""
        a1, p1 = self.out((n1,), dt1, dev)
        a2, p2 = self.out((n2,), dt2, dev)
        return a1, p1, a2, p2

    def zeros(self, shape, dt, dev):
        r, ptr = self.out(shape, dt, dev)
        r.zero_()
        return r, ptr

    def word(self, a):
        """The first element of a small device array, on the host (waits)."""
        return int(a[0].item())

    def host(self, a):
        """A small device array as a NumPy array (waits)."""
        return a.cpu().numpy()


def _handler(a):
    t = type(a)
    h = _handlers.get(t, False)
    if h is not False:
        return h
    h = None
    mod = t.__module__.split(".")[0]
    if mod == "cupy" and t.__name__ == "ndarray" and "cupy" in sys.modules and _Cupy.readable(sys.modules["cupy"]):
        h = _Cupy(sys.modules["cupy"])
    elif mod == "torch" and t.__name__ == "Tensor" and "torch" in sys.modules:
        h = _Torch(sys.modules["torch"])
    if h is not None and not _arrays._cuda_state()[0]:
        h = None  # the general path says why the array cannot be read here
    _handlers[t] = h
    return h


def numpy_dtype(a):
    """The NumPy dtype of a device array the fast path reads, else None."""
    h = _handler(a)
    if h is None:
        return None
    if h.lib == "torch":
        return h.to_np.get(a.dtype)
    dt = a.dtype
    return dt if isinstance(dt, np.dtype) else None


def _ready(a):
    """(handler, view) when the fast path takes `a`, else None."""
    if not _state["on"] or type(a) is np.ndarray or _arrays._CALL_STREAM.get() is not None:
        return None
    h = _handler(a)
    if h is None or _core.env_debug():
        return None
    v = h.view(a)
    return None if v is None else (h, v)


def _note(op, n, dt, in_bytes, out_bytes, used, strategy="auto"):
    """Record the fast path's call for gs.last_plan(): the raw facts only
    (note_plan() builds the dict when asked; building it here cost ~4 us a
    call, r101)."""
    _dispatch_tls().plan = ((op, n, dt, in_bytes, out_bytes, used, strategy), None, _core.plan_seq(), None)


def note_plan(rec):
    """last_plan()'s dict of a _note record (op, n, dtype, input bytes,
    output bytes, strategy used, strategy asked)."""
    op, n, dt, in_bytes, out_bytes, used, strategy = rec
    name = _names.get(dt)
    if name is None:
        name = _names[dt] = str(dt)
    shape = _costmodel.Shape(op, n, in_bytes, out_bytes, 0, True, "device")
    return {"op": op, "place": "device", "n": n, "dtype": name, "engine": "cuda", "strategy": strategy,
            "strategy_used": used, "threads": 0, "split": None, "predicted_ms": shape, "forced": None,
            "notes": ["the device fast path"]}


def _dispatch_tls():
    global _tls
    if _tls is None:
        from . import _dispatch

        _tls = _dispatch._tls
    return _tls


_tls = None  # _dispatch._tls (imported on first use: _dispatch imports this module)


def sum_(a, out_dtype_of):
    """gs.sum(a) of a device array: a 0-d array of NumPy's sum dtype."""
    r = _ready(a)
    if r is None:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    odt = out_dtype_of(dt)
    res, optr = h.out((), odt, dev)
    used = _core.reduce("cuda", (ptr, n, 1, code, dev), None, (optr, 1, 1, _arrays._DTYPE_CODES[odt], dev), "auto",
                        False, h.stream(dev))
    _note("sum", n, dt, dt.itemsize, odt.itemsize, used)
    return res


def _ready_pair(a, b):
    """(handler, view of a, pointer of b) when the fast path takes two 1-D
    arrays of one library, dtype, length and device, else None."""
    ra = _ready(a)
    if ra is None or getattr(a, "ndim", 0) != 1 or getattr(b, "ndim", 0) != 1:
        return None
    rb = _ready(b)
    if rb is None or rb[0] is not ra[0]:
        return None
    h, va = ra
    pb, nb, dtb, _, devb = rb[1]
    if nb != va[1] or dtb != va[2] or devb != va[4]:
        return None
    return h, va, pb


def dot_(a, b, out_dtype_of):
    """gs.dot(a, b) of two 1-D device arrays of one dtype and length."""
    r = _ready_pair(a, b)
    if r is None:
        return NotImplemented
    h, (pa, n, dt, code, dev), pb = r
    odt = out_dtype_of(dt, dt)
    if odt != dt:
        return NotImplemented
    res, optr = h.out((), odt, dev)
    used = _core.reduce("cuda", (pa, n, 1, code, dev), (pb, n, 1, code, dev), (optr, 1, 1, code, dev), "auto", False,
                        h.stream(dev))
    _note("dot", n, dt, 2 * dt.itemsize, odt.itemsize, used)
    return res


_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)
_I64_CODE = _arrays._DTYPE_CODES[_INT64]
_AXIS_SUM = _core.AXIS_OPS["sum"]
_AXIS_CUMSUM = _core.AXIS_OPS["cumsum"]
_UINT8 = np.dtype(np.uint8)
_U8_CODE = _arrays._DTYPE_CODES[_UINT8]


def count_nonzero_(a):
    """gs.count_nonzero(a) of a device array: a 0-d int64 array."""
    r = _ready(a)
    if r is None:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    res, optr = h.out((), _INT64, dev)
    _core.count_nonzero("cuda", (ptr, n, 1, code, dev), None, (optr, 1, 1, _arrays._DTYPE_CODES[_INT64], dev),
                        h.stream(dev))
    _note("count_nonzero", n, dt, dt.itemsize, 8, "ballot")
    return res


def one_axis(shape, axis, dt, op, out_dtype_of):
    """The segmented kernel's view of a C-contiguous array of `shape` reduced
    along one int `axis` with NumPy's other defaults: ((outer, len, inner),
    result shape, result dtype), or None where the general path decides --
    an axis out of range (NumPy's error), empty input, bool (NumPy casts a
    bool sum to its integer loop), a sum whose result dtype is of the other
    kind (integer vs float) than the input's."""
    nd = len(shape)
    if type(axis) is not int or not -nd <= axis < nd or dt.kind == "b" or 0 in shape:
        return None
    odt = out_dtype_of(dt)
    if op == _AXIS_SUM and (odt.kind == "f") != (dt.kind == "f"):
        return None
    ax = axis % nd
    outer = inner = 1
    for k in shape[:ax]:
        outer *= k
    for k in shape[ax + 1:]:
        inner *= k
    return (outer, shape[ax], inner), shape[:ax] + shape[ax + 1:], odt


def reduce_axis_(a, axis, op, out_dtype_of, name, out=None):
    """gs.sum(a, axis) / gs.count_nonzero(a, axis) / gs.cumsum(a, axis)
    (`op`: _core.AXIS_OPS) of a C-contiguous N-D device array along one int
    axis, with NumPy's other defaults: the segmented kernel (outer, len,
    inner) straight into a result of the input's library -- shape `a.shape`
    less the axis (a cumsum: `a.shape`), dtype `out_dtype_of(a.dtype)` -- or
    into `out` when it is such an array (sum and cumsum's `out=`).
    Bool input (NumPy casts it to the sum's integer loop), empty arrays, an
    axis out of range and a 1-D cumsum (the flattened scan's strategy
    kernels) take the general path.  (The general path spent ~100 us of host
    time before a cumsum's launch: r95, H200 host, 4096 x 65536 float32 axis
    0 one call 0.85 ms against 0.78 ms back to back.)"""
    scan = op == _AXIS_CUMSUM
    if type(axis) is not int or (scan and getattr(a, "ndim", 0) < 2):
        return NotImplemented
    r = _ready(a)
    if r is None:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    plan = one_axis(tuple(a.shape), axis, dt, op, out_dtype_of)
    if plan is None:
        return NotImplemented
    (outer, length, inner), res_shape, odt = plan
    nout = n if scan else outer * inner
    shape = tuple(a.shape) if scan else res_shape
    bump = None  # torch's autograd.graph.increment_version for a torch out
    if out is None:
        res, optr = h.out(shape, odt, dev)
    else:
        # `out` written in place by the kernel: an array of the same library and device, C-contiguous, of the
        # result's shape and NumPy's default dtype, apart from the input -- or the input itself for a scan (every
        # kernel reads a tile before it writes it).  Anything else: the general path (NumPy's casting rules, a
        # result computed apart and copied in).
        if type(out) is not type(a):
            return NotImplemented
        v = h.view(out)
        if v is None or v[2] != odt or v[4] != dev or tuple(out.shape) != shape:
            return NotImplemented
        optr = v[0]
        # in place only as the same elements (a wider out at the input's address would overwrite inputs unread)
        if optr != ptr or not scan or odt != dt:
            if optr < ptr + n * dt.itemsize and ptr < optr + nout * odt.itemsize:  # overlapping memory
                return NotImplemented
        if h.lib == "torch":  # autograd must see the write, as out.copy_() on the general path shows it
            bump = getattr(getattr(sys.modules["torch"].autograd, "graph", None), "increment_version", None)
            if bump is None or out.is_inference() or out.requires_grad:
                return NotImplemented  # (copy_ raises torch's own errors for these)
        res = out
    _core.reduce_axis("cuda", (ptr, 1, 1, code, dev), (outer, length, inner), (length * inner, inner, 1), op,
                      (optr, nout, 1, _arrays._DTYPE_CODES[odt], dev), h.stream(dev))
    if bump is not None:
        bump(out)
    _note(name, n, dt, dt.itemsize, odt.itemsize * nout, "segmented")
    return res


def packbits_(a, little=False):
    """gs.packbits(a) (axis None; big bit order, or little) of a 1-D device array."""
    r = _ready(a)
    if r is None or getattr(a, "ndim", 0) != 1:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    if dt.kind not in "biu":  # NumPy packs integers and bools only; the general path says so
        return NotImplemented
    nbytes = (n + 7) // 8
    res, optr = h.out((nbytes,), _UINT8, dev)
    _core.packbits("cuda", (ptr, n, 1, code, dev), None, little, (optr, nbytes, 1, _U8_CODE, dev), h.stream(dev))
    _note("packbits", n, dt, dt.itemsize, nbytes, "ballot")
    return res


def unpackbits_(a, little=False):
    """gs.unpackbits(a) (axis None, no count; big or little bit order) of a
    C-contiguous device uint8 array, flattened as NumPy does: the kernel
    straight into a new array of the input's library (the general path's
    argument handling cost 35 us a call against CuPy's 14 us, r272)."""
    r = _ready(a)
    if r is None:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    if dt != _UINT8:  # (NumPy's TypeError: the general path)
        return NotImplemented
    res, optr = h.out((8 * n,), _UINT8, dev)
    _core.unpackbits("cuda", (ptr, n, 1, code, dev), little, (optr, 8 * n, 1, _U8_CODE, dev), h.stream(dev))
    _note("unpackbits", n, dt, n, 8 * n, "")
    return res


def plan_key(dt, bins, range):
    """The key of gs.histogram's plans (gpusync/_histogram.py, _fast_plans)
    for data of NumPy dtype dt: an int `bins` and a (lo, hi) `range` fix
    NumPy's edges, with the bounds' types; None for other arguments."""
    if type(bins) is not int or type(range) is not tuple or len(range) != 2:
        return None
    r0, r1 = range
    if not (isinstance(r0, _BOUNDS) and isinstance(r1, _BOUNDS)):
        return None  # (a tensor bound hashes by identity: a plan would keep it and miss its changes)
    return (dt, bins, type(r0), r0, type(r1), r1)


_BOUNDS = (int, float, np.generic)  # the range bounds a plan is kept for: values, hashed by value


def histogram_(plans, a, bins, range, strategy="auto"):
    """gs.histogram(a, bins, range, strategy=strategy) of a device array
    whose plan (the bins' description for the counting kernel, the edges'
    formula and NumPy's edges) the general path made for the same dtype, bins
    and range (plans: _histogram._fast_plans; any strategy's call makes it):
    counts and edges arrays of the input's library, written on its stream;
    else NotImplemented."""
    r = _ready(a)
    if r is None:
        return NotImplemented
    return _planned_histogram(plans, r, None, bins, range, strategy)


def histogram_w_(plans, a, w, bins, range, strategy="auto"):
    """gs.histogram(a, bins, range, weights=w) of a device array and float64
    weights of the same library, shape and device, planned as histogram_
    (the plan does not depend on the weights): float64 sums (NumPy's dtype
    for float64 weights) and the edges, written on the input's stream by one
    C call -- the zeroing kernel writes the edges too.  Other weights (float32:
    NumPy sums them into float32 block by block; integers) take the general
    path, which cost 103 us a call at 1,000 float64 against CuPy's 74 (r273)."""
    r = _ready(a)
    if r is None or tuple(getattr(w, "shape", ())) != tuple(a.shape):
        return NotImplemented
    rw = _ready(w)
    if rw is None or rw[0] is not r[0]:
        return NotImplemented
    pw, nw, dtw, codew, devw = rw[1]
    if dtw != _FLOAT64 or nw != r[1][1] or devw != r[1][4]:
        return NotImplemented
    return _planned_histogram(plans, r, (pw, nw, 1, codew, devw), bins, range, strategy)


def _planned_histogram(plans, r, wdesc, bins, range, strategy):
    """histogram_ / histogram_w_ once their inputs are read (r: _ready's;
    wdesc: the float64 weights' descriptor, or None): the plan, the outputs
    (int64 counts or float64 sums, and the edges) from one allocation, one C
    call -- the kernel that counts or zeroes writes the edges where the
    formula rides on the bins -- or NotImplemented."""
    h, (ptr, n, dt, code, dev) = r
    key = plan_key(dt, bins, range)
    try:
        hit = None if key is None else plans.get(key)
    except TypeError:  # unhashable bounds: the general path says what is wrong with them
        return NotImplemented
    if hit is None or hit[2] is None or dt.kind == "b":  # (bool: NumPy's warning and uint8 view, the general path)
        return NotImplemented
    edges_host, bins_desc, edges_desc = hit
    stream = h.stream(dev)
    nedges = len(edges_host)
    nb = nedges - 1
    edt = edges_host.dtype
    odt = _INT64 if wdesc is None else _FLOAT64
    counts, cptr, edges, eptr = h.out2(nb, odt, nedges, edt, dev)
    edesc = (eptr, nedges, 1, _arrays._DTYPE_CODES[edt], dev)
    cdesc = (cptr, nb, 1, _arrays._DTYPE_CODES[odt], dev)
    src = (ptr, n, 1, code, dev)
    if edges_desc is bins_desc:  # equal-width counting: the counting (or zeroing) kernel writes the edges too
        used = _core.histogram("cuda", src, wdesc, cdesc, bins_desc, strategy, stream, edesc)
    else:  # (integer bins counted another way: the edges' formula is a description of its own)
        used = _core.histogram("cuda", src, wdesc, cdesc, bins_desc, strategy, stream)
        _core.uniform_edges("cuda", edges_desc, edesc, stream)
    _note("histogram", n, dt, dt.itemsize + (0 if wdesc is None else 8), nb * 8, used, strategy)
    return counts, edges


def cumsum_(a, out_dtype_of, strategy="auto"):
    """gs.cumsum(a) (axis None: the flattened scan) of a device array: a 1-D
    array of NumPy's cumsum dtype, on the input's stream, by `strategy`
    (lookback and relaunch do not wait: the look-back completes its output
    even after a spin time-out; barrier waits to read its time-out flag)."""
    r = _ready(a)
    if r is None:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    odt = out_dtype_of(dt)
    res, optr = h.out((n,), odt, dev)
    used = _core.cumsum("cuda", (ptr, n, 1, code, dev), (optr, n, 1, _arrays._DTYPE_CODES[odt], dev), strategy,
                        h.stream(dev))
    _note("cumsum", n, dt, dt.itemsize, odt.itemsize * n, used, strategy)
    return res


def bincount_(a, minlength, bins_desc_of):
    """gs.bincount(a, minlength=) without weights of a 1-D device integer
    array into an int64 array of the input's library, on its stream; the
    result's length is max + 1 (NumPy's rule makes the call wait).

    * 8-bit integers: the counts of all 256 byte values, read back once for
      the length (and the negatives of int8); the result is a view of them
      when it is not longer.
    * 16-, 32- and 64-bit signed integers (and uint16 / uint32): first one
      count of the values 0 .. BINCOUNT_FIRST_BINS - 1 that also finds the
      largest value (``_core.bincount_first``): when that is below
      BINCOUNT_FIRST_BINS, those counts are the result (one read of the
      input, a view of them); otherwise a count follows (two reads, as a
      min/max pass and a count took before).
    * uint64: a minmax read, then the count (a value past int64 has no
      int64 length: NumPy 2 reads it as negative, and so does this).

    That count takes the values min .. max alone (a histogram of max - min + 1
    unit-wide bins from min into that stretch of zeroed counts) where they are
    at most half of 0 .. max and max is at least BINCOUNT_FIRST_BINS, e.g.
    identifiers from 10^6 up: fewer bins, the counting kernels of few bins;
    else the max + 1 bins.  16-bit data: the first count knows the smallest
    value only when it is below BINCOUNT_FIRST_BINS (a min an element cost 5 %
    of the common case); where no value is, a min/max read finds it (16-bit
    identifiers far from 0, e.g. 40,000 .. 40,999: a count of those 1,000
    bins instead of 41,000).

    Bool inputs take the general path."""
    r = _ready(a)
    if r is None or getattr(a, "ndim", 0) != 1:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = r
    if dt.kind not in "iu" or n == 0:
        return NotImplemented
    stream = h.stream(dev)
    if dt.itemsize == 1:
        return _bincount8(h, ptr, n, dt, dev, stream, minlength, bins_desc_of)
    src = (ptr, n, 1, code, dev)
    if dt.name in _core.BINCOUNT_FIRST_DTYPES:  # (gs_bincount_first_takes)
        b = _core.BINCOUNT_FIRST_BINS
        counts, cptr = h.out((b,), _INT64, dev)
        hi, negative, lo = _core.bincount_first("cuda", src, (cptr, b, 1, _arrays._DTYPE_CODES[_INT64], dev),
                                                stream)  # synchronize!
        if negative:
            raise ValueError("'list' argument must have no negative elements")
        if hi < b:  # every value counted: these are the counts
            _note("bincount", n, dt, dt.itemsize, b * 8, "shared")
            return _counts_cut(h, counts, hi, b, minlength, dev, copy_below=b // 4)
        counts = None
        if lo < 0:  # 16-bit data, every value past the first count's bins: its smallest unknown, at least b
            if not min_to_max(b, int(hi)):  # (else b .. hi alone, as good as lo .. hi: no read for lo)
                lo = np.frombuffer(_core.minmax("cuda", src, stream), dtype=dt)[0]  # synchronize!
            else:
                lo = b
    else:
        lo, hi = np.frombuffer(_core.minmax("cuda", src, stream), dtype=dt)  # synchronize! (uint64 alone here)
        if hi >= 2**63:  # (past int64: NumPy 2 reads it as negative)
            raise ValueError("'list' argument must have no negative elements")
    hi, lo = int(hi), int(lo)
    nbins = max(hi + 1, minlength)
    span = hi - lo + 1
    if min_to_max(lo, hi):
        # the values lo .. hi alone, into that stretch of zeroed counts (a few thousand bins: no saving
        # worth the zeroing launch)
        counts, cptr = h.zeros((nbins,), _INT64, dev)
        used = _core.histogram("cuda", src, None, (cptr + 8 * lo, span, 1, _arrays._DTYPE_CODES[_INT64], dev),
                               bins_desc_of(span, lo), "auto", stream)
        _note("bincount", n, dt, dt.itemsize, nbins * 8, used)
        return counts
    counts, cptr = h.out((nbins,), _INT64, dev)
    used = _core.histogram("cuda", src, None, (cptr, nbins, 1, _arrays._DTYPE_CODES[_INT64], dev),
                           bins_desc_of(nbins), "auto", stream)
    _note("bincount", n, dt, dt.itemsize, nbins * 8, used)
    return counts


_WEIGHT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def bincount_w_(a, w, minlength, bins_desc_of):
    """gs.bincount(x, weights, minlength) of a 1-D device integer array and
    1-D float32 / float64 weights of the same library, length and device:
    one min / max read for NumPy's length (the call waits, as torch's), then
    the weighted count into float64 sums -- lo .. hi alone where bincount_'s
    rule says so.  (The general path: 99 us a call at 1,000 elements
    against torch.bincount's 57 us, 262 against 223 us at 10^7, r272.)
    Other weights (integers, bool: NumPy casts them to float64) and bool x
    take the general path."""
    ra = _ready(a)
    if ra is None or getattr(a, "ndim", 0) != 1 or getattr(w, "ndim", 0) != 1:
        return NotImplemented
    rw = _ready(w)
    if rw is None or rw[0] is not ra[0]:
        return NotImplemented
    h, (ptr, n, dt, code, dev) = ra
    pw, nw, dtw, codew, devw = rw[1]
    if dt.kind not in "iu" or n == 0 or nw != n or devw != dev or dtw not in _WEIGHT_DTYPES:
        return NotImplemented
    stream = h.stream(dev)
    src = (ptr, n, 1, code, dev)
    lo, hi = np.frombuffer(_core.minmax("cuda", src, stream), dtype=dt)  # synchronize!
    lo, hi = int(lo), int(hi)
    if lo < 0 or hi >= 2**63:  # (uint64 past int64: NumPy 2 reads it as negative)
        raise ValueError("'list' argument must have no negative elements")
    nbins = max(hi + 1, minlength)
    f64 = _arrays._DTYPE_CODES[_FLOAT64]
    if min_to_max(lo, hi):
        span = hi - lo + 1
        sums, sptr = h.zeros((nbins,), _FLOAT64, dev)
        used = _core.histogram("cuda", src, (pw, n, 1, codew, dev), (sptr + 8 * lo, span, 1, f64, dev),
                               bins_desc_of(span, lo), "auto", stream)
    else:
        sums, sptr = h.out((nbins,), _FLOAT64, dev)  # (the count zeroes its output first)
        used = _core.histogram("cuda", src, (pw, n, 1, codew, dev), (sptr, nbins, 1, f64, dev), bins_desc_of(nbins),
                               "auto", stream)
    _note("bincount", n, dt, dt.itemsize + dtw.itemsize, nbins * 8, used)
    return sums


def min_to_max(lo, hi):
    """Whether bincount counts the values lo .. hi alone (into that stretch of
    zeroed counts) rather than 0 .. hi: the C rule every engine asks
    (gs_bincount_min_to_max; uint64 values past int64: no -- their length
    fails NumPy's way)."""
    return hi < 2**63 and _core.bincount_min_to_max(lo, hi)


def _bincount8(h, ptr, n, dt, dev, stream, minlength, bins_desc_of):
    """bincount_ of uint8 / int8: one count of the 256 raw bytes (int8's
    -128..-1 are bytes 0x80..0xff), one read of those counts (the general
    path read them too, then copied NumPy's result back: 130 us a call
    against torch.bincount's 37, H200 r134)."""
    counts, cptr = h.out((256,), _INT64, dev)
    used = _core.histogram("cuda", (ptr, n, 1, _arrays._DTYPE_CODES[_UINT8], dev), None,
                           (cptr, 256, 1, _arrays._DTYPE_CODES[_INT64], dev), bins_desc_of(256), "auto", stream)
    top = 128 if dt.kind == "i" else 256
    got = h.host(counts)  # synchronize!
    if top == 128 and got[128:].any():
        raise ValueError("'list' argument must have no negative elements")
    _note("bincount", n, dt, 1, 256 * 8, used)
    return _counts_cut(h, counts, int(np.flatnonzero(got[:top])[-1]), top, minlength, dev)  # (n > 0)


def _counts_cut(h, counts, hi, top, minlength, dev, copy_below=0):
    """NumPy's bincount from device `counts` whose first `top` bins count
    the values 0 .. top - 1 (every value counted), the largest `hi`: a view
    of them, a copy of its own when shorter than `copy_below` (a view would
    keep the whole 32 KiB buffer alive for every small result a caller
    keeps), or a longer zero-padded copy for a longer minlength."""
    nbins = max(hi + 1, minlength)
    if copy_below <= nbins <= top:
        return counts[:nbins]
    if nbins <= top:
        res, _ = h.out((nbins,), _INT64, dev)
        res[:] = counts[:nbins]
        return res
    res, _ = h.out((nbins,), _INT64, dev)
    res[top:] = 0
    res[:top] = counts[:top]
    return res


def histogram2d_(x, y, plan):
    """gs.histogram2d(x, y, bins, range) (no weights, no density) of two
    device arrays of one dtype, length and device whose plan the general
    path made for the same dtype, bins and range -- ``(e_all, ne, nb,
    formulas, edges, ends)``: every dimension's edges as one float64 array
    and their counts (what the fused kernel takes), the bin counts, each
    dimension's edge formula (for the uniform_edges kernel), NumPy's edges
    and, when those are float64, where the counts and each dimension's edges
    end in one float64 buffer.  Float64 counts and edge arrays of the
    inputs' library, written on its stream; the call does not wait.

    With ``ends``, one allocation holds the counts and both edge arrays
    (views of it) and the count kernel writes the edges (its copy of them
    is NumPy's): no allocation or launch of their own -- they were ~4 us of
    device time and ~14 us of host time a call (r106)."""
    r = _ready_pair(x, y)
    if r is None:
        return NotImplemented
    h, (px, n, dt, code, dev), py = r
    if dt.kind == "b":
        return NotImplemented
    e_all, ne, nb, formulas, edges_host, ends = plan
    stream = h.stream(dev)
    f64 = _arrays._DTYPE_CODES[_FLOAT64]
    total = nb[0] * nb[1]
    if ends is not None:
        buf, ptr = h.out((ends[2],), _FLOAT64, dev)
        _core.histogramdd("cuda", [(px, n, 1, code, dev), (py, n, 1, code, dev)], e_all, ne, None,
                          (ptr, total, 1, f64, dev), stream, (ptr + 8 * total, ends[2] - total, 1, f64, dev))
        _note("histogramdd", n, dt, 2 * dt.itemsize, total * 8, "privatized")
        return buf[:total].reshape(nb), buf[total:ends[1]], buf[ends[1]:]
    hist, hptr = h.out(nb, _FLOAT64, dev)
    _core.histogramdd("cuda", [(px, n, 1, code, dev), (py, n, 1, code, dev)], e_all, ne, None,
                      (hptr, total, 1, f64, dev), stream)
    edges = []
    for f, e in zip(formulas, edges_host):
        out, optr = h.out((len(e),), e.dtype, dev)
        _core.uniform_edges("cuda", f, (optr, len(e), 1, _arrays._DTYPE_CODES[e.dtype], dev), stream)
        edges.append(out)
    _note("histogramdd", n, dt, 2 * dt.itemsize, total * 8, "privatized")
    return hist, edges[0], edges[1]


_INT32 = np.dtype(np.int32)


def _edges_out(h, plan_edges, dev, stream):
    """Equal-width edges of the inputs' library, written by the uniform_edges
    kernel from their formulas ((formula, NumPy's edges) per dimension);
    copied on the device from a kept copy where no formula reproduces NumPy's
    edges (_arrays.device_constant)."""
    out = []
    for f, e in plan_edges:
        if f is None:
            out.append(_arrays.device_constant(h.lib, e, dev))
            continue
        a, ptr = h.out((len(e),), e.dtype, dev)
        _core.uniform_edges("cuda", f, (ptr, len(e), 1, _arrays._DTYPE_CODES[e.dtype], dev), stream)
        out.append(a)
    return out


def binned_statistic_(x, v, plan):
    """gs.binned_statistic(x, values, statistic, bins, range) of two 1-D
    device arrays of one float dtype, length and device, whose plan the
    general path made for the same dtype, statistic, bins and range with the
    privatized kernel -- ``(dtype, e64, top, code, edges)``: the float64
    edges, SciPy's top, the statistic's code and ``[(formula, NumPy's
    edges)]``.  SciPy's check that x is finite comes from the kernel's report
    (one wait).  Returns ``(statistic, edges, binnumber)`` of the inputs'
    library, or NotImplemented."""
    r = _ready_pair(x, v)
    if r is None:
        return NotImplemented
    h, (px, n, dt, code, dev), pv = r
    pdt, e64, top, stat, edges = plan
    if dt != pdt or n == 0:
        return NotImplemented
    stream = h.stream(dev)
    nb = len(e64) - 1
    res, rptr = h.out((nb,), _FLOAT64, dev)
    bn, bptr = h.out((n,), _INT64, dev)
    nf, nptr = h.out((1,), _INT32, dev)
    used = _core.binned_statistic("cuda", (px, n, 1, code, dev), (pv, n, 1, code, dev), e64, top, stat,
                                  (rptr, nb, 1, _arrays._DTYPE_CODES[_FLOAT64], dev),
                                  (bptr, n, 1, _arrays._DTYPE_CODES[_INT64], dev),
                                  (nptr, 1, 1, _arrays._DTYPE_CODES[_INT32], dev), "auto", stream)
    if used != "privatized":  # (another device whose shared memory the bins do not fit: the general path)
        return NotImplemented
    (e_out,) = _edges_out(h, edges, dev, stream)
    from ._binstat import BinnedStatisticResult, _check_nonfinite

    _check_nonfinite(h.word(nf), (0,))  # synchronize! (SciPy's check that x is finite)
    _note("binned_statistic", n, dt, 2 * dt.itemsize, 8 * nb + 8 * n, used)
    return BinnedStatisticResult(res, e_out, bn)


def binned_statistic_2d_(x, y, v, plan):
    """gs.binned_statistic_2d(x, y, values, statistic, bins, range) of three
    1-D device arrays of one float dtype, length and device, whose plan the
    general path made (the fused privatized kernel) -- ``(dtype, e_all, ne,
    tops, code, nb, edges, whole)``, whole: bins one number for both
    dimensions.  Returns ``(statistic, x_edge, y_edge,
    binnumber)`` of the inputs' library, or NotImplemented."""
    r = _ready_pair(x, y)
    if r is None:
        return NotImplemented
    h, (px, n, dt, code, dev), py = r
    rv = _ready(v)
    pdt, e_all, ne, tops, stat, nb, edges, whole = plan
    if rv is None or rv[0] is not h or getattr(v, "ndim", 0) != 1 or dt != pdt or n == 0:
        return NotImplemented
    pv, nv, dtv, _, devv = rv[1]
    if nv != n or dtv != dt or devv != dev:
        return NotImplemented
    stream = h.stream(dev)
    res, rptr = h.out(nb, _FLOAT64, dev)
    bn, bptr = h.out((n,), _INT64, dev)
    nf, nptr = h.out((1,), _INT32, dev)
    try:
        _core.binned_statistic_dd("cuda", [(px, n, 1, code, dev), (py, n, 1, code, dev)], e_all, ne, tops,
                                  (pv, n, 1, code, dev), stat,
                                  (rptr, nb[0] * nb[1], 1, _arrays._DTYPE_CODES[_FLOAT64], dev),
                                  (bptr, n, 1, _arrays._DTYPE_CODES[_INT64], dev),
                                  (nptr, 1, 1, _arrays._DTYPE_CODES[_INT32], dev), stream)
    except _core.UnsupportedDeviceError:  # (a device whose shared memory the bins do not fit: the general path)
        return NotImplemented
    ex, ey = _edges_out(h, edges, dev, stream)
    from ._binstat import _check_nonfinite, nan_only
    from ._binstat_dd import BinnedStatistic2dResult

    bits = h.word(nf)  # synchronize! (SciPy's check of the sample for non-finite values)
    if bits and not whole and not nan_only():  # SciPy 1.17 checks only where bins is one int: here NaN / inf
        return NotImplemented  # are outliers of its edges, which the general path's per-dimension pipeline bins
    _check_nonfinite(bits, (0, 1))
    _note("binned_statistic_dd", n, dt, 3 * dt.itemsize, 8 * nb[0] * nb[1] + 8 * n, "privatized")
    return BinnedStatistic2dResult(res, ex, ey, bn)
