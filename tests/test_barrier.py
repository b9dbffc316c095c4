"""Grid barriers: every strategy verified over many rounds and grid sizes up
to the co-resident maximum; co-residency refused with the maximum named;
time-outs raise DeadlockError and leave the backend usable."""
import pytest

import gpusync as gs

OURS = ["lock", "lockfree", "sense", "flat"]


def test_cpu_barriers_verify_every_round():
    with gs.use_backend("cpu"):
        for s in OURS:
            r = gs.barrier_benchmark(s, blocks=2, rounds=300)
            assert r["stale"] == 0 and r["us_per_barrier"] > 0 and r["blocks"] == 2
        with pytest.raises(ValueError, match="needs the cuda backend"):
            gs.barrier_benchmark("cooperative")
        with pytest.raises(gs.CooperativeLaunchError, match="at most"):
            gs.barrier_benchmark("lock", blocks=100_000)
        with pytest.raises(gs.DeadlockError):
            gs._barrier._test_timeout("lock", blocks=2)
        assert gs.barrier_benchmark("sense", blocks=2, rounds=10)["stale"] == 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="strategy must be one of"):
        gs.barrier_benchmark("nope")
    with pytest.raises(ValueError, match="blocks"):
        gs.barrier_benchmark("lock", blocks=0)
    with pytest.raises(ValueError, match="rounds"):
        gs.barrier_benchmark("lock", rounds=0)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", OURS + ["cooperative"])
def test_gpu_barriers_verify_every_round(strategy):
    with gs.use_backend("cuda"):
        sms = gs.device_info()["multiprocessors"]
        maxb = gs.barrier_benchmark(strategy, rounds=1)["max_blocks"]
        for blocks in sorted({1, 7, sms, 2 * sms, maxb}):
            if blocks > maxb:
                continue
            r = gs.barrier_benchmark(strategy, blocks=blocks, rounds=3000)
            assert r["stale"] == 0 and r["blocks"] == blocks
        max1024 = gs.barrier_benchmark(strategy, threads=1024, rounds=1)["max_blocks"]
        r = gs.barrier_benchmark(strategy, blocks=max1024, threads=1024, rounds=500)
        assert r["stale"] == 0
        with pytest.raises(gs.CooperativeLaunchError, match=f"at most {maxb} blocks"):
            gs.barrier_benchmark(strategy, blocks=maxb + 1)


@pytest.mark.gpu
def test_gpu_relaunch_and_graph():
    with gs.use_backend("cuda"):
        r = gs.barrier_benchmark("relaunch", rounds=500)
        assert r["stale"] == 0 and r["us_per_barrier"] > 0 and r["us_per_barrier_graph"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", OURS)
def test_gpu_timeout_is_deadlock_error_and_next_call_works(strategy):
    import numpy as np

    with gs.use_backend("cuda"):
        with pytest.raises(gs.DeadlockError, match="never arrived"):
            gs._barrier._test_timeout(strategy, blocks=8, ms=30)
        assert gs.barrier_benchmark(strategy, rounds=100)["stale"] == 0
        assert gs.sum(np.arange(1000)) == 499500
