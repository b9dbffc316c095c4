"""Build gpusync._core: C sources with the C compiler, csrc/cuda/*.cu with nvcc.

A custom build_ext compiles every .cu file into an object (in parallel) and
hands the objects to setuptools as extra_objects, linked against the static
CUDA runtime.  Without nvcc (or with GPUSYNC_NO_CUDA=1) the same command
builds the CPU-only package: csrc/common/cuda_stub.c stands in for the CUDA
backend.

Environment:
  GPUSYNC_CUDA_ARCHS  e.g. "90" or "75;80;90": the SASS targets (PTX of the
                      newest is always added).  Default: every architecture
                      this nvcc supports from sm_75 up.
  GPUSYNC_NO_CUDA=1   build the CPU-only backend even if nvcc is present.
  CUDA_HOME           where the toolkit lives (else nvcc on PATH).
  GPUSYNC_CUDA_OBJDIR keep/reuse the nvcc objects in this folder, named by a
                      hash of their sources and flags (a rebuild with nothing
                      changed, or a build on another machine with the same
                      toolkit, skips nvcc).
"""
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


def find_nvcc():
    if os.environ.get("GPUSYNC_NO_CUDA", "") not in ("", "0"):
        return None
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda/bin/nvcc"
    return None


def cuda_archs(nvcc):
    env = os.environ.get("GPUSYNC_CUDA_ARCHS")
    if env:
        archs = sorted({int(a) for a in re.split(r"[;, ]+", env.strip()) if a})
    else:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout
        archs = sorted({int(m) for m in re.findall(r"compute_(\d+)", out) if int(m) >= 75})
    flags = []
    for a in archs:
        flags.append(f"-gencode=arch=compute_{a},code=sm_{a}")
    flags.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
    return archs, flags


class BuildExt(build_ext):
    def build_extensions(self):
        nvcc = find_nvcc()
        ext = self.extensions[0]
        if nvcc is None:
            print("gpusync: nvcc not found (or GPUSYNC_NO_CUDA set): building the CPU-only backend")
            ext.sources.append(os.path.join(CSRC, "common", "cuda_stub.c"))
        else:
            ext.extra_objects.extend(self.compile_cuda(nvcc))
            cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
            for libdir in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
                if os.path.exists(os.path.join(cuda_home, libdir, "libcudart_static.a")):
                    ext.library_dirs.append(os.path.join(cuda_home, libdir))
                    break
            ext.libraries.extend(["cudart_static", "stdc++", "rt", "dl", "pthread"])
            ext.define_macros.append(("GPUSYNC_WITH_CUDA", "1"))
        super().build_extensions()

    def compile_cuda(self, nvcc):
        archs, gencode = cuda_archs(nvcc)
        sources = sorted(glob(os.path.join(CSRC, "cuda", "*.cu")))
        outdir = os.environ.get("GPUSYNC_CUDA_OBJDIR") or os.path.join(self.build_temp, "cuda")
        os.makedirs(outdir, exist_ok=True)
        inc = os.path.join(CSRC, "include")
        base = [nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-I", inc, "--expt-relaxed-constexpr", *gencode]
        if os.environ.get("GPUSYNC_PTXAS_VERBOSE"):
            base.append("-Xptxas=-v")
        headers = sorted(glob(os.path.join(CSRC, "cuda", "*.cuh")) + glob(os.path.join(CSRC, "common", "*.h"))
                         + glob(os.path.join(inc, "gpusync", "*")))
        common = hashlib.sha1(" ".join(base[1:]).encode())
        for h in headers:
            with open(h, "rb") as f:
                common.update(f.read())
        jobs = []
        for src in sources:
            key = common.copy()
            with open(src, "rb") as f:
                key.update(f.read())
            stem = os.path.splitext(os.path.basename(src))[0]
            obj = os.path.join(outdir, f"{stem}-{key.hexdigest()[:16]}.o")
            jobs.append((src, obj, not os.path.exists(obj)))
        print(f"gpusync: nvcc for sm_{', sm_'.join(map(str, archs))} (+PTX {archs[-1]}), {len(sources)} files")
        t0 = time.time()

        def run(job):
            src, obj, stale = job
            if not stale:
                return obj
            cmd = base + ["-c", src, "-o", obj]
            print(" ".join(cmd), flush=True)
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.stderr.write(res.stdout + res.stderr)
                raise RuntimeError(f"nvcc failed on {src}")
            if res.stderr.strip():
                sys.stderr.write(res.stderr)
            return obj

        workers = max(1, min(len(jobs), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            objs = list(pool.map(run, jobs))
        print(f"gpusync: CUDA objects ready in {time.time() - t0:.1f} s")
        return objs


c_sources = sorted(glob(os.path.join(CSRC, "common", "*.c")))
c_sources = [s for s in c_sources if not s.endswith("cuda_stub.c")]
c_sources += sorted(glob(os.path.join(CSRC, "cpu", "*.c"))) + [os.path.join(CSRC, "python", "module.c")]

ext = Extension(
    "gpusync._core",
    sources=c_sources,
    include_dirs=[os.path.join(CSRC, "include"), os.path.join(CSRC, "common"), np.get_include()],
    extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-Wall", "-Wno-missing-braces", "-Werror=missing-field-initializers"],
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


setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
