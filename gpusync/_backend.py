"""Which backend runs: CUDA when a driver and a device exist, else the CPU."""
from __future__ import annotations

import glob
import os
import shutil
import threading
import warnings

from . import _core

_lock = threading.Lock()
_state = {"current": None, "forced": None}
_warned = {"gpu_unused": False}  # the one-time warning of _warn_gpu_unused


def cuda_available() -> bool:
    """True when the CUDA backend can run here (built with CUDA, driver, device)."""
    ok, _ = _core.available("cuda")
    return bool(ok)


def _default():
    """(backend, forced): GPUSYNC_BACKEND forces one; else CUDA when it can run."""
    forced = _core.env_backend()  # GPUSYNC_BACKEND through the C table (a bad value warns there)
    if forced == "cuda":
        ok, why = _core.available("cuda")
        if not ok:
            import warnings

            warnings.warn(f"GPUSYNC_BACKEND=cuda, but the CUDA backend cannot run here ({why}): using cpu",
                          RuntimeWarning, stacklevel=3)
            return "cpu", None
    if forced is not None:
        return forced, forced
    return ("cuda" if _cuda_or_warn() else "cpu"), None


def _cuda_or_warn() -> bool:
    """cuda_available(), and where it is not on a machine with an NVIDIA GPU,
    a one-time warning with the reason and the fix."""
    ok, why = _core.available("cuda")
    if not ok:
        _warn_gpu_unused(why)
    return bool(ok)


def _nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU, without asking CUDA: the
    driver's device nodes or its /proc entries, or nvidia-smi on PATH."""
    return bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/proc/driver/nvidia/gpus/*")
                or shutil.which("nvidia-smi"))


def _fallback_advice(why: str) -> str:
    """The reason the CUDA backend cannot run (``_core.available``'s), in
    words, with the fix."""
    if "built without CUDA" in why:
        return ("this gpusync was built without CUDA (no nvcc at build time, or GPUSYNC_NO_CUDA=1). "
                "Fix: reinstall it with the CUDA toolkit's nvcc on PATH or CUDA_HOME set "
                "(in a checkout: python3 -m pip install -e .); see docs/build.md")
    if "InsufficientDriver" in why:
        return ("the NVIDIA driver is older than the CUDA toolkit gpusync was built with "
                f"({why}). Fix: update the driver (docs/build.md lists the driver each toolkit "
                "needs), or rebuild gpusync with a toolkit this driver supports")
    if "NoDevice" in why or "no CUDA device" in why:
        return (f"the CUDA runtime sees no device ({why}; CUDA_VISIBLE_DEVICES="
                f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}). Fix: make the GPU visible to "
                "this process (CUDA_VISIBLE_DEVICES, or a container started with --gpus)")
    return f"the CUDA backend cannot start ({why}). See docs/troubleshooting.md"


def _warn_gpu_unused(why: str) -> None:
    """Warn once when a machine with an NVIDIA GPU ends up on the CPU
    backend by default (not when the user chose the CPU)."""
    if _warned["gpu_unused"] or not _nvidia_gpu_present():
        return
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return  # the user hid the GPUs on purpose
    _warned["gpu_unused"] = True
    warnings.warn(f"gpusync: this machine has an NVIDIA GPU, but gpusync runs on the CPU backend: "
                  f"{_fallback_advice(why)}. Set GPUSYNC_BACKEND=cpu to choose the CPU backend "
                  "without this warning.", RuntimeWarning, stacklevel=4)


def backend() -> str:
    """The backend gpusync's functions run on now: ``"cuda"`` or ``"cpu"``."""
    cur = _state["current"]
    if cur is not None:
        return cur
    with _lock:
        if _state["current"] is None:
            _state["current"], _state["forced"] = _default()
        return _state["current"]


def forced():
    """The backend forced by use_backend() or GPUSYNC_BACKEND, else None (the
    dispatcher then picks the engine of each host-input call)."""
    backend()
    return _state["forced"]


_on_change = []  # callbacks run when the backend changes (the dispatcher's cached plans)


def _set(name, forced_name) -> None:
    with _lock:
        _state["current"], _state["forced"] = name, forced_name
    for fn in _on_change:
        fn()


class use_backend:
    """Force a backend: ``gs.use_backend("cpu")`` switches for the process;
    ``with gs.use_backend("cpu"): ...`` switches for the block and restores the
    previous backend on exit.  Asking for ``"cuda"`` where it cannot run raises
    :class:`gpusync.NoCudaError` with the reason."""

    def __init__(self, name: str):
        if name not in ("cpu", "cuda"):
            raise ValueError(f"backend must be 'cpu' or 'cuda', got {name!r}")
        if name == "cuda":
            ok, why = _core.available("cuda")
            if not ok:
                raise _core.NoCudaError(f"the CUDA backend cannot run here: {why}")
        self._previous = (backend(), forced())
        _set(name, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._previous)
        return False


def device_info(device: int = 0) -> dict:
    """Properties of CUDA device `device` (name, compute capability, SMs, shared
    memory per block / per SM, max threads, L2, memory clock and bus width,
    warp size).  On the CPU backend: a description of the host threads."""
    if backend() == "cpu":
        return {"backend": "cpu", "name": _cpu_name(), "threads": os.cpu_count() or 1}
    info = _core.device_info(device)
    info["backend"] = "cuda"
    return info


def empty_cache() -> None:
    """Give the device memory gpusync keeps cached back to the driver.

    gpusync's scratch buffers (the staging copies of host inputs, partial
    results) come from its own stream-ordered memory pool on each device,
    which keeps up to 1 GiB of freed memory (``GPUSYNC_POOL_KEEP_MB``) so that
    repeated calls do not map memory again.  This waits for gpusync's pending
    work and trims the pools to nothing -- like ``torch.cuda.empty_cache()``
    or CuPy's ``free_all_blocks()``.  The 64 MiB of pinned staging buffers
    stay.  A no-op when CUDA is not available.
    """
    if cuda_available():
        _core.empty_cache("cuda")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "cpu"
