"""Where the device headers live, for users' own kernels."""
from __future__ import annotations

import os

HEADERS = ("mutex.cuh", "barrier.cuh", "reduce.cuh", "scan.cuh")


def include_dir() -> str:
    """The folder to pass as ``-I`` so that ``#include <gpusync/mutex.cuh>``
    (and ``barrier.cuh``, ``reduce.cuh``, ``scan.cuh``) works in your own
    CUDA code -- with nvcc, or NVRTC through ``cupy.RawKernel(...,
    options=("-I" + gs.include_dir(),))``.

    The headers are self-contained (no host headers), so NVRTC compiles them.
    An installed package carries them under ``gpusync/include``; an editable
    install or a source checkout uses ``csrc/include``.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "include"), os.path.join(os.path.dirname(here), "csrc", "include")):
        if all(os.path.isfile(os.path.join(cand, "gpusync", h)) for h in HEADERS):
            return cand
    raise FileNotFoundError("gpusync's device headers are missing from this installation "
                            f"(looked for {', '.join(HEADERS)} under {here}/include and ../csrc/include)")
