"""The dispatcher: the one module every public function passes through.

It owns, for every op:

* the strategy check (the public STRATEGIES tuples live here) and the map of
  each strategy to the closest technique of the engine that runs it;
* routing: host or device input, the forced backend (``use_backend``,
  ``GPUSYNC_BACKEND``), inputs on one side and one device;
* output allocation (NumPy for host input, the input's library on its device);
* the engine choice for host input -- the calling thread alone, the CPU pool,
  the GPU, or both on disjoint parts -- from the cost model (_costmodel.py)
  and the machine constants (_calibrate.py);
* the fall-back to the CPU engine when the GPU fails on a host input;
* the plan record: :func:`last_plan` (per thread), logged with GPUSYNC_DEBUG=1.

A wrapper computes NumPy's semantics (dtypes, edges, errors), then calls
:func:`run` with flat inputs, the outputs' lengths and dtypes, and a `call`
that invokes the C core for one engine.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from . import _arrays, _backend, _calibrate, _core, _costmodel, _devfast
from ._arrays import DeviceArray, Lib

# ---- strategies: the public tuples (one copy) and each engine's technique

STRATEGIES = {
    "histogram": ("auto", "global", "shared", "warp", "cluster"),
    "sum": ("auto", "atomic", "mutex", "two-pass", "threadfence", "grid", "warp"),
    "cumsum": ("auto", "lookback", "barrier", "relaunch"),
    "binned_statistic": ("auto", "privatized", "shared", "global"),
    "barrier_benchmark": ("auto", "lock", "lockfree", "sense", "flat", "cluster", "cooperative", "relaunch"),
}
STRATEGIES["bincount"] = STRATEGIES["histogram"]
STRATEGIES["dot"] = STRATEGIES["sum"]

# What a strategy runs as on the CPU engine when it has no CPU technique of
# its own: (technique, why).  CPU threads have no warps and no clusters.
_CPU_MAP = {
    ("histogram", "cluster"): ("shared", "CPU threads have no thread-block clusters: each thread keeps a "
                                         "private histogram (the closest technique), merged at the end"),
    ("sum", "warp"): ("atomic", "CPU threads have no warps: each thread adds its partial with one atomic "
                                "(the closest technique to one atomic per warp)"),
}
_CPU_MAP[("bincount", "cluster")] = _CPU_MAP[("histogram", "cluster")]
_CPU_MAP[("binned_statistic", "privatized")] = (
    "shared", "the CPU engine's 'shared' is its privatized technique: each thread keeps private bins, "
              "merged at the end")
_CPU_MAP[("dot", "warp")] = _CPU_MAP[("sum", "warp")]


def check_strategy(op: str, strategy) -> str:
    """ValueError unless `strategy` is one of the op's public strategies."""
    valid = STRATEGIES[op]
    if not isinstance(strategy, str) or strategy not in valid:
        raise ValueError(f"{op}: strategy must be one of {', '.join(repr(s) for s in valid)}; got {strategy!r}")
    return strategy


def engine_strategy(op: str, strategy: str, engine: str):
    """(strategy the engine runs, note or "") for `strategy` on `engine`."""
    if engine in ("caller", "cpu"):
        mapped = _CPU_MAP.get((op, strategy))
        if mapped is not None:
            return mapped[0], f"strategy {strategy!r} runs as {mapped[0]!r} on the CPU engine: {mapped[1]}"
    return strategy, ""


# ---- environment: the dispatcher's variables, read through the C table
# (csrc/common/env.c: one parse, one warning naming an invalid variable)

ENGINES = ("auto", "caller", "cpu", "cuda", "cpu+cuda")


class _Override(threading.local):
    """calibrate's own runs: an engine (and pool size) forced on the calling
    thread, whatever the environment and a backend the user forced (the
    measurement often runs lazily inside ``with gs.use_backend("cpu")``);
    other threads' calls are untouched."""

    engine = None
    threads = None
    machine = None  # constants for this thread's calls alone (calibrate's split probe)


_override = _Override()


def env_engine() -> str:
    """GPUSYNC_ENGINE: force the engine of host-input calls (default auto)."""
    return _override.engine or _core.env_dispatch()[0]


def forced_backend():
    """The backend forced for this thread's calls: use_backend() /
    GPUSYNC_BACKEND's, or None while calibrate forces an engine here."""
    return None if _override.engine is not None else _backend.forced()


def aux_threads() -> int:
    """The CPU engine's thread request for a host pass outside the engine
    choice (a bincount's min/max, a histogram's autodetected range): the
    calling thread alone when the caller engine is forced, the forced pool
    size, else 0 (the engine's own choice)."""
    if _override.threads:
        return int(_override.threads)
    return 1 if env_engine() == "caller" else 0


def env_calibrate() -> str:
    """GPUSYNC_CALIBRATE: "auto" (a quick measurement on first need) or "off"."""
    return _core.env_dispatch()[1]


def env_debug() -> bool:
    """GPUSYNC_DEBUG=1: log each call's plan on stderr."""
    return _core.env_dispatch()[2]


# ---- the plan record

_tls = threading.local()


def _fast_plan(rec):
    """The plan of a call the C fast path ran (the calling thread alone, or
    the CPU engine's pool)."""
    _seq, op, n, dtype, used, threads = rec
    if threads < 0:  # NumPy's own call from the C fast path (complex dots: gpusync has no complex kernel)
        return {"op": op, "place": "host", "n": n, "dtype": _dtype_name(dtype), "engine": "caller",
                "strategy": "auto", "strategy_used": "numpy", "threads": 0, "split": None, "predicted_ms": {},
                "forced": forced_backend(), "notes": [f"complex host input: NumPy's own np.{op} (gpusync has no "
                                                      "complex kernel; sums: where its one thread is the faster)"]}
    notes = ["the C fast path: a native NumPy array (C-contiguous, or one dimension with a positive stride; "
             "sum / dot: of any sign) with default options, "
             + ("on the calling thread" if threads <= 1 else f"on {threads} pool threads")]
    in_bytes = np.dtype(dtype).itemsize * (2 if op == "dot" else 1)
    shape = _costmodel.Shape(_COST_OP.get(op, op), n, in_bytes, 8, 0, True, "host")
    pred = _costmodel.choose(machine(), shape, _allowed(forced_backend())[0]).predicted
    return {"op": op, "place": "host", "n": n, "dtype": str(dtype), "engine": "caller" if threads <= 1 else "cpu",
            "strategy": "auto", "strategy_used": used if used != "auto" else "", "threads": max(1, threads),
            "split": None,
            "predicted_ms": {k: v * 1e3 for k, v in pred.items()},
            "forced": forced_backend(), "notes": notes}


def last_plan() -> dict | None:
    """What the calling thread's last gpusync call ran, or None before any.

    A dict: ``op``; ``place`` ("host" or "device"); ``n`` elements;
    ``dtype``; ``engine`` -- ``"caller"`` (the CPU engine on the calling
    thread alone), ``"cpu"`` (the CPU engine's thread pool), ``"cuda"`` or
    ``"cpu+cuda"`` (both on disjoint parts); ``strategy`` (asked) and
    ``strategy_used`` (what ran); ``threads`` (CPU threads, 0 for none);
    ``split`` (``{"cuda": elements, "cpu": elements, "crew": staging threads}`` for cpu+cuda, else
    None); ``predicted_ms`` (the cost model's time of each candidate engine);
    ``forced`` (the backend forced by use_backend / GPUSYNC_BACKEND /
    GPUSYNC_ENGINE, or None); ``notes`` (fall-backs, strategy mappings).
    Per thread: concurrent callers each see their own.
    """
    rec = getattr(_tls, "plan", None)
    fast = _core.fast_last()
    if fast is not None and (rec is None or fast[0] > rec[2]):
        return _fast_plan(fast)
    if rec is None:
        return None
    plan, used, _seq, threads = rec
    if type(plan) is tuple:  # the device fast path's record (_devfast._note)
        plan = _devfast.note_plan(plan)
    out = dict(plan, notes=list(plan["notes"]))
    if threads is not None:
        out["threads"] = threads
    if isinstance(out["predicted_ms"], _costmodel.Shape):
        pred = _costmodel.choose(machine(), out["predicted_ms"]).predicted
        out["predicted_ms"] = {k: v * 1e3 for k, v in pred.items()}
    if used is not None:
        out["strategy_used"] = used
    return out


def _ran_threads(plan: dict):
    """The CPU threads a call on the CPU engine ran on (None for the others)."""
    return _core.cpu_last_threads() if plan["engine"] in ("caller", "cpu") else None


def _record(plan: dict, used=None, threads=None) -> None:
    """`threads`: the CPU threads the call ran on (the engine's own count
    under GPUSYNC_NUM_THREADS), where it differs from the plan's request."""
    _tls.plan = (plan, used, _core.plan_seq(), threads)
    if env_debug():
        plan = last_plan()
        pm = ", ".join(f"{k} {v:.3g}" for k, v in plan["predicted_ms"].items())
        print(f"gpusync: {plan['op']} n={plan['n']} {plan['dtype']} ({plan['place']}) -> {plan['engine']} "
              f"strategy={plan['strategy_used']} threads={plan['threads']} split={plan['split']} "
              f"predicted ms: {pm}" + "".join(f"; {n}" for n in plan["notes"]), file=sys.stderr)


_DTYPE_NAMES: dict = {}


def _dtype_name(dtype) -> str:
    """str(dtype), remembered per dtype (str of a NumPy dtype costs ~8 us: a third of a small complex dot)."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = str(dtype)
        return name
    except TypeError:  # (unhashable: not a dtype)
        return str(dtype)


def record(op, *, engine, strategy, used, n=0, dtype="", place="host", threads=0, notes=(), predicted=None):
    """Plan record of a call that does not go through :func:`run` (barriers,
    histogramdd); `predicted`: the cost model's Choice.predicted (seconds per
    candidate) when the model chose the engine."""
    _record({"op": op, "place": place, "n": int(n), "dtype": _dtype_name(dtype), "engine": engine, "strategy": strategy,
             "strategy_used": used, "threads": threads, "split": None,
             "predicted_ms": {k: v * 1e3 for k, v in predicted.items()} if predicted else {},
             "forced": forced_backend(), "notes": list(notes)})


# ---- the machine constants the model runs with

_machine = {"m": None}
_machine_lock = threading.Lock()


def machine() -> _costmodel.Machine:
    """The constants in use: calibrate's for its own thread while it probes,
    else injected (tests), else calibrated / cached / defaults."""
    m = _override.machine or _machine["m"]
    if m is None:
        with _machine_lock:
            if _machine["m"] is None:
                # the measurement calls the public functions, which ask for
                # the constants: they get the safe defaults meanwhile
                _machine["m"] = _calibrate.defaults()
                _machine["m"] = _calibrate.constants()
                fast_invalidate()
            m = _machine["m"]
    return m


def set_machine(m: _costmodel.Machine | None) -> None:
    """Inject machine constants (tests, benchmarks); None: back to calibrated."""
    with _machine_lock:
        _machine["m"] = m
    fast_invalidate()


# ---- the test hook for the two-engine split on a machine without a GPU

_stand_in = {"gpu": None}


def set_gpu_stand_in(backend_name: str | None) -> None:
    """Test hook: run the "GPU" half of a cpu+cuda split on this backend
    (e.g. "cpu"), so that the split, the threads and the merge run on a
    CPU-only machine.  None: the real CUDA engine."""
    _stand_in["gpu"] = backend_name
    fast_invalidate()


def _gpu_name() -> str:
    return _stand_in["gpu"] or "cuda"


_cuda = {"ok": None}  # whether the CUDA engine can run here: asked once


def _gpu_usable() -> bool:
    if _stand_in["gpu"] is not None:
        return True
    if _cuda["ok"] is None:
        _cuda["ok"] = _backend.cuda_available()
    return _cuda["ok"]


# ---- the C fast path's limits (csrc/python/module.c, "per-call fast path")

_fast = {"synced": False}
_FAST_SHAPES = {  # op -> (bytes read per element for 1-byte and 8-byte items, result bytes)
    "sum": ((1, 8), 8), "dot": ((2, 16), 8), "count_nonzero": ((1, 8), 8), "packbits": ((1, 8), 0),
    "cumsum": ((1, 8), 0), "histogram": ((1, 8), 8), "bincount": ((1, 8), 8), "unpackbits": ((1,), 0),
}
_COST_OP = {"unpackbits": "packbits"}  # the model's nearest op: one pass over bytes (the CPU engine picks threads)


def _engine_limit(m, op, allowed, engines) -> int:
    """The largest n for which the model picks one of `engines` (for every
    item size the fast path takes; the model's choice is monotone in n)."""
    if not set(engines) & set(allowed):
        return 0
    limit = 1 << 40
    for in_bytes in _FAST_SHAPES[op][0]:
        def ours(n):
            s = _costmodel.Shape(_COST_OP.get(op, op), n, in_bytes, _FAST_SHAPES[op][1] or n * 8, 1, True, "host")
            return _costmodel.choose(m, s, allowed).engine in engines
        lo, hi = 0, 1 << 34
        if ours(hi):
            continue
        if not ours(1):
            return 0
        while hi - lo > 1:  # ours(lo) and not ours(hi)
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ours(mid) else (lo, mid)
        limit = min(limit, lo)
    return limit


def _fast_limits(m, op, allowed) -> tuple:
    """(calling thread alone up to, the fast path at all up to): the CPU
    engine's sizes (caller or pool: the pool's threads the engine's own
    choice); the GPU's and the split's go through the general path."""
    caller = _engine_limit(m, op, allowed, ("caller",))
    return caller, max(caller, _engine_limit(m, op, allowed, ("caller", "cpu")) if "caller" in allowed else 0)


_limits_memo: dict = {}  # (id(machine), allowed) -> (machine, limits): the bisections run once per state


def fast_sync() -> None:
    """Give the C fast path its per-op limits for the current state.  The
    limits are those of an unset GPUSYNC_ENGINE whatever it holds now: the C
    fast path steps aside per call while the variable steers the engine, and
    limits made under it outlived it (a sync while GPUSYNC_ENGINE=cpu left the
    fast path off after the variable was removed: every later small call took
    the general path)."""
    allowed = _allowed_unsteered(forced_backend())
    m = machine()
    key = (id(m), tuple(allowed))
    hit = _limits_memo.get(key)
    if hit is None or hit[0] is not m:  # (a machine replaced since: its id may be reused)
        names = _core.fast_config(None)
        hit = _limits_memo[key] = (m, tuple(_fast_limits(m, op, allowed) for op in names))
    _core.fast_config(hit[1])
    # device arrays: the cuda engine, unless the cpu backend is forced (then
    # they go to the host); the device fast path asks GPUSYNC_DEBUG per call
    _devfast.enable(_backend.forced() != "cpu")
    _fast["synced"] = True


def fast_ready() -> None:
    """fast_sync() unless the fast paths already have the current state: every
    general call (the 1-D ones here, the axis ones in _axis) starts with it.
    Not on a thread that calibrate's forced engine steers: the limits are the
    process's, and that thread's C fast path is off anyway."""
    if not _fast["synced"] and _override.engine is None:
        fast_sync()


def fast_invalidate() -> None:
    """The state the limits came from changed: off until the next general call."""
    _fast["synced"] = False
    _devfast.enable(False)
    _plans.clear()
    _core.fast_config(tuple(-1 for _ in _core.fast_config(None)))


_backend._on_change.append(fast_invalidate)


# ---- run

def _place(op, ins, names):
    """'host' or 'device' (and the device array that leads) for the inputs."""
    lead = None
    for a, name in zip(ins, names):
        if a is None:
            continue
        if lead is None:
            lead = (a, name)
            continue
        if isinstance(a, DeviceArray) != isinstance(lead[0], DeviceArray):
            side = "a device array" if isinstance(lead[0], DeviceArray) else "a host array"
            raise ValueError(f"{op}: {name}: {lead[1]} is {side} but {name} is not; put both on one side "
                             "(both host arrays or both on one device)")
        if isinstance(a, DeviceArray) and a.device != lead[0].device:
            raise ValueError(f"{op}: {name} is on device {a.device}, but {lead[1]} is on device {lead[0].device}")
    if lead is not None and isinstance(lead[0], DeviceArray):
        return "device", lead[0]
    return "host", None


def _desc(a):
    return a.desc() if isinstance(a, DeviceArray) else a


def _to_host(a):
    if not isinstance(a, DeviceArray):
        return a
    h = a.to_host()
    return h.view(a.dtype) if h.dtype != a.dtype else h


def _allowed(forced):
    """The engines a host-input call may use, given what is forced."""
    env = env_engine()
    if env != "auto":
        if env in ("cuda", "cpu+cuda") and not _gpu_usable():
            return ("caller", "cpu"), f"GPUSYNC_ENGINE={env} but CUDA is not available here: CPU engine"
        if forced == "cpu" and env in ("cuda", "cpu+cuda"):
            return ("caller", "cpu"), f"GPUSYNC_ENGINE={env} ignored: the cpu backend is forced"
        return (env,), ""
    return _allowed_unsteered(forced), ""


def _allowed_unsteered(forced):
    """The engines a host-input call may use with GPUSYNC_ENGINE unset (or auto)."""
    if forced == "cpu":
        return ("caller", "cpu")
    if forced == "cuda":
        return ("cuda",)
    if _gpu_usable():
        return ("caller", "cpu", "cuda", "cpu+cuda")
    return ("caller", "cpu")


# Plans of repeated host-input calls that ran on the CPU engine: the model's
# choice for the same op, size, dtypes, bins, strategy and forced state is the
# same, so a repeated call skips routing and the model.  Keyed also by the
# environment variables that steer the choice and by the constants in use.
_plans: dict = {}
_PLANS_MAX = 4096


def run(op, ins, outs, call, *, strategy="auto", names=None, bins=0, in_bytes=None, merge=False,
        part_dtypes=None, n=None, into=None):
    """Run one op: route, choose the engine, allocate, call, record the plan.

    ins     the inputs: flat host arrays (NumPy, native and aligned; 1-D
            views with a stride of whole elements, any sign, for the ops
            whose CPU loops take strides: sum, dot -- the GPU engines get
            C-contiguous copies) or DeviceArray views, all on one side; None
            entries pass through.
    outs    [(length, dtype), ...] of the outputs to allocate.
    call    call(backend_name, ins, outs, strategy, stream) -> strategy used;
            ins / outs as the C core takes them (NumPy arrays or descriptors).
    merge   the outputs of disjoint parts add up (histogram counts, sums):
            the input may be split between two engines.
    part_dtypes  the dtypes of a part's outputs when they differ from the
            final ones (float32 sums: float64 partials, rounded once).
    into    None, or one entry an output: a flat, C-contiguous, native host
            array of that output's length and dtype that the call writes in
            place instead of a new one (None entries: allocated).  Host
            input only, never with merge.

    Returns the list of outputs: NumPy arrays for host input, arrays of the
    input's library on its device for device input.
    """
    if n is None and all(type(a) is np.ndarray or a is None for a in ins):  # host input: the cached plan
        m = _override.machine or _machine["m"]
        key = (op, strategy, bins, merge, forced_backend(), env_engine(), _core.cpu_pool_warm(),
               _stand_in["gpu"], id(m),
               tuple(None if a is None else (a.size, a.dtype, a.flags.c_contiguous) for a in ins))
        hit = _plans.get(key)
        if hit is not None and hit[3] is m:  # (the machine itself: a freed one's id may be reused)
            plan, threads, used_strategy, _ = hit
            res = _alloc(outs, None, into)
            _core.cpu_threads(_override.threads or threads)
            try:
                used = call("cpu", ins, res, used_strategy, _arrays.host_stream())
            finally:
                _core.cpu_threads(0)
            _record(plan, used, _core.cpu_last_threads())
            return res
        res = _run(op, ins, outs, call, strategy, names, bins, in_bytes, merge, part_dtypes, n, into)
        plan = _tls.plan[0]
        if plan["engine"] in ("caller", "cpu") and plan["place"] == "host" and not any(
                "fell back" in t for t in plan["notes"]):
            if len(_plans) >= _PLANS_MAX:
                _plans.clear()
            if m is None:  # (the process's first call: the constants were loaded during it)
                m = _override.machine or _machine["m"]
                key = key[:8] + (id(m),) + key[9:]
            _plans[key] = (plan, plan["threads"], engine_strategy(op, strategy, "caller")[0], m)
        return res
    return _run(op, ins, outs, call, strategy, names, bins, in_bytes, merge, part_dtypes, n, into)


def _run(op, ins, outs, call, strategy, names, bins, in_bytes, merge, part_dtypes, n, into=None):
    """run() without a cached plan."""
    fast_ready()
    names = names or [f"in{i}" for i in range(len(ins))]
    place, lead = _place(op, ins, names)
    forced = forced_backend()
    first = next(a for a in ins if a is not None)
    n = int(first.size if n is None else n)
    dtype = first.dtype
    notes = []
    if in_bytes is None:
        in_bytes = sum(np.dtype(a.dtype).itemsize for a in ins if a is not None)
    out_bytes = sum(int(L) * np.dtype(d).itemsize for L, d in outs)
    contiguous = place == "device" or all(a is None or a.flags.c_contiguous for a in ins)  # strided: _host_view
    hist1d = op in ("histogram", "bincount")
    shape = _costmodel.Shape(op, n, in_bytes, out_bytes, bins, contiguous, place,
                             place == "host" and _core.cpu_pool_warm(), hist1d)
    plan = {"op": op, "place": place, "n": n, "dtype": str(np.dtype(dtype)), "engine": None, "strategy": strategy,
            "strategy_used": None, "threads": 0, "split": None, "predicted_ms": {}, "forced": forced,
            "notes": notes}

    if place == "device":
        if into is not None:
            raise ValueError("run: into= takes host outputs for host input")
        lib = Lib.of(lead.lib)
        if _backend.backend() == "cpu":  # the CPU engine, forced: copy, compute, copy back
            notes.append("device input copied to the host: the cpu backend is forced")
            host = [_to_host(a) for a in ins]
            hshape = _costmodel.Shape(op, n, in_bytes, out_bytes, bins, True, "host", _core.cpu_pool_warm(), hist1d)
            res = _run_host(op, host, outs, call, strategy, hshape, ("caller", "cpu"), plan, merge, part_dtypes)
            plan["place"] = "device"
            _record(plan, None, _ran_threads(plan))
            return [lib.from_host(r, lead.device) for r in res]
        res = [lib.empty(int(L), d, lead.device) for L, d in outs]
        descs = [new_desc(lib, r, int(L), d, lead.device) for r, (L, d) in zip(res, outs)]
        plan.update(engine="cuda", predicted_ms=shape)  # computed when last_plan() asks: not per call
        plan["strategy_used"] = call("cuda", [_desc(a) for a in ins], descs, strategy, lead.stream)
        _record(plan)
        return res

    allowed, note = _allowed(forced)
    if note:
        notes.append(note)
    res = _run_host(op, ins, outs, call, strategy, shape, allowed, plan, merge, part_dtypes, into)
    _record(plan, None, _ran_threads(plan))
    return res


def _alloc(outs, dtypes=None, into=None):
    """The host outputs: into's arrays where given (run's contract), new ones else."""
    return [np.empty(int(L), d if dtypes is None else dtypes[i]) if into is None or into[i] is None else into[i]
            for i, (L, d) in enumerate(outs)]


def _call_cpu(op, ins, outs_arr, call, strategy, threads, plan):
    used, note = engine_strategy(op, strategy, "caller")
    if note:
        plan["notes"].append(note)
    _core.cpu_threads(_override.threads or threads)
    try:
        return call("cpu", ins, outs_arr, used, _arrays.host_stream())
    finally:
        _core.cpu_threads(0)


def host_engines(allowed, split: bool):
    """The engines a host-input call chooses among: `allowed` (_allowed) less
    cpu+cuda where the call cannot be split (the CPU engine when that leaves
    none), and the CPU engine where the one left is a GPU engine that cannot
    run here."""
    if not split:
        allowed = tuple(e for e in allowed if e != "cpu+cuda") or ("caller", "cpu")
    if len(allowed) == 1 and allowed[0] in ("cuda", "cpu+cuda") and not _gpu_usable():
        allowed = ("caller", "cpu")
    return allowed


def _run_host(op, ins, outs, call, strategy, shape, allowed, plan, merge, part_dtypes, into=None):
    m = machine()
    if not m.gpu and _stand_in["gpu"] is not None:  # the test hook's "GPU" joins the candidates
        m = m.replace(gpu=True)
    allowed = host_engines(allowed, bool(merge) and shape.op in _costmodel.SPLITTABLE)
    choice = _costmodel.choose(m, shape, allowed)
    plan["predicted_ms"] = {k: v * 1e3 for k, v in choice.predicted.items()}
    engine = choice.engine
    if engine in ("cuda", "cpu+cuda"):
        # the GPU backend stages host input as one block: a strided view (sum / dot read it in place on the
        # CPU) goes as a C-contiguous copy, packed on the host (the model's price of a strided input's GPU run)
        ins = [a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a) for a in ins]
        try:
            if engine == "cuda":
                res = _alloc(outs, None, into)
                plan["strategy_used"] = call(_gpu_name(), ins, res, strategy, _arrays.host_stream())
                plan.update(engine="cuda", threads=0)
                return res
            if into is not None:
                raise ValueError("run: into= never with merge (the parts' outputs are added)")
            return _run_split(op, ins, outs, call, strategy, choice, plan, part_dtypes)
        except (_core.CudaError, _core.NoCudaError, MemoryError) as exc:
            if plan["forced"] == "cuda" or env_engine() in ("cuda", "cpu+cuda"):
                raise
            plan["notes"].append(f"fell back to the CPU engine: the GPU failed ({type(exc).__name__}: {exc})")
            choice = _costmodel.choose(m, shape, ("caller", "cpu"))
            engine = choice.engine
    threads = 1 if engine == "caller" else max(2, choice.threads)
    res = _alloc(outs, None, into)
    plan["strategy_used"] = _call_cpu(op, ins, res, call, strategy, threads, plan)
    plan.update(engine=engine, threads=threads)
    return res


def _run_split(op, ins, outs, call, strategy, choice, plan, part_dtypes):
    """Both engines at once on disjoint parts of the flat inputs, then the
    outputs added (counts exactly; float partials in float64, rounded once)."""
    n = plan["n"]
    ng = int(n * choice.gpu_share)
    gpu_ins = [None if a is None else a[:ng] for a in ins]
    cpu_ins = [None if a is None else a[ng:] for a in ins]
    gpu_out, cpu_out = _alloc(outs, part_dtypes), _alloc(outs, part_dtypes)
    box = {}
    stream = _arrays.host_stream()

    def gpu_half():
        _core.stage_threads(choice.crew)  # the staging crew and the CPU pool share the cores
        try:
            box["used"] = call(_gpu_name(), gpu_ins, gpu_out, strategy, stream)
        except BaseException as exc:  # re-raised on the calling thread
            box["error"] = exc
        finally:
            _core.stage_threads(0)

    t = threading.Thread(target=gpu_half, name="gpusync-gpu-half", daemon=True)
    t.start()
    try:
        cpu_used = _call_cpu(op, cpu_ins, cpu_out, call, strategy, choice.threads, plan)
    finally:
        t.join()
    if "error" in box:
        raise box["error"]
    res = []
    for g, c, (L, d) in zip(gpu_out, cpu_out, outs):
        total = np.add(g, c)
        res.append(total if total.dtype == np.dtype(d) else total.astype(d))
    plan.update(engine="cpu+cuda", threads=choice.threads, split={"cuda": ng, "cpu": n - ng, "crew": choice.crew},
                strategy_used=box["used"] if box["used"] == cpu_used else f"{box['used']}+{cpu_used}")
    return res


def new_desc(lib, arr, n, dtype, device):
    """The core's descriptor of an output we just allocated: built from what
    we know (no re-parse of its __cuda_array_interface__)."""
    ptr = getattr(lib, "ptr", None)
    if ptr is None:
        return _arrays.as_input(arr, "out").desc()
    return (ptr(arr), n, 1, _arrays.dtype_code(dtype), device)


def scalar(out):
    """The 0-d result of a one-element output: a NumPy scalar for host output,
    the input library's 0-d result for device output."""
    if isinstance(out, np.ndarray):
        return out[0]
    return Lib.of(_arrays._lib_name(out)).scalar(out)
