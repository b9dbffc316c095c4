"""Grid barriers in interleaved rounds: cooperative groups' grid.sync against flat with poll loops 0, 3
and 1 (GPUSYNC_BARRIER_POLL), verified and bare, at 1, 2 and 4 blocks per SM and the co-resident maximum;
the median of 5 runs each, alternating order (benchmarks/barrier.py runs each row once, best of 3).  A probe
behind the poll default of barrier_benchmark's flat (csrc/cuda/barrier.cu); not part of the package.

    python benchmarks/probes/barrier_ab.py
"""
import os, statistics as st, sys
import gpusync as gs
def one(s, blocks, poll, bare):
    env = {"GPUSYNC_BARRIER_POLL": str(poll) if poll is not None else None, "GPUSYNC_BARRIER_VERIFY": "0" if bare else None}
    old = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None: os.environ.pop(k, None)
        else: os.environ[k] = v
    try:
        r = gs.barrier_benchmark(s, blocks=blocks, rounds=20000)
        assert r["stale"] == 0, r
        return r["us_per_barrier"]
    finally:
        for k, v in old.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v
sms = gs.barrier_benchmark("cooperative", rounds=1)["blocks"]
mx = gs.barrier_benchmark("cooperative", rounds=1)["max_blocks"]
gs.barrier_benchmark("cooperative", blocks=mx, rounds=100000)
impls = [("cooperative", None), ("flat", 0), ("flat", 3), ("flat", 1)]
for blocks in (sms, 2 * sms, 4 * sms, mx):
    for bare in (False, True):
        res = {i: [] for i in impls}
        for rnd in range(5):
            order = impls if rnd % 2 == 0 else impls[::-1]
            for s, p in order:
                res[(s, p)].append(one(s, blocks, p, bare))
        c = st.median(res[impls[0]])
        print(f"{blocks:5d} {'bare' if bare else 'verified':8s} " + " | ".join(
            f"{s}{'' if p is None else '[poll=%d]' % p} {st.median(v):.3f} ({st.median(v)/c:.3f}x; {min(v):.3f}-{max(v):.3f})" for (s, p), v in res.items()), flush=True)
