"""barrier_benchmark: grid barriers run, verified and timed."""
from __future__ import annotations

import numpy as np

from . import _backend, _core, _dispatch

STRATEGIES = _dispatch.STRATEGIES["barrier_benchmark"]


def _positive_int(v, name):
    """v as a positive int (an integral float is taken), else an error naming the argument."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"barrier_benchmark: {name} must be a positive integer; got {v!r}")
    if not (np.isfinite(v) and int(v) == v and v >= 1):
        raise ValueError(f"barrier_benchmark: {name} must be a positive integer; got {v!r}")
    return int(v)


def barrier_benchmark(strategy, blocks=None, threads=256, rounds=10000):
    """Run `rounds` grid barriers of `strategy` in persistent kernels
    (launches of about 0.1 s each, Ctrl-C looked for between launches) and
    return the latency per barrier.

    Strategies: ``"lock"`` and ``"lockfree"`` (the original article's on
    inter-block barriers, with its missing fences and bugs fixed), ``"sense"`` (ours: a combining tree of group
    counters and one generation word), ``"flat"`` (ours: one counter, a
    ``red.release`` arrival and one ``ld.acquire`` poller per block),
    ``"cluster"`` (ours, sm_90+: the hardware cluster barrier inside each
    thread-block cluster of up to 16 blocks, then flat's counter with one
    arrival and one poller per cluster; the grid must split into co-resident
    clusters, the result's ``cluster`` says their size; older GPUs run
    ``flat`` and say so in ``note``), ``"cooperative"`` (cooperative groups'
    ``this_grid().sync()``) and ``"relaunch"`` (one kernel launch per round, in
    a stream and replayed from a CUDA graph).  ``"auto"`` runs
    ``cooperative`` where the device can launch it and the grid can be
    co-resident, and otherwise falls back to ``relaunch`` -- never an error --
    saying why in the result's ``note`` (and on stderr with GPUSYNC_DEBUG=1);
    on the CPU backend it runs ``sense``.  In every round every block
    writes a value, passes the barrier and reads other blocks' values of that
    round; any stale read raises :class:`gpusync.GpusyncError`.

    `blocks` defaults to one per SM; more than can be resident at once is a
    :class:`gpusync.CooperativeLaunchError` (a ValueError) naming the maximum
    -- never a hang.  A barrier that waits past the time-out raises
    :class:`gpusync.DeadlockError`.  On the CPU backend the lock, lockfree,
    sense, flat and cluster algorithms run on `blocks` threads (default: one
    per CPU; cluster: groups of 8 threads stand for the clusters).

    Returns a dict: strategy (the one that ran), note (auto's fallback, or
    ""), blocks, threads, cluster (blocks per cluster, else 0), max_blocks,
    rounds, us_per_barrier,
    us_per_barrier_graph (relaunch), launches (the kernel launches that ran
    the rounds: persistent kernels, the chunks; relaunch, one a round; CPU
    threads, 1), stale (0).
    """
    _dispatch.check_strategy("barrier_benchmark", strategy)
    blocks = None if blocks is None else _positive_int(blocks, "blocks")
    threads = _positive_int(threads, "threads")
    rounds = _positive_int(rounds, "rounds")
    be = _backend.backend()
    res = _core.barrier_benchmark(be, strategy, int(blocks or 0), threads, rounds, -1)
    _dispatch.record("barrier_benchmark", engine=be, strategy=strategy, used=res["strategy"],
                     threads=res["blocks"] if be == "cpu" else 0, notes=[res["note"]] if res["note"] else [])
    if res["stale"]:
        raise _core.GpusyncError(f"barrier '{strategy}' let {res['stale']} reads see data from before the barrier")
    return res


def _test_timeout(strategy, blocks=None, ms=50.0):
    """Test hook: one block never arrives; must raise DeadlockError."""
    import os

    old = os.environ.get("GPUSYNC_SPIN_TIMEOUT_MS")
    os.environ["GPUSYNC_SPIN_TIMEOUT_MS"] = str(ms)
    try:
        return _core.barrier_benchmark(_backend.backend(), strategy, int(blocks or 0), 64, 100, 1)
    finally:
        if old is None:
            del os.environ["GPUSYNC_SPIN_TIMEOUT_MS"]
        else:
            os.environ["GPUSYNC_SPIN_TIMEOUT_MS"] = old
