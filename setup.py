"""Build gpusync._core: C sources with the C compiler, csrc/cuda/*.cu with nvcc.

A custom build_ext compiles every .cu file into an object (in parallel) and
hands the objects to setuptools as extra_objects, linked against the static
CUDA runtime.  Without nvcc (or with GPUSYNC_NO_CUDA=1) the same command
builds the CPU-only package: csrc/nocuda/cuda_stub.c stands in for the CUDA
backend.  Every object, C and CUDA, comes from a persistent cache named by a
hash of what went into it, so a second `pip install` (whose build directory
is always fresh) compiles nothing that did not change.

Environment:
  GPUSYNC_CUDA_ARCHS  which GPUs to build for.  Unset: the compute
                      capabilities of the GPUs visible here (nvidia-smi, else
                      the driver through libcuda), plus PTX of the newest; with
                      no GPU visible, sm_75, sm_80 and sm_90 + PTX compute_90.
                      "all": every architecture this nvcc supports from sm_75
                      (wheels, CI).  Else a list, e.g. "90" or "75;80;90" or
                      "8.6,9.0" (PTX of the newest is always added).
  GPUSYNC_NO_CUDA=1   build the CPU-only backend even if nvcc is present.
  CUDA_HOME           where the toolkit lives (else nvcc on PATH, else
                      /usr/local/cuda, the toolkit installers' default).
  GPUSYNC_CUDA_OBJDIR the object cache (default: $XDG_CACHE_HOME/gpusync/objs,
                      i.e. ~/.cache/gpusync/objs); "off" compiles everything
                      in the build directory.  Objects are named by a hash of
                      their source, every header, the compiler's version and
                      the flags; unused for 30 days, they are deleted.
  GPUSYNC_PTXAS_VERBOSE=1  print ptxas' register / spill report.
"""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from glob import glob

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join("csrc")
MIN_ARCH = 75                 # the oldest architecture gpusync's kernels are written for
PORTABLE_ARCHS = (75, 80, 90)  # no GPU visible: see docs/build.md ("Architectures")
CACHE_DAYS = 30


def say(msg):
    print(f"gpusync: {msg}", flush=True)


def find_nvcc():
    """(path, how it was found), or (None, why not).  /usr/local/cuda is
    tried last on purpose: it is where NVIDIA's installers put the toolkit,
    and they do not add it to PATH."""
    if os.environ.get("GPUSYNC_NO_CUDA", "") not in ("", "0"):
        return None, "GPUSYNC_NO_CUDA is set"
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc"), f"from {var}"
    found = shutil.which("nvcc")
    if found:
        return found, "on PATH"
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda/bin/nvcc", "the default toolkit location (not on PATH, CUDA_HOME unset)"
    return None, "no nvcc on PATH, in CUDA_HOME or in /usr/local/cuda"


def parse_arch(text):
    """'90', '9.0', 'sm_90', 'compute_90' -> 90."""
    t = text.strip().lower()
    for prefix in ("sm_", "compute_"):
        t = t[len(prefix):] if t.startswith(prefix) else t
    m = re.fullmatch(r"(\d+)\.(\d)|(\d+)", t)
    if not m:
        raise ValueError(f"not a CUDA architecture: {text!r} (expected e.g. 90, 9.0 or sm_90)")
    return int(m.group(1)) * 10 + int(m.group(2)) if m.group(1) else int(m.group(3))


def nvcc_supported_archs(nvcc):
    out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout
    return sorted({int(m) for m in re.findall(r"compute_(\d+)", out)})


def visible_gpu_archs():
    """Compute capabilities of the GPUs visible here: (sorted list, source).
    nvidia-smi first; where it is missing, the driver library itself."""
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if res.returncode == 0:
            caps = [parse_arch(line) for line in res.stdout.split() if line.strip()]
            if caps:
                return sorted(set(caps)), "nvidia-smi"
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int(0)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(n)) != 0:
            return [], "the driver reports no usable device"
        caps = set()
        for d in range(n.value):
            dev, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
            if (cuda.cuDeviceGet(ctypes.byref(dev), d) == 0
                    and cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) == 0    # ..._COMPUTE_CAPABILITY_MAJOR
                    and cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) == 0):  # ..._COMPUTE_CAPABILITY_MINOR
                caps.add(major.value * 10 + minor.value)
        return sorted(caps), "libcuda"
    except (OSError, AttributeError):
        return [], "no nvidia-smi and no libcuda"


def cuda_archs(nvcc):
    """(SASS architectures, PTX architecture, why) for this build."""
    supported = [a for a in nvcc_supported_archs(nvcc) if a >= MIN_ARCH]
    if not supported:
        raise SystemExit(f"gpusync: {nvcc} supports no architecture from sm_{MIN_ARCH} up")
    env = os.environ.get("GPUSYNC_CUDA_ARCHS", "").strip()
    if env.lower() == "all":
        return supported, supported[-1], "GPUSYNC_CUDA_ARCHS=all: every architecture this nvcc supports"
    if env:
        try:
            archs = sorted({parse_arch(a) for a in re.split(r"[;, ]+", env) if a})
        except ValueError as e:
            raise SystemExit(f"gpusync: GPUSYNC_CUDA_ARCHS: {e}")
        bad = [a for a in archs if a not in supported]
        if bad or not archs:
            raise SystemExit(f"gpusync: GPUSYNC_CUDA_ARCHS={env}: this nvcc builds sm_"
                             + ", sm_".join(map(str, supported)) + " only")
        return archs, archs[-1], f"GPUSYNC_CUDA_ARCHS={env}"
    caps, source = visible_gpu_archs()
    usable = [c for c in caps if c >= supported[0]]  # older GPUs: neither gpusync nor this nvcc builds for them
    if usable:
        # a GPU this nvcc does not know runs the SASS of an older minor version of its major
        # one (binary compatible) where there is one, else the PTX of the newest below it
        archs = sorted({max([a for a in supported if a // 10 == c // 10 and a <= c], default=0)
                        for c in usable} - {0})
        older = [a for a in supported if a <= max(usable)]
        ptx = max(archs + older[-1:])
        newer = [c for c in usable if c not in supported]
        if newer:
            say(f"compute capability {', '.join(f'{c // 10}.{c % 10}' for c in newer)} is not known to this "
                f"nvcc: building sm_{', sm_'.join(map(str, archs)) or '-'} and PTX compute_{ptx} "
                "(which the driver compiles on first use) for it")
        return archs, ptx, f"the GPUs visible here ({source})"
    why = (f"no GPU visible ({source})" if not caps
           else f"no GPU of compute capability >= {supported[0] // 10}.{supported[0] % 10} here ({source})")
    archs = [a for a in PORTABLE_ARCHS if a in supported] or supported[-1:]
    return archs, archs[-1], f"{why}: a portable set"


def headers_digest():
    """Every file under csrc/ that is not itself compiled (headers of any
    extension), by path and content: a changed header recompiles everything."""
    h = hashlib.sha256()
    for path in sorted(glob(os.path.join(CSRC, "**", "*"), recursive=True)):
        if not os.path.isfile(path) or path.endswith((".c", ".cu")):
            continue
        h.update(path.encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def tool_version(cmd):
    try:
        return subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


class ObjectCache:
    """Objects named by a hash of everything that went into them (source,
    headers, compiler version, flags).  A miss compiles into a temporary name
    and renames it, so parallel builds sharing the folder never read half an
    object; a hit is touched, and objects unused for CACHE_DAYS are deleted."""

    def __init__(self, folder):
        self.folder = folder
        self.hits = self.misses = 0

    @staticmethod
    def default_folder(build_temp):
        env = os.environ.get("GPUSYNC_CUDA_OBJDIR", "").strip()
        if env.lower() in ("off", "0", "none", "no"):
            return os.path.join(build_temp, "objs"), "off (GPUSYNC_CUDA_OBJDIR=off)"
        if env:
            return os.path.abspath(os.path.expanduser(env)), "GPUSYNC_CUDA_OBJDIR"
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "gpusync", "objs"), "the default; GPUSYNC_CUDA_OBJDIR=off disables it"

    def build(self, jobs, workers):
        """jobs: (source, key text, compile(source, out_path)) -> object paths, in order."""
        os.makedirs(self.folder, exist_ok=True)

        def one(job):
            src, key, compile_one = job
            digest = hashlib.sha256(key.encode())
            with open(src, "rb") as f:
                digest.update(f.read())
            stem = os.path.splitext(os.path.basename(src))[0]
            obj = os.path.join(self.folder, f"{stem}-{digest.hexdigest()[:20]}.o")
            if os.path.exists(obj):
                os.utime(obj)
                self.hits += 1
                return obj
            tmp = f"{obj}.{os.getpid()}.tmp"
            try:
                compile_one(src, tmp)
                os.replace(tmp, obj)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
            self.misses += 1
            return obj

        with ThreadPoolExecutor(max(1, min(len(jobs), workers))) as pool:
            objs = list(pool.map(one, jobs))
        self.prune()
        return objs

    def prune(self):
        cutoff = time.time() - CACHE_DAYS * 86400
        for path in glob(os.path.join(self.folder, "*.o")) + glob(os.path.join(self.folder, "*.tmp")):
            try:
                if os.path.getmtime(path) < cutoff:
                    os.remove(path)
            except OSError:
                pass


class BuildExt(build_ext):
    def build_extensions(self):
        nvcc, how = find_nvcc()
        ext = self.extensions[0]
        folder, why = ObjectCache.default_folder(self.build_temp)
        try:
            os.makedirs(folder, exist_ok=True)
            if not os.access(folder, os.W_OK):
                raise PermissionError(f"{folder} is not writable")
        except OSError as e:  # e.g. a packaging sandbox with a read-only home
            folder, why = os.path.join(self.build_temp, "objs"), f"off: {e}"
        self.cache = ObjectCache(folder)
        say(f"object cache {folder} ({why})")
        self.headers = headers_digest()
        if nvcc is None:
            say(f"building the CPU-only backend ({how})")
            ext.sources.append(os.path.join(CSRC, "nocuda", "cuda_stub.c"))
        else:
            say(f"nvcc {nvcc} ({how})")
            ext.extra_objects.extend(self.compile_cuda(nvcc))
            cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
            for libdir in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
                if os.path.exists(os.path.join(cuda_home, libdir, "libcudart_static.a")):
                    ext.library_dirs.append(os.path.join(cuda_home, libdir))
                    break
            ext.libraries.extend(["cudart_static", "stdc++", "rt", "dl", "pthread"])
            ext.define_macros.append(("GPUSYNC_WITH_CUDA", "1"))
        t0 = time.time()
        self.compile_c(ext)
        say(f"C objects ready in {time.time() - t0:.1f} s")
        super().build_extensions()
        say(f"object cache: {self.cache.hits} reused, {self.cache.misses} compiled")

    def compile_c(self, ext):
        """Compile the C sources through the cache; setuptools only links."""
        cc = self.compiler
        macros = ext.define_macros + [(u,) for u in ext.undef_macros]
        args = ext.extra_compile_args or []
        # numpy's headers by version, not by path: pip builds in a fresh environment every time
        incs = [f"numpy {np.__version__}" if d == np.get_include() else d for d in ext.include_dirs]
        key = repr((cc.compiler_so, macros, incs, args, self.debug, sys.version,
                    tool_version(cc.compiler_so[:1]), self.headers))

        def compile_one(src, out):
            tmpdir = out + ".d"
            try:
                (obj,) = cc.compile([src], output_dir=tmpdir, macros=macros, include_dirs=ext.include_dirs,
                                    debug=self.debug, extra_postargs=args, depends=ext.depends)
                os.replace(obj, out)
            finally:
                shutil.rmtree(tmpdir, ignore_errors=True)

        jobs = [(src, key, compile_one) for src in sorted(ext.sources)]
        ext.extra_objects[:0] = self.cache.build(jobs, os.cpu_count() or 1)
        ext.sources = []
        ext.depends = list(ext.depends) + ext.extra_objects  # relink when any object is new

    def compile_cuda(self, nvcc):
        archs, ptx, why = cuda_archs(nvcc)
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        gencode.append(f"-gencode=arch=compute_{ptx},code=compute_{ptx}")
        sources = sorted(glob(os.path.join(CSRC, "cuda", "*.cu")))
        inc = os.path.join(CSRC, "include")
        # the host pass as the C sources: no contraction of a * b + c into an FMA (host-side bin bounds, e.g.
        # histdd.cu's guess window, rely on each product being rounded); device code keeps nvcc's --fmad
        base = [nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-Xcompiler", "-ffp-contract=off", "-I", inc,
                "--expt-relaxed-constexpr", *gencode]
        if os.environ.get("GPUSYNC_PTXAS_VERBOSE"):
            base.append("-Xptxas=-v")
        key = repr((base[1:], tool_version([nvcc]), tool_version(["gcc"]),
                    [os.environ.get(v, "") for v in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN")],
                    self.headers))
        sass = "".join(f"sm_{a} + " for a in archs)
        say(f"CUDA architectures {sass}PTX compute_{ptx} ({why}); {len(sources)} files")
        t0 = time.time()

        def compile_one(src, out):
            cmd = base + ["-c", src, "-o", out]
            print(" ".join(cmd), flush=True)
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.stderr.write(res.stdout + res.stderr)
                raise RuntimeError(f"nvcc failed on {src}")
            if res.stderr.strip():
                sys.stderr.write(res.stderr)

        objs = self.cache.build([(src, key, compile_one) for src in sources], os.cpu_count() or 1)
        say(f"CUDA objects ready in {time.time() - t0:.1f} s")
        return objs


c_sources = sorted(glob(os.path.join(CSRC, "common", "*.c")))
c_sources += sorted(glob(os.path.join(CSRC, "cpu", "*.c"))) + [os.path.join(CSRC, "python", "module.c")]

ext = Extension(
    "gpusync._core",
    sources=c_sources,
    include_dirs=[os.path.join(CSRC, "include"), os.path.join(CSRC, "common"), np.get_include()],
    extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-Wall", "-Wno-missing-braces", "-Werror=missing-field-initializers",
                        "-Werror=incompatible-pointer-types", "-Werror=int-conversion", "-Werror=implicit-function-declaration"],
    libraries=["pthread"],
)

class BuildPy(build_py):
    """Install the device headers users include in their own kernels
    (csrc/include/gpusync/*.cuh) as gpusync/include/gpusync/: gs.include_dir()."""

    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "gpusync", "include", "gpusync")
        os.makedirs(dst, exist_ok=True)
        for h in sorted(glob(os.path.join(CSRC, "include", "gpusync", "*.cuh"))):
            shutil.copy2(h, dst)


def read_license_expression_on_old_setuptools():
    """pyproject.toml's `license = "MIT"` (PEP 639) needs setuptools >= 77,
    which pip and `python -m build` install for the build (build-system
    requires).  A direct `python3 setup.py build_ext --inplace` runs the
    setuptools already installed; where that is older, it reads the
    expression as the old `{text = ...}` form (the metadata of an in-place
    build is never published)."""
    import setuptools
    from setuptools.config import pyprojecttoml

    if int(setuptools.__version__.split(".")[0]) >= 77:
        return
    load = pyprojecttoml.load_file

    def load_file(path):
        doc = load(path)
        project = doc.get("project", {})
        if isinstance(project.get("license"), str):
            project["license"] = {"text": project["license"]}
        project.pop("license-files", None)
        return doc

    pyprojecttoml.load_file = load_file


if __name__ == "__main__":  # importable for tests (tests/test_packaging.py)
    read_license_expression_on_old_setuptools()
    setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
