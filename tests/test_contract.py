"""One contract between Python and C: every backend's ops table is full, and
the codes Python passes (dtypes, bins kinds, statistics, strategies, counter
kinds) come from the C definitions, not from copies."""
import pathlib
import re

import numpy as np
import pytest

import gpusync as gs
from gpusync import _arrays, _binstat, _core, _histogram, demo

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_no_slot_of_any_backend_ops_table_is_null(backend):
    assert _core._ops_null_slots(backend) == []


def test_ops_tables_use_designated_initializers():
    tables = [("csrc/include/gpusync/gpusync.h", "gs_backend_ops",
               ["csrc/cpu/backend.c", "csrc/nocuda/cuda_stub.c", "csrc/cuda/runtime.cu"]),
              ("csrc/common/demos.h", "gs_demo_ops",
               ["csrc/cpu/backend.c", "csrc/nocuda/cuda_stub.c", "csrc/cuda/demos.cu"])]
    for header, name, sources in tables:
        text = (ROOT / header).read_text()
        struct = text[text.index(f"typedef struct {name}"):text.index(f"}} {name};")]
        fields = re.findall(r"\(\*(\w+)\)\(", struct) + ["name"]
        for src in sources:
            text = (ROOT / src).read_text()
            table = text[text.index(f"static const {name}"):]
            table = table[:table.index("};")]
            assert sorted(re.findall(r"^\s*\.(\w+) =", table, re.M)) == sorted(fields), (name, src)
    assert "-Werror=missing-field-initializers" in (ROOT / "setup.py").read_text()


def test_dtype_codes_come_from_c():
    assert list(_core.DTYPES) == ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                  "float16", "float32", "float64"]
    assert list(_core.DTYPES.values()) == list(range(12))
    for name, code in _core.DTYPES.items():
        assert _arrays.dtype_code(np.dtype(name)) == code
        assert _arrays.dtype_code(np.dtype(name).newbyteorder(">")) == code
    assert not _arrays.supported_dtype(np.complex64)


def test_bins_kinds_statistics_and_counter_kinds_come_from_c():
    assert (_histogram._DIRECT, _histogram._LUT, _histogram._UNIFORM, _histogram._EDGES) == (
        _core.BINS_KINDS["direct"], _core.BINS_KINDS["lut"], _core.BINS_KINDS["uniform"], _core.BINS_KINDS["edges"])
    assert _binstat.STATISTICS == ("count", "sum", "mean", "std", "var", "min", "max") == gs.BINNED_STATISTICS
    assert [_core.STATISTICS[s] for s in _binstat.STATISTICS] == list(range(7))
    assert demo._COUNTER_KINDS == {"race": 0, "atomic": 1, "mutex": 2} == _core.COUNTER_KINDS
    from gpusync import _axis
    assert (_axis.SUM, _axis.COUNT_NONZERO, _axis.CUMSUM) == tuple(_core.AXIS_OPS.values()) == (0, 1, 2)


def test_every_public_strategy_is_a_c_strategy():
    public = set(gs.HISTOGRAM_STRATEGIES) | set(gs.REDUCE_STRATEGIES) | set(gs.BARRIER_STRATEGIES) | set(
        gs.CUMSUM_STRATEGIES)
    assert public <= set(_core.STRATEGIES)
    assert list(_core.STRATEGIES.values()) == list(range(len(_core.STRATEGIES)))


def test_statistics_reach_the_engine_by_code():
    x = np.array([0.1, 0.2, 0.6, 0.9])
    v = np.array([1.0, 3.0, 5.0, 11.0])
    with gs.use_backend("cpu"):
        for stat, want in [("count", [2, 2]), ("sum", [4, 16]), ("mean", [2, 8]), ("min", [1, 5]),
                           ("max", [3, 11]), ("var", [1, 9]), ("std", [1, 3])]:
            np.testing.assert_allclose(gs.binned_statistic(x, v, stat, bins=2, range=(0, 1))[0], want)


def test_dead_entry_points_are_gone():
    for dead in ("device_count", "HIST_BLOCK_THREADS", "HIST_CLUSTER_MAX"):
        assert not hasattr(_core, dead), dead
    assert not hasattr(gs._bits, "last_strategy")


@pytest.mark.skipif(gs.cuda_available(), reason="needs a machine where the CUDA backend cannot run")
@pytest.mark.parametrize("stream", [None, 5])
def test_device_array_without_cuda_is_a_clear_error(stream):
    class FakeDeviceArray:  # what CuPy / PyTorch / Numba hand over
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (1 << 40, False), "version": 3,
                                    "stream": 7, "strides": None}

    with pytest.raises(gs.NoCudaError, match="a CUDA device array needs the cuda backend, which cannot run here"):
        gs.sum(FakeDeviceArray(), stream=stream)
    assert gs.sum(np.arange(4.0)) == 6.0  # and the library is fine


@pytest.mark.skipif(gs.cuda_available(), reason="needs a machine where the CUDA backend cannot run")
def test_cuda_backend_entry_points_answer_no_cuda_not_a_crash():
    with pytest.raises(gs.NoCudaError):
        _core.stream_wait("cuda", 0, 1, 2)
    _core.empty_cache("cuda")  # nothing cached: fine
