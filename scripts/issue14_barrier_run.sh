#!/bin/bash
# Issue 14 grid-barrier device run (one run: build, GPU barrier tests, the barrier benchmark with its
# tuning sweep, compute-sanitizer memcheck / synccheck / racecheck on the flat and cluster time-out tests).
# Run from the repository copy's root on the device (kind nvidia-h200, about 6 minutes); logs under $OUT,
# the benchmark's barrier_<GPU>.md and latest.json under $OUT/results.
export PYTHONUNBUFFERED=1 GPUSYNC_CUDA_ARCHS=90
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../.deps/wheels/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $OUT/smi.txt 2>&1
stamp build
timeout 170 python3 setup.py build_ext --inplace > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
stamp tests
timeout 100 python3 -m pytest -q -p no:cacheprovider -rA tests/test_barrier.py -m gpu > $OUT/test_gpu.log 2>&1
echo "tests rc=$?"; grep -E "passed|failed|FAILED|Error" $OUT/test_gpu.log | tail -15
stamp bench
mkdir -p $OUT/results && cp benchmarks/results/latest.json $OUT/results/
timeout 110 python3 benchmarks/barrier.py --only barrier --out $OUT/results > $OUT/bench.log 2>&1
echo "bench rc=$?"; sed -n '/target case/,/^$/p' $OUT/bench.log
stamp sanitizers
for T in memcheck synccheck racecheck; do
  GPUSYNC_SPIN_TIMEOUT_MS=30000 timeout 40 compute-sanitizer --tool $T --error-exitcode 9 python3 -m pytest -q \
    -p no:cacheprovider tests/test_barrier.py -m gpu -k "timeout and (cluster or flat)" > $OUT/san_$T.log 2>&1
  echo "$T rc=$?"; grep -E "ERROR SUMMARY|passed|failed|not supported" $OUT/san_$T.log | tail -3
done
stamp done
