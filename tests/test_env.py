"""The environment table (csrc/common/env.c): every GPUSYNC_* variable the code
reads is in it and in docs/environment.md; invalid values warn once, naming the
variable, and fall back to the default; tiny spin time-outs are clamped."""
import os
import pathlib
import re
import subprocess
import tempfile
import sys
import threading
import warnings

import numpy as np
import pytest

import gpusync as gs
from gpusync import _core

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD_TIME = {"GPUSYNC_CUDA_ARCHS", "GPUSYNC_NO_CUDA", "GPUSYNC_CUDA_OBJDIR", "GPUSYNC_PTXAS_VERBOSE"}
NAMES = {row[0] for row in _core._env_table()}


def _names_in(paths):
    found = set()
    for p in paths:
        found |= set(re.findall(r"\bGPUSYNC_[A-Z0-9_]+", p.read_text()))
    return found


def test_every_variable_read_by_the_library_is_in_the_table():
    sources = [p for p in (ROOT / "csrc").rglob("*") if p.suffix in (".c", ".h", ".cu", ".cuh")]
    sources += list((ROOT / "gpusync").glob("*.py"))
    # the rest are header guards and compile-time macros, not environment variables
    macros = {n for n in _names_in(sources) if re.search(rf"#\s*(define|ifndef|endif)\s.*\b{n}\b",
                                                         "\n".join(p.read_text() for p in sources))}
    read = _names_in(sources) - macros - BUILD_TIME
    assert read <= NAMES, sorted(read - NAMES)
    assert "getenv" not in "".join(p.read_text() for p in sources if p.name != "env.c")
    # not gpusync knobs: CUDA's own CUDA_VISIBLE_DEVICES (read by _backend.py's GPU-unused warning) and
    # XDG_CACHE_HOME, the platform's cache directory (read by _calibrate.py for the calibration cache)
    py_lines = [line for p in (ROOT / "gpusync").glob("*.py") if p.name != "_barrier.py"
                for line in p.read_text().splitlines()
                if "CUDA_VISIBLE_DEVICES" not in line and "XDG_CACHE_HOME" not in line]
    assert "os.environ" not in "\n".join(py_lines)


def test_every_table_row_is_documented():
    doc = (ROOT / "docs" / "environment.md").read_text()
    for name, typ, dflt, lo, hi, choices, meaning in _core._env_table():
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {typ} |" in row and meaning in row, name
        if dflt:
            assert f"`{dflt}`" in row, name
    assert "environment.md" in (ROOT / "docs" / "index.md").read_text()


def test_invalid_value_warns_once_naming_the_variable_then_default(monkeypatch):
    monkeypatch.setenv("GPUSYNC_POOL_KEEP_MB", "lots")
    with pytest.warns(RuntimeWarning, match="GPUSYNC_POOL_KEEP_MB=lots is not an integer"):
        assert _core._env_number("GPUSYNC_POOL_KEEP_MB") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _core._env_number("GPUSYNC_POOL_KEEP_MB") is None  # once per value
        # another thread reads the shared parse: still no second warning
        out = []
        t = threading.Thread(target=lambda: out.append(_core._env_number("GPUSYNC_POOL_KEEP_MB")))
        t.start()
        t.join()
        assert out == [None]
    monkeypatch.setenv("GPUSYNC_POOL_KEEP_MB", "64")
    assert _core._env_number("GPUSYNC_POOL_KEEP_MB") == 64.0


@pytest.mark.parametrize("value, message", [("0", "outside"), ("-5", "outside"), ("1e400", "not a number"),
                                            ("abc", "not a number"), ("nan", "not a number")])
def test_bad_spin_timeout_warns_and_uses_the_default(monkeypatch, value, message):
    monkeypatch.setenv("GPUSYNC_SPIN_TIMEOUT_MS", value)
    with pytest.warns(RuntimeWarning, match=f"GPUSYNC_SPIN_TIMEOUT_MS={value} is {message}"):
        assert _core._env_number("GPUSYNC_SPIN_TIMEOUT_MS") is None


def test_tiny_spin_timeout_is_raised_to_the_documented_minimum(monkeypatch):
    monkeypatch.setenv("GPUSYNC_SPIN_TIMEOUT_MS", "0.001")
    with pytest.warns(RuntimeWarning, match="below the minimum of 10 ms"):
        assert _core._env_number("GPUSYNC_SPIN_TIMEOUT_MS") == 10.0
    assert "Minimum 10 ms" in (ROOT / "docs" / "environment.md").read_text()


def test_integer_knob_rejects_fractions_and_out_of_range(monkeypatch):
    monkeypatch.setenv("GPUSYNC_HIST_REPLICAS", "2.5")
    with pytest.warns(RuntimeWarning, match="GPUSYNC_HIST_REPLICAS=2.5 is not an integer"):
        assert _core._env_number("GPUSYNC_HIST_REPLICAS") is None
    monkeypatch.setenv("GPUSYNC_HIST_REPLICAS", "64")
    with pytest.warns(RuntimeWarning, match=r"GPUSYNC_HIST_REPLICAS=64 is outside \[1, 32\]"):
        assert _core._env_number("GPUSYNC_HIST_REPLICAS") is None
    monkeypatch.setenv("GPUSYNC_HIST_REPLICAS", " 8 ")
    assert _core._env_number("GPUSYNC_HIST_REPLICAS") == 8.0


def test_bad_num_threads_warns_during_a_call_and_the_call_works(monkeypatch):
    monkeypatch.setenv("GPUSYNC_NUM_THREADS", "many")
    x = np.arange(1 << 20, dtype=np.float64)
    with gs.use_backend("cpu"), pytest.warns(RuntimeWarning, match="GPUSYNC_NUM_THREADS=many"):
        assert gs.sum(x) == np.sum(x)


def _backend_in_subprocess(value):
    # a private cache directory: a calibration cache another gpusync version left in the user's
    # (stale: one RuntimeWarning) must not decide what this test sees
    env = dict(os.environ, GPUSYNC_BACKEND=value, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="gpusync-env-test-"))
    code = "import gpusync as gs, numpy as np; print(gs.backend(), gs.sum(np.arange(4)))"
    r = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(), r.stderr


def test_backend_typo_warns_naming_the_variable():
    (be, total), err = _backend_in_subprocess("gpu")
    assert "GPUSYNC_BACKEND=gpu is not one of cpu|cuda" in err and total == "6"
    assert be == ("cuda" if gs.cuda_available() else "cpu")


def test_backend_choice_is_case_insensitive():
    (be, _), err = _backend_in_subprocess(" CPU ")
    assert be == "cpu" and "Warning" not in err


@pytest.mark.skipif(gs.cuda_available(), reason="needs a machine where the CUDA backend cannot run")
def test_backend_cuda_where_it_cannot_run_warns_once_and_uses_cpu():
    (be, total), err = _backend_in_subprocess("cuda")
    assert be == "cpu" and total == "6"
    assert err.count("GPUSYNC_BACKEND=cuda, but the CUDA backend cannot run here") == 1


def test_each_kind_of_environment_write_is_seen_by_the_next_call(monkeypatch):
    """The C lookups skip getenv while the environment is as the thread last
    scanned it (csrc/common/env.c, `seen`): every kind of write -- a new
    variable, a new value in place, a removal, a removal and an addition that
    keep the count, a removal that moves ours down a slot -- is seen by the
    next call, on this thread and on another."""
    engine = lambda: _core.env_dispatch()[0]  # noqa: E731
    monkeypatch.delenv("GPUSYNC_ENGINE", raising=False)
    assert engine() == "auto"
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu")  # appended
    assert engine() == "cpu"
    monkeypatch.setenv("GPUSYNC_ENGINE", "cuda")  # replaced in its slot
    assert engine() == "cuda"
    monkeypatch.delenv("GPUSYNC_ENGINE")  # removed
    assert engine() == "auto"
    monkeypatch.setenv("GPUSYNC_TEST_UNRELATED", "1")
    assert engine() == "auto"
    monkeypatch.delenv("GPUSYNC_TEST_UNRELATED")  # one out, one in: the count stays
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu")
    assert engine() == "cpu"
    monkeypatch.setenv("GPUSYNC_TEST_AFTER", "1")
    monkeypatch.setenv("GPUSYNC_ENGINE", "cuda")
    assert engine() == "cuda"
    seen = []
    t = threading.Thread(target=lambda: seen.append(engine()))
    t.start(); t.join()  # noqa: E702
    assert seen == ["cuda"]
    monkeypatch.delenv("GPUSYNC_TEST_AFTER")  # removed after ours: the count shrinks
    monkeypatch.setenv("GPUSYNC_ENGINE", "cpu")
    assert engine() == "cpu"
    x = np.ones(100)
    gs.sum(x)
    assert gs.last_plan()["engine"] == "cpu"
    monkeypatch.delenv("GPUSYNC_ENGINE")
    gs.sum(x)
    assert gs.last_plan()["engine"] == "caller"
