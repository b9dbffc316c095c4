/*
 * internal.cuh -- every header the CUDA backend's files share, for a file
 * that wants them all.  Each part says what it holds:
 *   runtime.cuh      errors, pool, device facts and guard, the entry-point
 *                    preamble and deadlock epilogue, waits and the cancel word
 *   stage.cuh        host <-> device copies and the one staging loop
 *   kernel_refs.cuh  the occupancy registry
 *   dtypes.cuh       float16 / bool storage types, element -> accumulator
 *   elements.cuh     the grid-stride element loop, the dtype switch
 *   hist_launch.cuh  histogram launch shape, launchers, binning on the device
 * Include the ones a file uses.
 */
#ifndef GPUSYNC_CUDA_INTERNAL_CUH
#define GPUSYNC_CUDA_INTERNAL_CUH

#include "dtypes.cuh"
#include "elements.cuh"
#include "hist_launch.cuh"
#include "kernel_refs.cuh"
#include "runtime.cuh"
#include "stage.cuh"

#endif /* GPUSYNC_CUDA_INTERNAL_CUH */
