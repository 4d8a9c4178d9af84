#!/usr/bin/env bash
# Device loss, cancellation and errors nobody read on the GPU machine: a
# real kernel fault on cuda:0 and on NVIDIA's OpenCL, the supervisor
# example restarting its worker after a real CUDA fault, and the CPU tests
# of the same features. gpu_check.sh runs it after its own tests (on its
# build-gpu); alone it builds what it needs there first.
#
#   scripts/gpu_device_loss.sh [--no-build]
#
# Logs go to $OUT (or ./gpu-out): device_loss.txt, every run's output and
# its exit code. What to look for:
#   gpu_test_cuda_fault         PASS; "after the fault:" then either "the
#                               device was reset and works again" or the
#                               DeviceLost text, "ruda_device_recover: ...
#                               restart the process" and "cpu:0 works"
#   example_supervisor --fault  "the worker lost its device at job 3" (or,
#                               where the driver resets the context, every
#                               job done by one worker), then "every job ran"
#   opencl (real fault)         PASS with "opencl:0 is lost" in the fault
#                               line; SKIP where opencl:0 is absent
#   opencl (injected), cancel, lost errors, CUDA stand-in: PASS
#   "lost-error reports of cuda:0 in gpu_test_cuda_fault: N": N at most 1
#                               (a lost device is reported once, never once
#                               per stream; 0 where the test read it)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
LOG="$OUT/device_loss.txt"
: > "$LOG"
B=${RUDA_GPU_BUILD:-build-gpu}
if [ "${1:-}" != "--no-build" ]; then
  { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUDA_BUILD_EXAMPLES=ON &&
    ninja -C "$B" gpu_test_cuda_fault example_supervisor unit_test_opencl_device_lost \
      unit_test_cancel unit_test_lost_errors unit_test_cuda_device_lost ruda_cmd; } \
    > "$OUT/device_loss_build.log" 2>&1 || ninja -C "$B" -k 0 >> "$OUT/device_loss_build.log" 2>&1
fi
run() {
  local name="$1"; shift
  echo "== $name" >> "$LOG"
  timeout 120 "$@" >> "$LOG" 2>&1
  echo "exit $?" >> "$LOG"
}
[ -x "$B/tools/ruda" ] && run "ruda devices" "$B/tools/ruda" devices
run "gpu_test_cuda_fault (a real illegal address on cuda:0)" "$B/tests/gpu_test_cuda_fault"
run "example_supervisor --fault on cuda:0" env RUDA_DEVICE=cuda:0 "$B/examples/example_supervisor" --fault
run "opencl:0, a real out-of-bounds write" env RUDA_TEST_OPENCL_REAL_FAULT=1 \
  "$B/tests/unit_test_opencl_device_lost"
run "opencl:0, an injected fault" "$B/tests/unit_test_opencl_device_lost"
run "cancel (cpu:0)" "$B/tests/unit_test_cancel"
run "errors nobody read (cpu:0)" "$B/tests/unit_test_lost_errors"
run "CUDA stand-in: injected loss" "$B/tests/unit_test_cuda_device_lost"
n=$(awk '/^== /{on=/gpu_test_cuda_fault/} on && /error never read on cuda:0/' "$LOG" | wc -l)
echo "lost-error reports of cuda:0 in gpu_test_cuda_fault: $n" >> "$LOG"
grep -E '^== |^exit|PASS|FAIL|SKIP|passed|is lost|recover|supervisor:|after the fault|works|lost-error reports' "$LOG"
exit 0
