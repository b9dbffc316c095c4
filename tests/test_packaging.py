"""The build's choices (setup.py: CUDA architectures, the object cache) and
the warning for a machine whose NVIDIA GPU goes unused."""
import importlib.util
import os
import stat
import warnings

import pytest

import gpusync as gs
from gpusync import _backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC_13_ARCHS = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)


@pytest.fixture(scope="module")
def setup_py():
    spec = importlib.util.spec_from_file_location("gpusync_setup_under_test", os.path.join(ROOT, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    os.chdir(ROOT)  # setup.py globs csrc/ relative to the checkout
    try:
        spec.loader.exec_module(mod)  # defines everything; setup() runs only as __main__
    finally:
        os.chdir(cwd)
    return mod


def _script(folder, name, body):
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def fake_tools(tmp_path, monkeypatch, setup_py):
    """A fake nvcc that lists nvcc 13.0's architectures and a fake
    nvidia-smi whose output each test sets; no libcuda."""
    listing = "\\n".join(f"compute_{a}" for a in NVCC_13_ARCHS)
    nvcc = _script(tmp_path, "nvcc", f'[ "$1" = --list-gpu-arch ] && printf "{listing}\\n"\n')
    smi = tmp_path / "smi-output"

    def gpus(text, rc=0):
        smi.write_text(text)
        _script(tmp_path, "nvidia-smi", f'cat "{smi}"\nexit {rc}\n')

    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GPUSYNC_CUDA_ARCHS", raising=False)

    def no_libcuda(*a, **k):
        raise OSError("no libcuda in this test")

    monkeypatch.setattr(setup_py.ctypes, "CDLL", no_libcuda)
    return nvcc, gpus


@pytest.mark.parametrize("text,arch", [("90", 90), ("9.0", 90), ("sm_90", 90), ("compute_86", 86),
                                       ("12.1", 121), ("10.3", 103), (" 7.5 ", 75)])
def test_parse_arch(setup_py, text, arch):
    assert setup_py.parse_arch(text) == arch


@pytest.mark.parametrize("text", ["", "nine", "9.0.1", "sm_"])
def test_parse_arch_rejects(setup_py, text):
    with pytest.raises(ValueError, match="not a CUDA architecture"):
        setup_py.parse_arch(text)


def test_archs_of_the_visible_gpus(setup_py, fake_tools):
    nvcc, gpus = fake_tools
    gpus("9.0\n8.6\n9.0\n")
    assert setup_py.visible_gpu_archs() == ([86, 90], "nvidia-smi")
    archs, ptx, why = setup_py.cuda_archs(nvcc)
    assert (archs, ptx) == ([86, 90], 90) and "nvidia-smi" in why


def test_gpu_unknown_to_nvcc(setup_py, fake_tools):
    nvcc, gpus = fake_tools
    gpus("13.0\n")  # a new major version: only PTX runs there
    assert setup_py.cuda_archs(nvcc)[:2] == ([], 121)
    gpus("10.1\n8.6\n")  # a minor version nvcc does not list: sm_100 code runs on 10.1
    assert setup_py.cuda_archs(nvcc)[:2] == ([86, 100], 100)


def test_no_gpu_portable_default(setup_py, fake_tools):
    nvcc, gpus = fake_tools
    gpus("", rc=9)  # nvidia-smi fails: no driver
    archs, ptx, why = setup_py.cuda_archs(nvcc)
    assert (archs, ptx) == ([75, 80, 90], 90) and "no GPU visible" in why
    gpus("7.0\n")  # a GPU older than any architecture gpusync builds
    archs, ptx, why = setup_py.cuda_archs(nvcc)
    assert (archs, ptx) == ([75, 80, 90], 90) and "7.5" in why


def test_explicit_and_all(setup_py, fake_tools, monkeypatch):
    nvcc, gpus = fake_tools
    gpus("9.0\n")
    monkeypatch.setenv("GPUSYNC_CUDA_ARCHS", "all")
    assert setup_py.cuda_archs(nvcc)[:2] == (list(NVCC_13_ARCHS), 121)
    monkeypatch.setenv("GPUSYNC_CUDA_ARCHS", "8.0;sm_90, 75")
    assert setup_py.cuda_archs(nvcc)[:2] == ([75, 80, 90], 90)
    for bad in ("95", "70", "x"):
        monkeypatch.setenv("GPUSYNC_CUDA_ARCHS", bad)
        with pytest.raises(SystemExit, match="GPUSYNC_CUDA_ARCHS"):
            setup_py.cuda_archs(nvcc)


def test_object_cache_reuses_by_content(setup_py, tmp_path):
    src = tmp_path / "a.c"
    src.write_text("int a;\n")
    calls = []

    def compile_one(s, out):
        calls.append(s)
        with open(out, "w") as f:
            f.write("obj of " + open(s).read())

    cache = setup_py.ObjectCache(str(tmp_path / "cache"))
    (o1,) = cache.build([(str(src), "flags -O3", compile_one)], 2)
    (o2,) = cache.build([(str(src), "flags -O3", compile_one)], 2)
    assert o1 == o2 and len(calls) == 1 and (cache.hits, cache.misses) == (1, 1)
    (o3,) = cache.build([(str(src), "flags -O2", compile_one)], 2)  # other flags
    src.write_text("int b;\n")
    (o4,) = cache.build([(str(src), "flags -O3", compile_one)], 2)  # other source
    assert len({o1, o3, o4}) == 3 and len(calls) == 3
    assert open(o4).read() == "obj of int b;\n"
    assert not [p for p in os.listdir(tmp_path / "cache") if p.endswith(".tmp")]


def test_object_cache_location(setup_py, monkeypatch, tmp_path):
    monkeypatch.delenv("GPUSYNC_CUDA_OBJDIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert setup_py.ObjectCache.default_folder("build/t")[0] == os.path.join(str(tmp_path), "gpusync", "objs")
    monkeypatch.setenv("GPUSYNC_CUDA_OBJDIR", "off")
    assert setup_py.ObjectCache.default_folder("build/t")[0] == os.path.join("build/t", "objs")


# --- the warning when an NVIDIA GPU goes unused ---------------------------------------------

@pytest.fixture
def fresh_backend(monkeypatch):
    monkeypatch.setitem(_backend._state, "current", None)
    monkeypatch.setitem(_backend._warned, "gpu_unused", False)
    monkeypatch.delenv("GPUSYNC_BACKEND", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    def machine(has_gpu, why, chosen=None):
        monkeypatch.setattr(_backend, "_nvidia_gpu_present", lambda: has_gpu)
        monkeypatch.setattr(_backend._core, "available", lambda name: (False, why))
        monkeypatch.setattr(_backend._core, "env_backend", lambda: chosen)  # GPUSYNC_BACKEND as C reads it

    return machine


@pytest.mark.parametrize("why,words", [
    ("gpusync was built without CUDA (no nvcc at build time)", ["built without CUDA", "nvcc on PATH"]),
    ("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version "
     "(cudaGetDeviceCount at runtime.cu:184)", ["driver is older", "update the driver"]),
    ("cudaErrorNoDevice: no CUDA-capable device is detected (cudaGetDeviceCount at runtime.cu:184)",
     ["sees no device", "CUDA_VISIBLE_DEVICES"]),
])
def test_warns_once_when_the_gpu_goes_unused(fresh_backend, why, words):
    fresh_backend(True, why)
    with pytest.warns(RuntimeWarning, match="NVIDIA GPU, but gpusync runs on the CPU backend") as rec:
        assert gs.backend() == "cpu"
    (w,) = rec
    for word in words + ["GPUSYNC_BACKEND=cpu"]:
        assert word in str(w.message)
    _backend._state["current"] = None  # a second resolution in the same process: silent
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gs.backend() == "cpu"


@pytest.mark.parametrize("case", ["no GPU", "chosen", "hidden"])
def test_no_warning_without_a_gpu_or_by_choice(fresh_backend, monkeypatch, case):
    fresh_backend(case != "no GPU", "gpusync was built without CUDA (no nvcc at build time)",
                  chosen="cpu" if case == "chosen" else None)
    if case == "hidden":
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gs.backend() == "cpu"
