#!/usr/bin/env bash
# Build in place, run the whole test suite (GPU tests included), run
# compute-sanitizer (memcheck, racecheck, synccheck) over a subset of the GPU
# tests (lock time-outs raised to 30 s: instrumented spins are slow), and run
# the benchmarks.  For a GPU machine with no network (the lent device).
#
#   scripts/gpu-check.sh [OUTDIR]        (default: $OUT, else ./gpu-check-out)
#
# Environment: GPUSYNC_CUDA_ARCHS (default: setup.py builds for the GPUs it
# sees, i.e. only what this GPU runs), SKIP_BENCH=1, SKIP_SANITIZER=1, SKIP_NCU=1, BENCHES (default
# "histogram reduce warp barrier host"), BENCH_ARGS (extra benchmark args), PYTEST_ARGS.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-check-out}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export GPUSYNC_CUDA_OBJDIR=${GPUSYNC_CUDA_OBJDIR:-$PWD/.cuda-objs}  # objects built elsewhere are reused when up to date
status=0
step() { echo; echo "=== $* ($(date +%T))"; }

step "build (${GPUSYNC_CUDA_ARCHS:-the architectures of the GPUs visible here})"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
t0=$(date +%s)
if ! python3 setup.py build_ext --inplace >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"; echo "BUILD FAILED"; exit 1
fi
grep "^gpusync:" "$out/build.log"  # which nvcc, which architectures, objects reused
echo "built in $(( $(date +%s) - t0 )) s"
python3 -c "import gpusync as gs; print(gs.backend(), gs.device_info()['name'])"

if [ -d .deps/wheels ]; then  # pure-Python test extras carried here (no network here): docs/build.md fills it
    python3 -m pip install -q --no-index --no-deps --target /tmp/gpusync-deps .deps/wheels/*.whl >/dev/null 2>&1 &&
        export PYTHONPATH=/tmp/gpusync-deps${PYTHONPATH:+:$PYTHONPATH}
fi

step "pytest (all, GPU included)"
python3 -m pytest -q -p no:cacheprovider tests ${PYTEST_ARGS:-} 2>&1 | tee "$out/pytest.log" | tail -25
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ -z "${SKIP_SANITIZER:-}" ]; then
    # the tests marked `sanitizer` (pyproject.toml): every kernel family once at modest sizes
    for tool in memcheck racecheck synccheck; do
        step "compute-sanitizer --tool $tool (the tests marked sanitizer; barriers)"
        rc=0
        sel="sanitizer and gpu and not slow"
        # racecheck cannot see locks built from atomics: the lock-protected
        # updates of binned_statistic's shared-memory bins read as hazards
        [ $tool = racecheck ] && sel="$sel and not racecheck_blind"
        GPUSYNC_SPIN_TIMEOUT_MS=30000 compute-sanitizer --tool $tool --error-exitcode 9 --target-processes all \
            python3 -m pytest -q -p no:cacheprovider -x tests -m "$sel" \
            >"$out/sanitizer-$tool.log" 2>&1 || rc=$?
        [ $tool = memcheck ] || GPUSYNC_SPIN_TIMEOUT_MS=30000 compute-sanitizer --tool $tool --error-exitcode 9 \
            --target-processes all python3 -c "import gpusync as gs
for s in ('lock', 'lockfree', 'sense', 'cooperative'):
    print(s, gs.barrier_benchmark(s, rounds=200)['stale'])" >>"$out/sanitizer-$tool.log" 2>&1 || rc=$?
        grep -E "passed|failed|ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer-$tool.log" | tail -9
        [ $rc -eq 0 ] || { echo "$tool: exit $rc"; status=1; }
    done
fi

if command -v ncu >/dev/null; then
    step "ncu branch efficiency of the divergence demo (seed 002)"
    ncu --metrics smsp__sass_average_branch_targets_threads_uniform.pct,smsp__thread_inst_executed_per_inst_executed.ratio \
        -k regex:div_ python3 -c "import gpusync as gs; from gpusync import demo; demo.divergence(n=1 << 20)" \
        >"$out/ncu-divergence.log" 2>&1 || echo "ncu failed (see ncu-divergence.log)"
    grep -E "div_|branch_targets|per_inst_executed" "$out/ncu-divergence.log" | head -24
fi

if [ -z "${SKIP_NCU:-}" ] && command -v ncu >/dev/null; then
    step "ncu SpeedOfLight of the histogram kernels"
    ncu --clock-control none --section SpeedOfLight -k regex:hist_ python3 -m benchmarks.probes.ncu_hist \
        >"$out/ncu.log" 2>&1 || echo "ncu failed (see ncu.log)"
    grep -E "hist_|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput" "$out/ncu.log" | head -40
fi

if [ -z "${SKIP_BENCH:-}" ]; then
    step "benchmarks"
    for b in ${BENCHES:-histogram reduce warp barrier host}; do
        python3 benchmarks/$b.py --out "$out" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench-$b.log" | tail -45
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
fi
step "done: status $status"
exit $status
