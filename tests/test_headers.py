"""gs.include_dir(): the device headers users build their own kernels on --
compiled with nvcc (no GPU needed) and, on a GPU, with NVRTC through
cupy.RawKernel and run: a mutex-guarded update and a lock-free grid barrier."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import gpusync as gs

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "user_kernel.cu")


def test_include_dir_has_every_header():
    inc = gs.include_dir()
    for h in ("mutex.cuh", "barrier.cuh", "reduce.cuh", "scan.cuh"):
        path = os.path.join(inc, "gpusync", h)
        assert os.path.isfile(path)
        src = open(path).read()
        assert "#include <" not in src.split("*/", 1)[1]  # self-contained: no system headers (NVRTC)


@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"),
                    reason="needs nvcc")
def test_user_kernel_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    for src in (EXAMPLE,):
        r = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-I", gs.include_dir(), "-c", src, "-o",
                            str(tmp_path / "k.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    scan = tmp_path / "scan_user.cu"  # scan.cuh's primitives in user code
    scan.write_text('#include <gpusync/scan.cuh>\n'
                    'extern "C" __global__ void k(double *x, gpusync::tile_desc *d, int *err) {\n'
                    '  __shared__ double s[33]; double t;\n'
                    '  double e = gpusync::block_exclusive_scan(x[threadIdx.x], s, &t);\n'
                    '  if (threadIdx.x == 0) gpusync::tile_publish(d, blockIdx.x, t, gpusync::TILE_AGGREGATE);\n'
                    '  if (threadIdx.x < 32 && blockIdx.x > 0) { double p; gpusync::tile_lookback(d, blockIdx.x, &p, err); e += p; }\n'
                    '  x[threadIdx.x] = e; }\n')
    r = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-I", gs.include_dir(), "-c", str(scan), "-o",
                        str(tmp_path / "s.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.gpu
def test_user_kernel_with_nvrtc_through_cupy():
    cp = pytest.importorskip("cupy")
    src = open(EXAMPLE).read()
    k = cp.RawKernel(src, "user_kernel", options=("-I" + gs.include_dir(), "--std=c++17"))
    blocks = gs.device_info()["multiprocessors"]  # one per SM: always co-resident
    threads = 128
    lock, error = cp.zeros(1, cp.int32), cp.zeros(1, cp.int32)
    total = cp.zeros(1, cp.float64)
    arrival, release = cp.zeros(blocks, cp.uint32), cp.zeros(blocks, cp.uint32)
    data, bad = cp.zeros(2 * blocks, cp.uint32), cp.zeros(1, cp.uint64)
    k((blocks,), (threads,), (lock, total, arrival, release, error, data, bad, np.int32(2000)))
    cp.cuda.Device().synchronize()
    assert int(error[0]) == 0 and int(bad[0]) == 0
    assert float(total[0]) == threads * blocks * (blocks + 1) / 2
