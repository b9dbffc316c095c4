"""What every benchmark shares: GPU timers (CUDA events, CUDA-graph replay),
the read ceiling measured in the same run, the CUB/cuBLAS peer library, and
merging rows into <out>/latest.json (each benchmark owns its ops' rows)."""
from __future__ import annotations

import ctypes
import datetime
import json
import os
import subprocess
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1 << 30


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


class Timer:
    def __init__(self, cp):
        self.cp = cp

    def gpu(self, fn, reps=10, inner=1):
        """Median ms per call: events around `inner` back-to-back calls."""
        cp = self.cp
        fn()
        cp.cuda.Device().synchronize()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        ts = []
        for _ in range(reps):
            s.record()
            for _ in range(inner):
                fn()
            e.record()
            e.synchronize()
            ts.append(cp.cuda.get_elapsed_time(s, e) / inner)
        return median(ts)

    def graph(self, fn, reps=10, inner=20):
        """Median ms per call of `inner` calls captured in one CUDA graph."""
        cp = self.cp
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            fn()
            stream.synchronize()
            stream.begin_capture()
            for _ in range(inner):
                fn()
            g = stream.end_capture()
            g.launch()
            stream.synchronize()
            s, e = cp.cuda.Event(), cp.cuda.Event()
            ts = []
            for _ in range(reps):
                s.record(stream)
                g.launch(stream)
                e.record(stream)
                e.synchronize()
                ts.append(cp.cuda.get_elapsed_time(s, e) / inner)
        return median(ts)

    @staticmethod
    def host(fn, reps=3):
        from gpusync.demo import wall_times_ms

        return median(wall_times_ms(fn, reps))


READ_KERNEL = r"""
extern "C" __global__ void read_xor(const uint4 *a, long long n, unsigned *out) {
    unsigned s = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(a + i); s ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x9e3779b9u) out[0] = s;
}
"""


def read_ceiling(cp, timer, buf):
    """GB/s of a plain 16-byte-load read of `buf` (1 GiB): the roof for reductions."""
    k = cp.RawKernel(READ_KERNEL, "read_xor")
    out = cp.zeros(1, cp.uint32)
    n = buf.nbytes // 16
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    ms = timer.gpu(lambda: k((sms * 8,), (512,), (buf, np.int64(n), out)), reps=20)
    return buf.nbytes / ms / 1e6


COPY_KERNEL = r"""
extern "C" __global__ void copy16(const uint4 *a, uint4 *b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        __stcs(b + i, __ldcs(a + i));
}
"""


def copy_ceiling(cp, timer, src, dst):
    """GB/s (bytes read + bytes written) of a 16-byte-vector copy of `src`
    into `dst`: the roof for scans, which read and write every element."""
    k = cp.RawKernel(COPY_KERNEL, "copy16")
    n = min(src.nbytes, dst.nbytes) // 16
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    ms = timer.gpu(lambda: k((sms * 8,), (512,), (src, dst, np.int64(n))), reps=20)
    return 2 * n * 16 / ms / 1e6


PACK_KERNEL = r"""
extern "C" __global__ void read_pack(const uint4 *a, long long n, unsigned short *b) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(a + i); unsigned s = v.x ^ v.y ^ v.z ^ v.w;
        b[i] = (unsigned short)(s ^ (s >> 16));
    }
}
extern "C" __global__ void read_pack_cs(const uint4 *a, long long n, unsigned short *b) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(a + i); unsigned s = v.x ^ v.y ^ v.z ^ v.w;
        __stcs(b + i, (unsigned short)(s ^ (s >> 16)));
    }
}
extern "C" __global__ void __launch_bounds__(256) read_pack16(const uint4 *a, long long n, unsigned short *b) {
    __shared__ __align__(16) unsigned short t[8][256];  // a warp's 8 x 32 outputs, stored as 16 bytes a lane
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long groups = n / 256, nw = (long long)gridDim.x * 8;
    for (long long g = blockIdx.x * 8LL + w; g < groups; g += nw) {
        uint4 v[8];
        for (int j = 0; j < 8; j++) v[j] = __ldcs(a + g * 256 + j * 32 + lane);
        for (int j = 0; j < 8; j++) { unsigned s = v[j].x ^ v[j].y ^ v[j].z ^ v[j].w; t[w][j * 32 + lane] = (unsigned short)(s ^ (s >> 16)); }
        __syncwarp();
        __stcs((uint4 *)b + g * 32 + lane, reinterpret_cast<const uint4 *>(t[w])[lane]);
        __syncwarp();
    }
}
"""


def pack_ceiling(cp, timer, src, graph=False):
    """GB/s of `src` bytes (read only counted) of a kernel that reads 16 bytes
    and writes 2 per thread -- packbits' traffic (a bit out per byte in) with
    no work: the roof of packing 8-bit data, below the read ceiling by what
    its writes cost.  The fastest of: a 2-byte store a thread (plain or
    streaming, __stcs; 8 blocks of 512 a SM: r127 measured them erratic,
    90-229 us at 256 MiB), and a warp's 8 x 64 output bytes gathered in
    shared memory and stored as 16 bytes a lane (4 or 8 blocks of 256 a SM:
    82-87 % of read at 1 GiB in r119-r122).  graph: timed by graph replay as
    bits_table times gpusync (the launch included)."""
    n = src.nbytes // 16
    dst = cp.empty(n, cp.uint16)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    best = None
    for name, blocks, threads in (("read_pack", 8, 512), ("read_pack_cs", 8, 512), ("read_pack16", 4, 256),
                                  ("read_pack16", 8, 256)):
        k = cp.RawKernel(PACK_KERNEL, name)
        fn = lambda: k((sms * blocks,), (threads,), (src, np.int64(n), dst))
        ms = timer.graph(fn, reps=7, inner=5) if graph else timer.gpu(fn, reps=20)
        print(f"  pack roof {name} {blocks}x{threads}/SM {src.nbytes >> 20} MiB: {ms * 1e3:.1f} us", flush=True)
        best = ms if best is None else min(best, ms)
    return src.nbytes / best / 1e6


BINSTAT_ROOF_KERNEL = r"""
template <class V, class T, int N> __device__ void go(const V *x, const V *v, long long n, long long *b, int rv) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        V a = __ldcs(x + i), c = a;
        if (rv) c = __ldcs(v + i);
        const T *pa = (const T *)&a, *pc = (const T *)&c;
        long long o[N];
        for (int j = 0; j < N; j++) o[j] = (long long)(pa[j] + pc[j]);
        for (int j = 0; j < N; j += 2) __stcs((longlong2 *)(b + i * N + j), make_longlong2(o[j], o[j + 1]));
    }
}
extern "C" __global__ void roof_d(const double2 *x, const double2 *v, long long n, long long *b, int rv) { go<double2, double, 2>(x, v, n, b, rv); }
extern "C" __global__ void roof_f(const float4 *x, const float4 *v, long long n, long long *b, int rv) { go<float4, float, 4>(x, v, n, b, rv); }
"""


def binstat_roof(cp, timer, x, v, read_values=True):
    """ms of a kernel with binned_statistic's traffic and no other work: it
    reads the coordinates `x` and (read_values) the values `v` with 16-byte
    streaming loads and writes an int64 a point (SciPy's bin number) -- the
    roof of a 1-D binned statistic that returns its bin numbers."""
    m = cp.RawModule(code=BINSTAT_ROOF_KERNEL, options=("-std=c++17",))
    k = m.get_function("roof_d" if x.dtype == cp.float64 else "roof_f")
    b = cp.empty(x.size, cp.int64)
    nv = x.size // (16 // x.itemsize)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    return timer.gpu(lambda: k((sms * 8,), (512,), (x, v, np.int64(nv), b, np.int32(read_values))), reps=20)


_PEERS = {
    "cub_hist_u8": (ctypes.c_int,), "cub_hist_f32": (ctypes.c_float,), "cub_hist_i32": (ctypes.c_int,),
    "cub_hist_f64": (ctypes.c_double,),
}


def cuda_start(cp):
    """Every GPU benchmark's start: the CUDA backend, the device's facts and a timer."""
    import gpusync as gs

    gs.use_backend("cuda")
    return gs.device_info(), Timer(cp)


def fresh_read_ceiling(cp, timer, info, nbytes=GIB):
    """The device's read ceiling (GB/s) over `nbytes` fresh random bytes, printed
    with the device's name; the buffer is freed."""
    buf = cp.random.randint(0, 256, nbytes, dtype=cp.uint8)
    ceiling = read_ceiling(cp, timer, buf)
    del buf
    print(f"device {info['name']}  read ceiling {ceiling:.0f} GB/s", flush=True)
    return ceiling


def build_peers():
    """CUB and cuBLAS entry points of cub_helper.cu (built once with nvcc)."""
    so = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gpusync_libcubhelper.so")
    src = os.path.join(HERE, "cub_helper.cu")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-Xcompiler", "-fPIC", "-shared", src, "-o", so, "-lcublas"],
                       check=True)
    lib = ctypes.CDLL(so)
    for name, (lt,) in _PEERS.items():
        f = getattr(lib, name)
        f.restype = ctypes.c_double
        f.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int, lt, lt, ctypes.c_void_p, ctypes.c_int]
    lib.set_graph_inner.argtypes = [ctypes.c_int]
    lib.set_graph_inner.restype = None
    for name in ("cub_sum_f32", "cub_sum_i32", "cub_sum_f64", "cub_sum_i64", "cublas_sdot", "cublas_ddot", "cub_scan_f32", "cub_scan_i32",
                 "cub_scan_i32_i64"):
        f = getattr(lib, name, None)
        if f is not None:  # (ptr_a, ptr_b or 0, n, host result ptr, reps) -> ms
            f.restype = ctypes.c_double
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int]
    return lib


def short_device(name):
    """'H100' / 'H200' / the full name: the device column of result rows."""
    for k in ("H100", "H200", "B200", "A100"):
        if k in name:
            return k
    return name


def half_decades(lo=10**4, hi=2 * 10**9):
    """Sizes from lo to hi in half-decades (10^k and round(10^(k+1/2)): most are
    not powers of two), and hi itself."""
    out, k = [], 0
    while True:
        n = int(round(10 ** (k / 2)))
        if n > hi:
            break
        if n >= lo:
            out.append(n)
        k += 1
    if out[-1] != hi:
        out.append(hi)
    return out


def merge_results(outdir, info, rows, ceilings=None, sweeps=None, partial=False):
    """Replace this benchmark's ops' rows in <outdir>/latest.json; keep the rest."""
    path = os.path.join(outdir, "latest.json")
    data = {}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    dev = short_device(info["name"])
    old = short_device(data.get("device", info["name"]))
    for r in data.get("rows", []):  # rows written before rows named their GPU: the file's GPU
        r["device"] = short_device(r.get("device", old))  # (some rows named it in full: one spelling)
    for r in rows:  # each row names its GPU, so that both GPUs' results live side by side
        r["device"] = short_device(r.get("device", dev))
    ops = {r["op"] for r in rows}
    measured = {(r["case"], r["impl"]) for r in rows}
    # a benchmark's rows replace its earlier rows on the same GPU (a partial run, e.g. --dist or
    # --sweep, replaces only the (case, impl) rows it measured: sizes.py's wall-time rows and
    # reduce.py's graph-replay rows of one sweep case live side by side)
    kept = [r for r in data.get("rows", []) if not (r["op"] in ops and r["device"] == dev and
                                                    (not partial or (r["case"], r["impl"]) in measured))]
    data["device"] = info["name"]  # (the GPU of the latest run; each row names its own)
    data["date"] = datetime.date.today().isoformat()
    data.setdefault("ceilings", {}).update(ceilings or {})
    data["rows"] = kept + rows
    if sweeps:
        data.setdefault("sweeps", {}).update(sweeps)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_results(path, data)
    return data


def write_results(path, data):
    """latest.json with one row a line: diffs name the rows that moved, and the file stays a third of
    its indented size (5,000+ rows: 1.0 MB indented)."""
    parts = [f" {json.dumps(k)}: {json.dumps(v, indent=1)}".replace("\n", "\n ")
             for k, v in data.items() if k != "rows"]
    rows = ",\n".join("  " + json.dumps(r) for r in data.get("rows", []))
    parts.append(' "rows": [\n' + rows + "\n ]" if rows else ' "rows": []')
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")


def table(title, ceiling, rows, ref_impl="gpusync:auto"):
    """Markdown table: ms, GB/s, % of the read ceiling, speed vs `ref_impl`."""
    lines = [f"# {title}", "", f"Read ceiling (1 GiB, 16-byte loads): **{ceiling:.0f} GB/s**", "",
             f"| case | impl | ms | GB/s | % of read ceiling | vs {ref_impl} |", "|---|---|---:|---:|---:|---:|"]
    ref = {r["case"]: r["ms"] for r in rows if r["impl"] == ref_impl}
    for r in rows:
        rel = ref.get(r["case"], float("nan")) / r["ms"]
        ok = "" if r.get("correct", True) else " **WRONG**"
        lines.append(f"| {r['case']} | {r['impl']}{ok} | {r['ms']:.4f} | {r['gbps']:.0f} | "
                     f"{100 * r['gbps'] / ceiling:.0f}% | {rel:.2f}x |")
    return "\n".join(lines) + "\n"


def speed_plot(path, rows, title, ref_impl="gpusync:auto"):
    """Bar chart of speed relative to `ref_impl`, per case (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best = {}
    for r in rows:  # graph-replay rows count as the same implementation's device time
        key = (r["case"], r["impl"].replace("(graph)", ""))
        best[key] = min(best.get(key, float("inf")), r["ms"])
    rows = [{"case": c, "impl": i, "ms": ms} for (c, i), ms in best.items()]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    ref = {r["case"]: r["ms"] for r in rows if r["impl"] == ref_impl}
    fig, ax = plt.subplots(figsize=(14, 6))
    width = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        vals = []
        for c in cases:
            m = [r["ms"] for r in rows if r["case"] == c and r["impl"] == impl]
            vals.append(ref[c] / m[0] if m and c in ref else 0)
        ax.bar(np.arange(len(cases)) + i * width, vals, width, label=impl)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(cases)) + 0.4)
    ax.set_xticklabels(cases, rotation=15)
    ax.set_ylabel(f"speed relative to {ref_impl} (higher is faster)")
    ax.set_title(title)
    ax.legend(ncol=4, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
