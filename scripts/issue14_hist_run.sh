#!/bin/bash
# Issue 14 histogram/packbits device run (one run: build, GPU tests, compute-sanitizer, benchmark).
# Run from the repository copy's root on the device; logs under $OUT.
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 GPUSYNC_CUDA_ARCHS=90
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.deps/wheels/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt 2>&1
# the CUB/cuBLAS peers, built while gpusync builds
( nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -shared benchmarks/cub_helper.cu -o /tmp/gpusync_libcubhelper.so -lcublas > $OUT/cub_build.log 2>&1 ) &
CUBPID=$!
GPUSYNC_PTXAS_VERBOSE=1 python3 setup.py build_ext --inplace > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "built at $(el) s"
S="GPUSYNC_SPIN_TIMEOUT_MS=30000"
IDS="tests/test_hist_small.py::test_u8_256_every_distribution[same-4099-1-cupy] tests/test_hist_small.py::test_u8_256_every_distribution[uniform-1000003-7-cupy] tests/test_hist_small.py::test_u8_fewer_bins_offsets_and_tables[7-rng_1-uniform-1000003-cupy] tests/test_hist_small.py::test_u8_fewer_bins_offsets_and_tables[100-rng_0-same-17-cupy] tests/test_hist_small.py::test_small_range_bincount[uint16-4096-4099-1-cupy] tests/test_hist_small.py::test_small_range_bincount[int32-100-4099-3-cupy] tests/test_hist_small.py::test_small_range_distributions[uint16-same-cupy] tests/test_hist_small.py::test_packbits_bytes[uint8-4099-0-cupy] tests/test_hist_small.py::test_packbits_bytes[int8-17-0-cupy]"
for t in memcheck racecheck synccheck; do
  ( env $S timeout 90 compute-sanitizer --tool $t --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider $IDS > $OUT/san_$t.log 2>&1; echo "rc=$?" >> $OUT/san_$t.log ) &
done
timeout 110 python3 -m pytest -q -p no:cacheprovider -m gpu -rfE tests/test_hist_small.py tests/test_gpu.py tests/test_bincount.py tests/test_bits.py tests/test_histogram.py > $OUT/tests.log 2>&1
echo "tests rc=$? at $(el) s"; tail -5 $OUT/tests.log
wait
for t in memcheck racecheck synccheck; do echo "$t: $(grep -E 'ERROR SUMMARY|passed|failed' $OUT/san_$t.log | tail -2 | tr '\n' ' ') $(tail -1 $OUT/san_$t.log)"; done
echo "sanitizers done at $(el) s"
LEFT=$(( 395 - $(el) ))
mkdir -p $OUT/results
cp benchmarks/results/latest.json $OUT/results/ 2>/dev/null
GS_BENCH_SKIP_BINSTAT=1 timeout -s INT $LEFT python3 benchmarks/histogram.py --dist --sweeps --out $OUT/results > $OUT/bench.log 2>&1
echo "bench rc=$? at $(el) s"
tail -60 $OUT/bench.log
cd $OUT && tar czf logs.tgz *.log *.txt results 2>/dev/null
