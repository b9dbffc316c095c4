"""The cost model: predicted time of each engine for one call.

A pure function of the call's shape -- op, dtype, element count, bin count,
contiguity, where the input lives -- and of the machine constants
(:class:`Machine`, measured by ``python -m gpusync calibrate``).  No state,
no I/O: tests inject constants and assert on the choice.

Candidates (host input):

``caller``    the CPU engine on the calling thread alone: no hand-off.
``cpu``       the CPU engine's pool on T threads: hand-off (a pool whose
              workers still spin after the last job hands off without a
              system call: the warm hand-off; else the cold one, waking
              parked threads) + the slower of memory (bytes / host read
              bandwidth at T threads -- the cache's bandwidth when the input
              fits in the last-level cache) and compute (elements / the op's
              rate on T threads, between its measured one-thread and
              all-cores rates).
``cuda``      the GPU: the measured time of a host-input call through the
              public path as a function of its bytes (``gpu_host``: staging,
              copy, launch, sync and the wrapper together; a curve, since the
              staging pipeline's throughput grows with the copy), plus the
              op's kernel time beyond a plain read's, plus the results back.
              Without a measured curve: launch + sync latency and the bytes
              over PCIe (the slower of copy and kernel counts).
``cpu+cuda``  both on disjoint parts of the flat input, the GPU's share sized
              so that both finish together, plus the merge of the results.

Device input: ``cuda`` only (it stays on its device).
"""
from __future__ import annotations

import dataclasses
import functools
import math

# ops whose results merge by addition, so that two engines can share them
SPLITTABLE = frozenset({"histogram", "bincount", "sum", "dot", "count_nonzero"})

# Per-thread compute rate of the CPU engine (elements / s) for each op, and
# the GPU kernel's element rate: defaults, replaced by calibrated values.
# "histogram8": an unweighted histogram or bincount of 8-bit input (one table
# increment per byte, no bin arithmetic: several times the general rate).
_CPU_RATE = {"sum": 1.5e9, "dot": 1.0e9, "count_nonzero": 2.0e9, "packbits": 1.0e9, "cumsum": 6.0e8,
             "histogram": 3.0e8, "histogram8": 1.5e9, "bincount": 4.0e8, "binned_statistic": 8.0e7, "minmax": 1.0e9}
# Where the all-cores rate is unmeasured (the lazy quick calibration times one thread alone): the share of the
# one-thread rate each further thread adds.  Compute-bound loops share cores, caches and memory: 16 threads of the
# H200 / H100 machines' hosts ran histograms at 9.3x / 7.6x one thread, bincount 7.7x / 7.6x, 8-bit histograms
# 6.7x / 6.3x, binned_statistic 7.3x / 6.0x, cumsum 10.8x (calibrate, r238 / r240); the streaming ops (sum, dot,
# count_nonzero, packbits) are bound by memory there and scale as the read bandwidth does (1.0: the memory term
# prices them).
_CPU_SCALING = {"histogram": 0.5, "histogram8": 0.4, "bincount": 0.45, "binned_statistic": 0.4, "cumsum": 0.6,
                "minmax": 1.0, "sum": 1.0, "dot": 1.0, "count_nonzero": 1.0, "packbits": 1.0}
_GPU_RATE = {"sum": 2.0e11, "dot": 1.5e11, "count_nonzero": 2.0e11, "packbits": 2.0e11, "cumsum": 1.0e11,
             "histogram": 6.0e10, "histogram8": 2.0e11, "bincount": 6.0e10, "binned_statistic": 2.0e10,
             "minmax": 2.0e11}


def rate_key(s) -> str:
    """The rate table's key of a call: its op, or "histogram8" for an
    unweighted 8-bit histogram / bincount (one byte read per element)."""
    return "histogram8" if s.in_bytes == 1 and s.op in ("histogram", "bincount") else s.op


@dataclasses.dataclass(frozen=True)
class Machine:
    """Machine constants (SI units: seconds, bytes per second, elements per second).

    ``host_bw`` maps a thread count to the host memory read bandwidth with
    that many threads (a plain parallel read); counts in between interpolate.
    ``cpu_rate`` / ``gpu_rate`` map an op to its per-thread (CPU) or whole-GPU
    element rate when not memory bound.  ``gpu`` False: no CUDA here.
    """

    cores: int = 1
    host_bw: tuple = ((1, 8e9),)
    call_overhead: float = 1.0e-6  # Python + C entry of one CPU-engine call
    handoff: float = 20e-6  # waking the parked pool and joining it (per call)
    handoff_per_thread: float = 1e-6
    handoff_warm: float = -1.0  # the same with the workers still spinning (< 0: as cold)
    cache_bytes: int = 0  # last-level cache; inputs up to half of it read at cache_bw (0: no tier)
    cache_bw: tuple = ()  # ((threads, bytes/s), ...) reading an input that sits in that cache
    cpu_rate: tuple = tuple(sorted(_CPU_RATE.items()))
    cpu_rate_all: tuple = ()  # (op, elements/s on all `cores` threads): measured scaling (absent: _CPU_SCALING)
    # (op, elements/s on all `cores` threads on an input past the last-level cache) for the compute-bound ops:
    # their loops run slower on data streamed from memory than on data the caches hold (H200 host, float64
    # 100-bin histogram: 7.0 G elements/s on 1M elements, 5.7 G on 300M; one thread 1.5 -> 2.3 ns an element
    # from 10^6 to 10^7 elements).  Absent: the in-cache rates.
    cpu_rate_all_mem: tuple = ()
    gpu_host: tuple = ()  # ((bytes, seconds), ...): a host-input float64 sum on the GPU, end to end
    gpu_extra: tuple = ()  # (op, seconds): an op's host-input GPU call beyond a sum of the same bytes
    gpu: bool = False
    h2d_bw: float = 20e9  # pinned host -> device
    d2h_bw: float = 20e9
    gpu_latency: float = 50e-6  # launch + synchronize of a host-input call (H200 host: 48-49 us at n <= 100)
    # both engines at once: a Python thread started and joined, two engines'
    # fixed costs, the staging crew and the CPU pool sharing the cores.
    # Measured on the H200 host (benchmarks/results/sizes.md, 2026-11-23):
    # a split of 10^5..10^6 float64 sums took 0.55-0.82 ms where either
    # engine alone took 0.04-0.42 ms.
    split_overhead: float = 0.5e-3
    # a split's measured time over the model's (the CPU part and the staging crew share the host's memory
    # and cores in ways the terms below do not capture); `python -m gpusync calibrate` measures it on a
    # 256 MB float64 histogram.  H200 host, 30M-300M-element float64 100-bin histograms
    # (benchmarks/results/split_H200_r237.txt): 1.0-1.85, median 1.3, against the model with 4 bytes of host
    # traffic a staged byte.
    split_slowdown: float = 1.3
    gpu_bw: float = 1.0e12  # device memory bandwidth seen by a kernel
    gpu_rate: tuple = tuple(sorted(_GPU_RATE.items()))
    merge_bw: float = 4e9  # adding two partial results on the host (bytes / s)

    @functools.cached_property
    def _tables(self) -> dict:
        """The tuple fields as the lookups the model makes (built once per
        Machine: the model runs on every general-path call)."""
        return {"host_bw": sorted(self.host_bw), "cache_bw": sorted(self.cache_bw), "cpu_rate": dict(self.cpu_rate),
                "gpu_rate": dict(self.gpu_rate), "cpu_rate_all": dict(self.cpu_rate_all),
                "cpu_rate_all_mem": dict(self.cpu_rate_all_mem), "gpu_extra": dict(self.gpu_extra)}

    def in_cache(self, nbytes: float) -> bool:
        """Whether an input of `nbytes` sits in the last-level cache between calls (half of it, as measured)."""
        return bool(self.cache_bw) and nbytes <= self.cache_bytes / 2

    def bandwidth(self, threads: int, nbytes: float = math.inf) -> float:
        """Host read bandwidth with `threads` threads (linear interpolation)
        for an input of `nbytes`: from the cache when it fits in half of it."""
        pts = self._tables["cache_bw" if self.in_cache(nbytes) else "host_bw"]
        if threads <= pts[0][0]:
            return pts[0][1] * threads / pts[0][0]
        for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
            if threads <= t1:
                return b0 + (b1 - b0) * (threads - t0) / (t1 - t0)
        return pts[-1][1]

    def rate(self, op: str, gpu: bool = False) -> float:
        table = self._tables["gpu_rate" if gpu else "cpu_rate"]
        return table.get(op, (_GPU_RATE if gpu else _CPU_RATE).get(op, 1e8))

    def cpu_total_rate(self, op: str, threads: int, nbytes: float = 0.0) -> float:
        """Elements / s of `op` on `threads` threads for an input of `nbytes`:
        linear from the one-thread rate to the measured all-cores rate (when
        unmeasured, each further thread adds the op's _CPU_SCALING share).  Past the cache, where the op's all-cores
        rate was measured there too, both ends scale by that rate's ratio to
        the in-cache one."""
        one = self.rate(op)
        full = self._tables["cpu_rate_all"].get(op)
        mem = self._tables["cpu_rate_all_mem"].get(op)
        if mem is not None and full and self.cache_bytes > 0 and not self.in_cache(nbytes):
            one, full = one * min(1.0, mem / full), min(mem, full)  # (a past-cache rate above the cache's: noise)
        if self.cores <= 1:
            return one * threads
        if full is None:  # unmeasured: the default share each further thread adds
            return one * (1 + (threads - 1) * _CPU_SCALING.get(op, 1.0))
        full = max(one, full)
        return one + (full - one) * (min(threads, self.cores) - 1) / (self.cores - 1)

    def gpu_host_time(self, nbytes: float) -> float:
        """The measured host-input call time at `nbytes` (piecewise linear in
        bytes; the first point below it, the last slope beyond the last)."""
        pts = self.gpu_host
        if nbytes <= pts[0][0]:
            return pts[0][1]
        for (b0, t0), (b1, t1) in zip(pts, pts[1:]):
            if nbytes <= b1:
                return t0 + (t1 - t0) * (nbytes - b0) / (b1 - b0)
        (b0, t0), (b1, t1) = pts[-2], pts[-1]
        return t1 + (t1 - t0) / (b1 - b0) * (nbytes - b1)

    def replace(self, **kw) -> "Machine":
        return dataclasses.replace(self, **kw)


@dataclasses.dataclass(frozen=True)
class Shape:
    """What the model needs to know about one call."""

    op: str
    n: int  # elements of the (first) input
    in_bytes: int  # bytes read per element, all inputs together
    out_bytes: int = 8  # bytes of the result(s)
    bins: int = 0
    contiguous: bool = True
    place: str = "host"  # "host" or "device"
    pool_warm: bool = False  # the CPU pool's workers still spin after the last job
    # a 1-D histogram / bincount of csrc/cpu/hist.c (not histogramdd's copies): the engine's thread rule
    # (_count_threads) and the zeroing of a result counted in place
    hist1d: bool = False


@dataclasses.dataclass
class Choice:
    engine: str  # "caller", "cpu", "cuda" or "cpu+cuda"
    threads: int  # CPU threads (0: none)
    gpu_share: float  # fraction of the elements on the GPU (cpu+cuda)
    predicted: dict  # candidate -> predicted seconds
    crew: int = 0  # cpu+cuda: staging threads of the GPU's part (the CPU part has `threads`; 0: the crew's own size)


# No pool hand-off costs less than this, whatever a calibration measured: a job crosses cores at least twice (the
# go word out, the finish back).  The cheapest measured: the H200 host's 2-thread warm hand-off, 0.26-0.27 us at
# its 10th percentile (benchmarks/results/pool_handoff_H200_r243.txt).  The quick calibration takes the median
# of a 2-core VM's warm hand-off minus the median of the same call alone, which noise can drive to 0: a pool
# priced free then won every size -- a 100-element sum went to the pool (tests/test_env.py's flake).
HANDOFF_MIN = 0.25e-6


def _count_threads(s: Shape, n: float, t: int) -> int:
    """The threads the CPU engine counts a 1-D histogram / bincount of n
    elements on when it may use t (csrc/cpu/hist.c): no more private copies
    of the bins than the elements outweigh (t x bins <= n); one thread counts
    straight into the result."""
    if not s.hist1d or s.bins <= 0:
        return t
    return max(1, min(t, int(n // s.bins)))


def _cpu_time(m: Machine, s: Shape, n: float, threads: int) -> float:
    if n <= 0:
        return 0.0
    t = max(1, threads)
    tc = _count_threads(s, n, t)
    eff_bytes = s.in_bytes if s.contiguous else max(s.in_bytes, 64)  # a strided read moves whole lines
    mem = n * eff_bytes / m.bandwidth(tc, s.n * s.in_bytes)  # the whole input decides where it sits
    comp = n / m.cpu_total_rate(rate_key(s), tc, s.n * s.in_bytes)
    if s.hist1d:
        # tc > 1: tc - 1 private copies to clear and merge; one counting thread: the result zeroed first, on
        # the t threads (hist.c zero_result) -- what a call of few elements into many bins costs (1000 values
        # into 10^6 bins: 8 MB of zeros, 0.16 ms on one thread of the 2-core CI box, 0.34 ms on the H200
        # host's, 0.03 ms on its 16)
        priv = s.bins * 8 * (tc - 1) / m.merge_bw
        zero = s.bins * 8 / m.bandwidth(t, s.bins * 8) if tc == 1 else 0.0
    else:
        priv = s.bins * 8 * (t - 1) / m.merge_bw if s.op in ("histogram", "bincount", "binned_statistic") else 0.0
        zero = 0.0
    cold = m.handoff + m.handoff_per_thread * t
    hand = 0.0 if t == 1 else max(HANDOFF_MIN, min(cold, m.handoff_warm) if s.pool_warm and m.handoff_warm >= 0
                                   else cold)
    return m.call_overhead + hand + max(mem, comp) + priv + zero


# host-memory bytes per input byte of a staged host-to-device copy: the crew reads the array (1), writes the
# pinned buffer (2: the line is read for ownership first; the crew's stores are not streaming by default) and
# the DMA reads it (1).  With 3, the H200 host's 300M-element float64 histogram split measured 48.5-56 ms
# against a predicted 38.9 (bound by this term); with 4 the term predicts 49.2.
STAGE_HOST_TRAFFIC = 4


def _gpu_time(m: Machine, s: Shape, n: float, crew: int = 0) -> float:
    """The GPU's time for n elements; `crew` > 0: host input staged by that
    many threads (a split: the rest of the cores run the CPU's part), whose
    copies move at most crew x half the one-thread read bandwidth (a copy
    reads and writes)."""
    if n <= 0:
        return 0.0
    nbytes = n * s.in_bytes
    kernel = max(nbytes / m.gpu_bw, n / m.rate(rate_key(s), gpu=True))
    if s.place == "device":
        return m.gpu_latency + kernel
    staged = m.gpu_latency + nbytes / (crew * m.bandwidth(1) / 2) if crew > 0 else 0.0
    if m.gpu_host:  # measured end to end; the op's kernel beyond a read, its own fixed costs, packing, results
        t = max(m.gpu_host_time(nbytes), staged) + (kernel - nbytes / m.gpu_bw) + s.out_bytes / m.d2h_bw \
            + m._tables["gpu_extra"].get(rate_key(s), m._tables["gpu_extra"].get(s.op, 0.0))
        if not s.contiguous:
            t += nbytes / m.bandwidth(1)
        return t
    copy = max(nbytes / m.h2d_bw, staged - m.gpu_latency)
    if not s.contiguous:  # packed on the host first
        copy += nbytes / m.bandwidth(1)
    return m.gpu_latency + max(copy, kernel) + s.out_bytes / m.d2h_bw


def _thread_counts(cores: int):
    t, seen = 1, []
    while t < cores:
        seen.append(t)
        t *= 2
    seen.append(max(1, cores))
    return sorted(set(seen))


def best_pool(m: Machine, s: Shape, n: float):
    """(threads, seconds) of the fastest pool size (2 .. cores threads)."""
    best = (0, math.inf)
    for t in _thread_counts(m.cores):
        if t < 2:
            continue
        c = _cpu_time(m, s, n, t)
        if c < best[1]:
            best = (t, c)
    return best


def split(m: Machine, s: Shape, threads: int, crew: int = 0):
    """(gpu_share, seconds) of both engines on disjoint parts finishing
    together: the CPU's part on `threads` pool threads, the GPU's staged by
    `crew` threads (0: the crew's own size).

    Each side is affine in its element count: t = L + k n.  Equal finish
    times give the GPU's share; the merge of the two results is added."""
    n = s.n
    half = n / 2.0  # both sides are affine in their share: two points give slope and intercept
    c_per = (_cpu_time(m, s, n, threads) - _cpu_time(m, s, half, threads)) / half
    c_lat = _cpu_time(m, s, n, threads) - n * c_per
    g_per = (_gpu_time(m, s, n, crew) - _gpu_time(m, s, half, crew)) / half
    g_lat = _gpu_time(m, s, n, crew) - n * g_per
    f = (c_lat - g_lat + n * c_per) / (n * (g_per + c_per))
    f = min(1.0, max(0.0, f))
    ng = int(n * f)
    return f, _split_time(m, s, ng, threads, crew)


def _split_time(m: Machine, s: Shape, ng: int, threads: int, crew: int) -> float:
    # the GPU part is staged through the host's memory (read from the user's
    # array, written to pinned buffers, read again by the DMA), so the host's
    # memory bandwidth is shared: a split cannot beat the CPU pool alone when
    # the pool is already bound by host memory
    n = s.n
    host = ((n - ng) + STAGE_HOST_TRAFFIC * ng) * s.in_bytes / m.bandwidth(m.cores, n * s.in_bytes)
    return max(_gpu_time(m, s, ng, crew), _cpu_time(m, s, n - ng, threads), host) * m.split_slowdown \
        + s.out_bytes / m.merge_bw + m.split_overhead


def best_split(m: Machine, s: Shape):
    """(cpu threads, crew, gpu_share, seconds) of the best split: the cores
    shared between the CPU's part and the GPU part's staging crew (one core
    left to the thread that drives the GPU), so that neither waits for a
    core; the pool alone (crew 0) on machines too small to share."""
    best = None
    free = m.cores - 1
    crews = sorted({c for c in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128) if c < free} | {free // 2} - {0})
    for crew in crews:  # a geometric ladder of crew sizes: the model runs on every large host call
        t = free - crew
        f, c = split(m, s, t, crew)
        if best is None or c < best[3]:
            best = (t, crew, f, c)
    if best is None:  # two cores or fewer: no room for both
        t = best_pool(m, s, s.n)[0] or 1
        f, c = split(m, s, t)
        best = (t, 0, f, c)
    return best


def choose(m: Machine, s: Shape, engines=("caller", "cpu", "cuda", "cpu+cuda")) -> Choice:
    """The engine predicted to finish first among `engines` (those allowed:
    a forced backend narrows them), with every candidate's predicted time."""
    if s.place == "device":
        t = _gpu_time(m, s, s.n)
        return Choice("cuda", 0, 1.0, {"cuda": t})
    pred, info = {}, {}
    if "caller" in engines:
        pred["caller"] = _cpu_time(m, s, s.n, 1)
        info["caller"] = (1, 0.0)
    if "cpu" in engines and m.cores > 1:
        t, c = best_pool(m, s, s.n)
        if t:
            pred["cpu"] = c
            info["cpu"] = (t, 0.0)
    if m.gpu and "cuda" in engines:
        pred["cuda"] = _gpu_time(m, s, s.n)
        info["cuda"] = (0, 1.0)
    # a split costs at least its fixed cost: search the core shares only when that alone beats the best
    # single engine (or the split is forced)
    if m.gpu and "cpu+cuda" in engines and s.op in SPLITTABLE and s.n >= 2 and (
            engines == ("cpu+cuda",) or not pred or m.split_overhead < min(pred.values())):
        t, crew, f, c = best_split(m, s)
        if engines == ("cpu+cuda",):  # forced: both halves get work, whatever the model says
            f = f if 0.0 < f < 1.0 else 0.5
            ng = min(max(int(s.n * f), 1), s.n - 1)
            f = (ng + 0.5) / s.n  # int(n * f) == ng
            c = _split_time(m, s, ng, t, crew)
        if 0.0 < f < 1.0:
            pred["cpu+cuda"] = c
            info["cpu+cuda"] = (t, f, crew)
    if not pred:  # nothing allowed fits (e.g. "cpu" on one core): the caller
        pred["caller"] = _cpu_time(m, s, s.n, 1)
        info["caller"] = (1, 0.0)
    engine = min(pred, key=pred.__getitem__)
    threads, share, *crew = info[engine]
    return Choice(engine, threads, share, pred, crew[0] if crew else 0)
