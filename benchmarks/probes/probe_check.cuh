// probe_check.cuh -- CK(call): the standalone probes' check of a CUDA runtime
// call (file, line, the call and CUDA's message on stderr, then exit 1); and
// graph_us, their graph-replay timing.  The
// probes are single files built by hand with nvcc (see each one's header);
// the package's own check is GS_CUDA_CHECK (csrc/cuda/runtime.cuh).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                 \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

// Device time of one of `calls` captured calls of body(s) in a CUDA graph: one
// warm-up replay, then the median of 7 replays (events), divided by `calls`.
template <class F> static float graph_us(cudaStream_t s, int calls, F &&body)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < calls; i++)
        body(s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaGraphLaunch(ge, s));
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3f / calls);
    }
    std::sort(t.begin(), t.end());
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return t[t.size() / 2];
}
