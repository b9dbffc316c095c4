"""The spin time-out counts time without progress and has a floor, so a
loaded machine never turns a legitimate call into a DeadlockError at the
default (issue 12 row 22; docs/environment.md)."""
import subprocess
import sys

import numpy as np
import pytest

import gpusync as gs


@pytest.fixture
def loaded_cpu():
    """An extra process that burns a core for the test's duration."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
            p.wait()


def test_spinning_cpu_calls_never_time_out_falsely_when_oversubscribed(monkeypatch, loaded_cpu):
    monkeypatch.delenv("GPUSYNC_SPIN_TIMEOUT_MS", raising=False)
    monkeypatch.setenv("GPUSYNC_NUM_THREADS", "16")  # many more threads than cores
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 1 << 17)
    with gs.use_backend("cpu"):
        for _ in range(10):
            assert gs.sum(x, strategy="mutex") == x.sum()
            for s in ("barrier", "lookback"):
                np.testing.assert_array_equal(gs.cumsum(x, strategy=s), np.cumsum(x))
        for s in ("lock", "lockfree", "sense"):
            assert gs.barrier_benchmark(s, blocks=4, rounds=50)["stale"] == 0


def test_a_real_deadlock_still_reports_at_the_floor(monkeypatch):
    monkeypatch.setenv("GPUSYNC_SPIN_TIMEOUT_MS", "0.001")  # raised to 10 ms, with a warning
    with gs.use_backend("cpu"), pytest.warns(RuntimeWarning, match="below the minimum"):
        with pytest.raises(gs.DeadlockError):
            gs._barrier._test_timeout("lock", blocks=2, ms=0.001)
