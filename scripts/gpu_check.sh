#!/usr/bin/env bash
# The one script a device call runs: what the machine has, a fresh build,
# the GPU and conformance tests on cuda:0, and the CUDA benchmarks.
#
#   scripts/gpu_check.sh [--quick] [--no-bench] [--tests REGEX] [--asan]
#
# Logs go to $OUT (the device tool brings that folder back) or ./gpu-out:
#   env.txt      nvidia-smi, driver/NVRTC/NCCL paths, compiler versions
#   build.log    cmake + ninja
#   ctest.log    ctest -L 'gpu|cts' (plus the CUDA unit test), verbose on failure
#   bench.json   `ruda bench all --device cuda:0 --json`, one object per line
#   bench_stderr.txt  its progress lines and failures
#   bench_nospin.json the launch and copy groups again with RUDA_CUDA_WAIT_SPIN_US=0
#   fault.txt    the out-of-bounds test's report, the tensor-map test traced
#   device_loss.txt  real faults on cuda:0 and NVIDIA OpenCL, the supervisor
#                example, cancel and lost-error tests (gpu_device_loss.sh)
#   trace.json   the Chrome/Perfetto trace of that tensor-map test
#   cases.txt    per test program on cuda:0: "N passed, N failed, N skipped"
#   asan.txt     (--asan) the unit, GPU and conformance tests under ASan+UBSan
set -uo pipefail

source "$(dirname "$0")/gpu_common.sh"
gpu_quick_args "$@"
TESTS=""
ASAN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) TESTS="$2"; shift ;;
    --asan) ASAN=1 ;;
  esac
  shift
done

export RUDA_CTS_DEVICE="${RUDA_CTS_DEVICE:-cuda:0}"
# An absent CUDA device fails the tests here instead of skipping them.
export RUDA_REQUIRE_DEVICE="${RUDA_REQUIRE_DEVICE:-cuda}"

{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "nvidia-smi not found"
  echo "== libraries"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so|libnccl\.so' || true
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null
  echo "== tools"; gcc --version | head -1; cmake --version | head -1; ninja --version
  nproc
  echo "== OpenCL"; ls /etc/OpenCL/vendors 2>&1; cat /etc/OpenCL/vendors/*.icd 2>/dev/null
  ldconfig -p 2>/dev/null | grep -iE 'libOpenCL|nvidia-opencl' || echo "no OpenCL library in ldconfig"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | head -40

echo "== build"
if ! gpu_build build.log; then
  # Build what can be built so the tests that compiled still run.
  ninja -C build-gpu -k 0 >> "$OUT/build.log" 2>&1
fi
grep -c 'warning:' "$OUT/build.log" | sed 's/^/build warnings: /'

echo "== tests"
start=$(date +%s)
REGEX="${TESTS:-}"
(
  cd build-gpu
  if [ -n "$REGEX" ]; then
    timeout 300 ctest -R "$REGEX" --output-on-failure --timeout 90
  else
    timeout 240 ctest -L 'gpu|cts' --output-on-failure --timeout 90
    timeout 60 ctest -R 'unit_test_cuda' --output-on-failure --timeout 60
  fi
) > "$OUT/ctest.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - start ))s"
# The fault test's own lines (reset or not), and a timeline trace of the
# tensor-map test (kernels and copies with device durations).
timeout 60 build-gpu/tests/gpu_test_cuda_fault > "$OUT/fault.txt" 2>&1
RUDA_TRACE="$OUT/trace.json" timeout 60 build-gpu/tests/gpu_test_cuda_tensor_map >> "$OUT/fault.txt" 2>&1
cat "$OUT/fault.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d; print('trace events:', len(ev), sorted({e.get('cat') for e in ev if e.get('ph')=='X'}))" "$OUT/trace.json" 2>&1 | tail -1
grep -E 'tests passed|Test +#|\*\*\*|Failed|SKIP' "$OUT/ctest.log" | tail -60
# Device loss on cuda:0 and NVIDIA's OpenCL, the supervisor example,
# cancellation and errors nobody read (device_loss.txt).
echo "== device loss"
bash scripts/gpu_device_loss.sh --no-build
# Per program, how many cases passed, failed and were skipped on cuda:0
# (CTest only says whether a program passed).
for t in build-gpu/tests/cts_test_* build-gpu/tests/gpu_test_*; do
  [ -x "$t" ] || continue
  printf '%-40s %s\n' "$(basename "$t")" "$(timeout 120 "$t" 2>&1 | tail -n 1)"
done > "$OUT/cases.txt"
cat "$OUT/cases.txt"

if [ "$BENCH" = 1 ]; then
  echo "== bench"
  start=$(date +%s)
  if [ -x build-gpu/tools/ruda ]; then
    timeout 200 build-gpu/tools/ruda bench all --device cuda:0 --json $QUICK > "$OUT/bench.json" 2> "$OUT/bench_stderr.txt"
    echo "bench rc=$? in $(( $(date +%s) - start ))s"
    cat "$OUT/bench.json"
    tail -20 "$OUT/bench_stderr.txt"
    # The same round trips with futures blocking in cuEventSynchronize at
    # once (no cuEventQuery polling first), for comparison.
    echo "== bench with RUDA_CUDA_WAIT_SPIN_US=0 (launch, copy)"
    for g in launch copy; do
      RUDA_CUDA_WAIT_SPIN_US=0 timeout 90 build-gpu/tools/ruda bench "$g" --device cuda:0 --json $QUICK \
        >> "$OUT/bench_nospin.json" 2>> "$OUT/bench_stderr.txt"
    done
    grep -E 'roundtrip|read_4B' "$OUT/bench_nospin.json"
  else
    echo "no build-gpu/tools/ruda: bench skipped"
  fi
fi
# Last: the sanitizer pass is the slowest, and the figures above come first.
if [ "$ASAN" = 1 ]; then
  echo "== asan+ubsan (gpu tests)"
  start=$(date +%s)
  {
    cmake -S . -B build-gpu-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRUDA_SANITIZE=address,undefined \
      -DRUDA_BUILD_EXAMPLES=OFF > /dev/null &&
    ninja -C build-gpu-asan -j "$(nproc)" > /dev/null &&
    (cd build-gpu-asan && export ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 &&
      timeout 60 ctest -R gpu_test_cuda_shutdown --output-on-failure --timeout 60 &&
      timeout 300 ctest -L 'unit|gpu|cts' -E 'gpu_test_cuda_shutdown|opencl' --output-on-failure \
        -j 8 --timeout 120)
  } > "$OUT/asan.txt" 2>&1
  echo "asan rc=$? in $(( $(date +%s) - start ))s"
  grep -E 'tests passed|Failed|ERROR: AddressSanitizer|runtime error|SKIP' "$OUT/asan.txt" | head -20
fi

exit 0
