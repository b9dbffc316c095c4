"""gs.occupancy and gs.kernels: how gpusync's own kernels use a GPU (the
resource partitioning of the original article on warps), from the CUDA
backend's registry of representative kernels (csrc/cuda/occupancy.cu)."""
from __future__ import annotations

from . import _backend, _core

_AUTO = {"histogram": "shared", "bincount": "shared", "sum": "threadfence", "dot": "threadfence",
         "binned_statistic": "shared"}


def kernels():
    """The names ``"op:strategy"`` that :func:`occupancy` describes."""
    return _core.kernel_names(_backend.backend()).split(",")


def occupancy(op, block_size=None, strategy=None):
    """Resource partitioning of one of gpusync's kernels on this GPU (the
    resource partitioning the original article on warps describes).

    `op` is ``"histogram"``, ``"sum"``, ``"dot"``, ``"binned_statistic"``,
    ``"packbits"`` or ``"count_nonzero"`` (with `strategy`, or as
    ``"op:strategy"``; default the one ``auto`` picks for a typical input).
    Returns registers per thread, static and dynamic shared memory per block,
    the blocks per SM each resource allows (threads, the blocks-per-SM limit,
    registers, shared memory), the active blocks and warps per SM and the
    theoretical occupancy from the occupancy API, the limiting resource, and
    the block size ``cudaOccupancyMaxPotentialBlockSize`` suggests.
    `block_size` (a multiple of 32) asks "what if"; default: as gpusync
    launches it.  Needs the cuda backend.
    """
    names = kernels()
    name = op
    if ":" not in op:
        if op == "bincount":
            op = "histogram"
        cands = [n for n in names if n.split(":")[0] == op]
        if strategy is not None:
            name = f"{op}:{strategy}"
        elif len(cands) == 1:
            name = cands[0]
        elif op in _AUTO:
            name = f"{op}:{_AUTO[op]}"
    if name not in names and op in names:
        name = op
    if name not in names:
        raise ValueError(f"occupancy: unknown kernel {name!r}; valid: {', '.join(names)}")
    if block_size is not None and (int(block_size) != block_size or block_size < 32 or block_size % 32):
        raise ValueError("occupancy: block_size must be a positive multiple of 32")
    return _core.occupancy(_backend.backend(), name, int(block_size or 0))
