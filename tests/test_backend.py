"""Backend selection, device info, the auto-strategy predicate, error mapping."""
import numpy as np
import pytest

import gpusync as gs
from gpusync import _core


def test_backend_is_known():
    assert gs.backend() in ("cpu", "cuda")
    assert gs.backend() == ("cuda" if gs.cuda_available() else "cpu")


def test_use_backend_switch_and_context():
    before = gs.backend()
    with gs.use_backend("cpu"):
        assert gs.backend() == "cpu"
        assert gs.device_info()["backend"] == "cpu"
    assert gs.backend() == before
    with pytest.raises(ValueError, match="backend must be"):
        gs.use_backend("tpu")


@pytest.mark.skipif(gs.cuda_available(), reason="CUDA is available here")
def test_use_cuda_without_gpu_is_clear():
    with pytest.raises(gs.NoCudaError, match="cannot run here"):
        gs.use_backend("cuda")


@pytest.mark.gpu
def test_device_info_fields():
    with gs.use_backend("cuda"):
        info = gs.device_info()
    for key in ("name", "compute_capability", "multiprocessors", "shared_memory_per_block",
                "shared_memory_per_multiprocessor", "max_threads_per_block", "l2_cache_bytes",
                "memory_clock_khz", "memory_bus_width_bits", "warp_size"):
        assert key in info
    assert info["warp_size"] == 32 and info["multiprocessors"] > 0


H200 = dict(cc_major=9, smem_per_block_optin=232448, smem_per_sm=233472)
A100_LIKE = dict(cc_major=8, smem_per_block_optin=166912, smem_per_sm=167936)


def test_auto_strategy_predicate():
    pick = _core.hist_auto_strategy
    assert pick(1 << 30, 256, **H200) == "shared"
    assert pick(1 << 28, 100, **H200) == "shared"
    # 65,536 32-bit counters take 256 KB, more than one block holds; as 16-bit halves they take 128 KB
    assert pick(1 << 28, 65536, **H200) == "shared"
    assert pick(1 << 28, 65536, **A100_LIKE) == "shared"
    assert pick(1 << 28, 65536, weighted=True, **H200) == "cluster"  # float64 sums: no halves
    # past the halves: a cluster of 4 blocks would hold them, and lost to global atomics (tuning.h)
    assert pick(1 << 28, 120_000, **H200) == "global"
    assert pick(1 << 28, 300_000, **H200) == "global"  # past what a cluster of 8 holds (262,144)
    assert pick(1 << 28, 131_072, weighted=True, **H200) == "cluster"  # 8 x 16,384 float64 sums
    assert pick(1 << 28, 131_073, weighted=True, **H200) == "global"  # (auto asked for 232,448 before)
    small = dict(cc_major=9, smem_per_block_optin=48 * 1024 + 6172, smem_per_sm=100 * 1024)
    assert pick(1 << 28, 24_000, **small) == "shared"  # the halves: 2x a cluster of 2's 16,384 counts
    assert pick(1 << 28, 30_000, **small) == "global"
    assert pick(1 << 28, 30_000, weighted=True, **small) == "cluster"  # 8 x 4,096 float64 sums
    assert pick(1 << 28, 90_000, **A100_LIKE) == "global"  # neither halves nor clusters
    assert pick(1 << 28, 40000, **H200) == "shared"  # one copy of the counts fits (mid_bins_H100_r179.txt)
    assert pick(1 << 28, 20000, weighted=True, **H200) == "warp"  # float64 sums: one copy, not two
    assert pick(1 << 28, 5000, weighted=True, **H200) == "shared"  # two copies of the sums
    assert pick(1 << 28, 10_000_000, **H200) == "global"
    assert pick(1000, 256, weighted=True, **H200) == "shared"
    # CPU threads
    assert pick(1000, 256) == "shared"
    assert pick(1000, 10_000_000) == "global"


@pytest.mark.parametrize("code,exc", [(1, ValueError), (2, TypeError), (3, MemoryError), (4, gs.NoCudaError),
                                      (5, gs.UnsupportedDeviceError), (6, OverflowError), (7, gs.DeadlockError),
                                      (8, gs.CooperativeLaunchError), (9, gs.CudaError)])
def test_status_mapping(code, exc):
    with pytest.raises(exc, match="boom"):
        _core._raise_status(code, "boom")


def test_exception_hierarchy():
    assert issubclass(gs.CudaError, gs.GpusyncError) and issubclass(gs.CudaError, RuntimeError)
    assert issubclass(gs.UnsupportedDeviceError, ValueError)
    assert issubclass(gs.DeadlockError, RuntimeError)


def test_large_thread_counts_agree():
    """The threaded CPU path (forced many threads) equals the single-threaded one."""
    import os
    x = np.random.default_rng(0).integers(0, 1000, 300_000)
    with gs.use_backend("cpu"):
        ref = gs.bincount(x)
        os.environ["GPUSYNC_NUM_THREADS"] = "7"
        try:
            for s in ("global", "shared", "warp"):
                np.testing.assert_array_equal(gs.bincount(x, strategy=s), ref)
        finally:
            del os.environ["GPUSYNC_NUM_THREADS"]


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_out_of_memory_is_memoryerror_and_recovers(cp):
    free, total = cp.cuda.runtime.memGetInfo()
    # a host input whose histogram (int64 bins) needs more device memory than the card has (values from 0:
    # a lone value far from 0 is counted in one bin, min .. max alone)
    with pytest.raises(MemoryError):
        gs.bincount(np.array([0, total // 8 + (1 << 27)]))
    np.testing.assert_array_equal(gs.bincount(np.array([0, 1, 1])), [1, 2])
