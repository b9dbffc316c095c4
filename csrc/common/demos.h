/*
 * demos.h -- the teaching demos and test hooks of each backend, in their own
 * table: they are not the library's API (gs_backend_ops) and only the
 * binding's private names (_core.counter, _core.divergence, _core.self_test,
 * _core.test_deadlock) reach them.  Designated initializers, no NULL slot
 * (tests/test_contract.py).
 */
#ifndef GPUSYNC_DEMOS_H
#define GPUSYNC_DEMOS_H

#include "gpusync/gpusync.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gs_demo_ops {
    const char *name;

    /* Teaching demo (seed 001): blocks x threads threads each add 1 to one
     * counter, racing (kind 0), with atomics (1) or under a mutex (2).  The
     * final value and the time in ms.  Synchronizes. */
    gs_status (*counter)(int kind, int64_t blocks, int threads, int64_t *value, double *ms);

    /* Test hook: try to take a lock that is never released, with this
     * time-out; must return GS_ERR_DEADLOCK and leave the backend usable. */
    gs_status (*test_deadlock)(int64_t timeout_ns);

    /* Teaching demo (seed 002): time in ms of a kernel over n threads whose
     * branch is on tid % 2 (kind 0, 2) or on (tid / 32) % 2 (kind 1, 3);
     * kinds 0-1 branch over one assignment (the compiler predicates it),
     * kinds 2-3 over loops of `iters` steps (it cannot). */
    gs_status (*divergence)(int kind, int64_t n, int block, int iters, double *ms);

    /* Test hook: self test `which` (0: both warp reductions of reduce.cuh
     * under divergence); *bad counts wrong results. */
    gs_status (*self_test)(int which, int64_t *bad);
} gs_demo_ops;

const gs_demo_ops *gs_cpu_demos(void);
const gs_demo_ops *gs_cuda_demos(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUSYNC_DEMOS_H */
