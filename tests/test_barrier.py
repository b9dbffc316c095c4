"""Grid barriers: every strategy verified over many rounds and grid sizes up
to the co-resident maximum; co-residency refused with the maximum named;
time-outs raise DeadlockError and leave the backend usable."""
import pytest

import gpusync as gs

OURS = ["lock", "lockfree", "sense", "flat", "cluster"]


def test_cpu_barriers_verify_every_round():
    with gs.use_backend("cpu"):
        for s in OURS:
            r = gs.barrier_benchmark(s, blocks=2, rounds=300)
            assert r["stale"] == 0 and r["us_per_barrier"] > 0 and r["blocks"] == 2 and r["launches"] == 1
        with pytest.raises(ValueError, match="needs the cuda backend"):
            gs.barrier_benchmark("cooperative")
        with pytest.raises(gs.CooperativeLaunchError, match="at most"):
            gs.barrier_benchmark("lock", blocks=100_000)
        with pytest.raises(gs.DeadlockError):
            gs._barrier._test_timeout("lock", blocks=2)
        assert gs.barrier_benchmark("sense", blocks=2, rounds=10)["stale"] == 0
        nb = min(20, gs.barrier_benchmark("cluster", blocks=2, rounds=1)["max_blocks"])
        r = gs.barrier_benchmark("cluster", blocks=nb, rounds=200)  # groups of 8 threads (20: 8, 8 and 4)
        assert r["stale"] == 0 and r["cluster"] == 8 and r["strategy"] == "cluster"
        with pytest.raises(gs.DeadlockError):
            gs._barrier._test_timeout("cluster", blocks=min(12, nb))
        assert gs.barrier_benchmark("cluster", blocks=min(12, nb), rounds=10)["stale"] == 0


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
@pytest.mark.parametrize("strategy", OURS + ["cooperative"])
def test_gpu_rounds_over_several_launches_verify(strategy):
    """More rounds than one launch runs (the host launches chunks -- 2**12 rounds, then about 0.1 s each,
    at most 2**16 -- and looks for Ctrl-C between them): each launch goes on from the counters the ones
    before it left -- every round of every chunk verified, the per-barrier time over all of them."""
    with gs.use_backend("cuda"):
        sms = gs.device_info()["multiprocessors"]
        rounds = 2 * (1 << 16) + 3
        r = gs.barrier_benchmark(strategy, blocks=sms, rounds=rounds)
        assert r["stale"] == 0 and r["rounds"] == rounds and 0 < r["us_per_barrier"] < 100
        assert 3 <= r["launches"] <= rounds  # 2**12 first, then at most 2**16 a launch


@pytest.mark.gpu
def test_gpu_chunks_sized_by_time_at_the_co_resident_maximum():
    """At the co-resident maximum a round of the lock barrier costs several us: the launches after the first
    are sized to about 0.1 s each from the time its rounds took, so that Ctrl-C (looked for between launches)
    is seen within about 0.1 s -- not after 2**16 rounds."""
    with gs.use_backend("cuda"):
        maxb = gs.barrier_benchmark("lock", rounds=10)["max_blocks"]
        r = gs.barrier_benchmark("lock", blocks=maxb, rounds=1 << 17)
        assert r["stale"] == 0 and r["rounds"] == 1 << 17
        total_s = r["us_per_barrier"] * r["rounds"] / 1e6
        ideal = max(total_s / 0.1, ((1 << 17) - (1 << 12)) / (1 << 16))  # launches after the first
        assert max(3, 0.5 * ideal) <= r["launches"] <= 2 + 2 * ideal, (r, total_s)


@pytest.mark.gpu
def test_gpu_relaunch_and_graph():
    with gs.use_backend("cuda"):
        r = gs.barrier_benchmark("relaunch", rounds=500)
        assert r["stale"] == 0 and r["us_per_barrier"] > 0 and r["us_per_barrier_graph"] > 0


@pytest.mark.gpu
@pytest.mark.sanitizer
@pytest.mark.parametrize("strategy", OURS + ["cooperative"])
def test_gpu_barriers_small(strategy):
    """Every barrier once at 1 block per SM and at a few blocks, few rounds: the subset compute-sanitizer runs."""
    with gs.use_backend("cuda"):
        sms = gs.device_info()["multiprocessors"]
        for blocks in (3, sms):
            r = gs.barrier_benchmark(strategy, blocks=blocks, rounds=50)
            assert r["stale"] == 0 and r["blocks"] == blocks


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", OURS)
def test_gpu_timeout_is_deadlock_error_and_next_call_works(strategy):
    import numpy as np

    with gs.use_backend("cuda"):
        # cluster: the hook skips the whole cluster of block 1; 32 blocks are 2 clusters of 16 (or more of fewer)
        with pytest.raises(gs.DeadlockError, match="never arrived"):
            gs._barrier._test_timeout(strategy, blocks=8 if strategy != "cluster" else 32, ms=30)
        assert gs.barrier_benchmark(strategy, rounds=100)["stale"] == 0
        assert gs.sum(np.arange(1000)) == 499500


def _has_clusters():
    return gs.device_info().get("cluster_launch", False)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["flat", "cluster"])
@pytest.mark.parametrize("poll", [0, 1, 2, 3, 4])
def test_gpu_poll_variants_verify(strategy, poll, monkeypatch):
    """Every poll loop of flat / cluster (GPUSYNC_BARRIER_POLL) is correct at 1 block per SM and at the
    co-resident maximum (the benchmark's tuning sweep runs them all)."""
    monkeypatch.setenv("GPUSYNC_BARRIER_POLL", str(poll))
    with gs.use_backend("cuda"):
        sms = gs.device_info()["multiprocessors"]
        maxb = gs.barrier_benchmark(strategy, rounds=1)["max_blocks"]
        for blocks in (sms, maxb):
            assert gs.barrier_benchmark(strategy, blocks=blocks, rounds=2000)["stale"] == 0
        with pytest.raises(gs.DeadlockError, match="never arrived"):
            gs._barrier._test_timeout(strategy, blocks=32, ms=30)
        assert gs.barrier_benchmark(strategy, rounds=100)["stale"] == 0


@pytest.mark.gpu
def test_gpu_cluster_shapes(monkeypatch):
    """cluster: the largest power-of-two cluster (up to 16) that divides the grid and fits; a forced size
    (GPUSYNC_BARRIER_CLUSTER) that does not divide the grid is a ValueError; without clusters it runs flat."""
    with gs.use_backend("cuda"):
        sms = gs.device_info()["multiprocessors"]
        r = gs.barrier_benchmark("cluster", rounds=100)
        if not _has_clusters():
            assert r["strategy"] == "flat" and "no thread-block clusters" in r["note"]
            return
        assert r["strategy"] == "cluster" and r["blocks"] == sms and r["stale"] == 0
        assert r["cluster"] >= 1 and sms % r["cluster"] == 0 and r["cluster"] & (r["cluster"] - 1) == 0
        maxb = r["max_blocks"]
        r = gs.barrier_benchmark("cluster", blocks=maxb, rounds=500)
        # at the co-resident maximum only small clusters fit beside each other (2 on the H200: measured)
        assert r["stale"] == 0 and maxb % r["cluster"] == 0 and r["cluster"] >= 2
        assert gs.barrier_benchmark("cluster", blocks=48, rounds=500)["cluster"] == 16
        assert gs.barrier_benchmark("cluster", blocks=7, rounds=500)["cluster"] == 1
        for cs in (2, 4, 8, 16):
            monkeypatch.setenv("GPUSYNC_BARRIER_CLUSTER", str(cs))
            r = gs.barrier_benchmark("cluster", blocks=256, rounds=1000)
            assert r["cluster"] == cs and r["stale"] == 0
        monkeypatch.setenv("GPUSYNC_BARRIER_CLUSTER", "8")
        with pytest.raises(ValueError, match="cluster"):
            gs.barrier_benchmark("cluster", blocks=12, rounds=10)
