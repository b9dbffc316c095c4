"""gpusync: GPU synchronization techniques as fast, NumPy-compatible functions.

    import gpusync as gs
    counts, edges = gs.histogram(a, bins=256, range=(0, 256), strategy="auto")
    total = gs.sum(a, strategy="threadfence", deterministic=True)
    prefix = gs.cumsum(a, strategy="lookback")
    stat, edges, binnumber = gs.binned_statistic(x, values, "std", bins=100)

Every function takes NumPy arrays (computed on the GPU when one is present,
else on CPU threads) or device arrays (CuPy, PyTorch, Numba; anything with
``__cuda_array_interface__`` or ``__dlpack__``), used in place.
"""
from ._core import (  # noqa: F401
    CooperativeLaunchError,
    CudaError,
    DeadlockError,
    GpusyncError,
    NoCudaError,
    UnsupportedDeviceError,
)
from ._backend import backend, cuda_available, device_info, empty_cache, use_backend  # noqa: F401
from ._histogram import STRATEGIES as HISTOGRAM_STRATEGIES  # noqa: F401
from ._histogram import bincount, histogram  # noqa: F401
from ._reduce import STRATEGIES as REDUCE_STRATEGIES  # noqa: F401
from ._reduce import dot, sum  # noqa: F401,A004
from ._binstat import STATISTICS as BINNED_STATISTICS  # noqa: F401
from ._binstat import BinnedStatisticResult, binned_statistic  # noqa: F401
from ._bits import count_nonzero, packbits, unpackbits  # noqa: F401
from ._occupancy import kernels, occupancy  # noqa: F401
from ._histdd import histogram2d, histogramdd  # noqa: F401
from ._binstat_dd import BinnedStatistic2dResult, BinnedStatisticddResult  # noqa: F401
from ._binstat_dd import binned_statistic_2d, binned_statistic_dd  # noqa: F401
from ._barrier import STRATEGIES as BARRIER_STRATEGIES  # noqa: F401
from ._barrier import barrier_benchmark  # noqa: F401
from ._scan import STRATEGIES as CUMSUM_STRATEGIES  # noqa: F401
from ._scan import cumsum  # noqa: F401
from ._headers import include_dir  # noqa: F401
from ._dispatch import last_plan  # noqa: F401
from ._calibrate import calibrate  # noqa: F401

from ._version import __version__  # noqa: F401

__all__ = [
    "histogram",
    "bincount",
    "histogram2d",
    "histogramdd",
    "sum",
    "dot",
    "binned_statistic",
    "BinnedStatisticResult",
    "binned_statistic_2d",
    "binned_statistic_dd",
    "BinnedStatistic2dResult",
    "BinnedStatisticddResult",
    "packbits",
    "unpackbits",
    "count_nonzero",
    "occupancy",
    "kernels",
    "barrier_benchmark",
    "cumsum",
    "CUMSUM_STRATEGIES",
    "include_dir",
    "last_plan",
    "calibrate",
    "BARRIER_STRATEGIES",
    "REDUCE_STRATEGIES",
    "BINNED_STATISTICS",
    "backend",
    "use_backend",
    "cuda_available",
    "device_info",
    "empty_cache",
    "HISTOGRAM_STRATEGIES",
    "GpusyncError",
    "CudaError",
    "DeadlockError",
    "NoCudaError",
    "UnsupportedDeviceError",
    "CooperativeLaunchError",
]
