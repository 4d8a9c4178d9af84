#!/usr/bin/env bash
# The autotuner on the GPU machine: a fresh build, its conformance test on
# cuda:0 (and NVIDIA OpenCL when there is an ICD), `ruda bench tune` three
# times on cuda:0, and the tuning decisions.
#
#   scripts/gpu_tune.sh
#
# Logs go to $OUT (or ./gpu-out):
#   tune_build.log        cmake + ninja
#   tune_ctest.log        cts_test_cts_tune (and _regs, the register-blocked matmul
#                         kernels) on cuda:0, cts_test_cts_tune on opencl:0, kernels_check
#   tune_bench_N.json     `ruda bench tune --device cuda:0 --json`, runs 1..3
#   tune_bench_opencl_N.json  the same on opencl:0 (NVIDIA's OpenCL), where
#                         `ruda devices` lists an OpenCL device
#   tune_decisions.log    the autotune channel's JSON lines of the first run
#   tune_list.txt         `ruda tune list` afterwards
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export RUDA_CACHE_DIR="$PWD/build-gpu-tune/cache"
{ cmake -S . -B build-gpu-tune -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C build-gpu-tune; } \
  > "$OUT/tune_build.log" 2>&1 || { echo "build failed: see tune_build.log"; exit 1; }
(cd build-gpu-tune &&
  RUDA_CTS_DEVICE=cuda:0 ./tests/cts_test_cts_tune &&
  RUDA_CTS_DEVICE=cuda:0 ./tests/cts_test_cts_tune_regs &&
  RUDA_CTS_DEVICE=opencl:0 ./tests/cts_test_cts_tune;
  ctest -R kernels_check --output-on-failure) > "$OUT/tune_ctest.log" 2>&1
for i in 1 2 3; do
  log=""
  [ "$i" = 1 ] && log="basic:$OUT/tune_decisions.log"
  RUDA_LOG_AUTOTUNE="${log:-disabled}" ./build-gpu-tune/tools/ruda bench tune --device cuda:0 --json \
    > "$OUT/tune_bench_$i.json" 2>&1
done
if ./build-gpu-tune/tools/ruda devices 2>/dev/null | grep -q "opencl:0"; then
  for i in 1 2 3; do
    ./build-gpu-tune/tools/ruda bench tune --device opencl:0 --json > "$OUT/tune_bench_opencl_$i.json" 2>&1
  done
fi
./build-gpu-tune/tools/ruda tune list > "$OUT/tune_list.txt" 2>&1
grep -h '"case"' "$OUT"/tune_bench_*.json | head -60
