// probe_check.cuh -- CK(call): the standalone probes' check of a CUDA runtime
// call (file, line, the call and CUDA's message on stderr, then exit 1).  The
// probes are single files built by hand with nvcc (see each one's header);
// the package's own check is GS_CUDA_CHECK (csrc/cuda/runtime.cuh).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                 \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)
