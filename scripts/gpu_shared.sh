#!/usr/bin/env bash
# The shared pieces on a GPU machine: the run-time library loader
# (src/base/dynlib.c) against the real CUDA driver, NVRTC and NCCL, the GPU
# benchmark skeleton (bench/bench_gpu.c) under every CUDA group, the one
# all-reduce benchmark, and `ruda kernels check` through the public API.
#
#   scripts/gpu_shared.sh          (about 2 minutes after the build)
#
# Logs go to $OUT (or ./gpu-out):
#   shared_build.log     cmake + ninja (build-gpu)
#   shared_devices.json  `ruda devices --json`: cuda available, its devices
#   shared_tests.log     the loader, stand-in, GPU backend and collective tests
#   shared_bench.json    launch, memory, copy, compile, graph, allreduce on
#                        cuda:0 (--quick), one JSON object per line
#   shared_bench.txt     their stderr: skips and failures
#   shared_parts.txt     RUDA_BENCH_PARTS=1 launch (the backend's parts, then ruda's)
#   shared_kernels.txt   `ruda kernels check --arch sm_90` of the tree's kernel files
#   shared_summary.txt   what to look for, filled in
set -uo pipefail
source "$(dirname "$0")/gpu_common.sh"

{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  ninja -C build-gpu -j "$(nproc)"; } > "$OUT/shared_build.log" 2>&1 ||
  { tail -30 "$OUT/shared_build.log"; exit 1; }
R=build-gpu/tools/ruda

$R devices --json > "$OUT/shared_devices.json" 2>&1
(cd build-gpu && timeout 300 ctest -R 'dynlib|loader|stand_in|gpu_test_cuda|collective' \
  --output-on-failure --timeout 120) > "$OUT/shared_tests.log" 2>&1
: > "$OUT/shared_bench.json"
: > "$OUT/shared_bench.txt"
for g in launch memory copy compile graph allreduce; do
  timeout 300 $R bench $g --device cuda:0 --quick --json >> "$OUT/shared_bench.json" \
    2>> "$OUT/shared_bench.txt"
  echo "bench $g rc=$?" >> "$OUT/shared_bench.txt"
done
RUDA_BENCH_PARTS=1 timeout 300 $R bench launch --device cuda:0 --smoke > "$OUT/shared_parts.txt" 2>&1
mapfile -t files < <(cat build-gpu/kernel_files.txt 2>/dev/null)
timeout 300 $R kernels check --arch sm_90 --cuda-only "${files[@]}" > "$OUT/shared_kernels.txt" 2>&1
echo "kernels check rc=$?" >> "$OUT/shared_kernels.txt"

{
  echo "cuda available (want true):"
  grep -o '"type":"cuda","available":[a-z]*' "$OUT/shared_devices.json"
  echo "tests:"; grep -E 'tests passed|\*\*\*' "$OUT/shared_tests.log"
  echo "bench cases reported on cuda (want launch, memory, copy, compile, graph and comm each >= 1):"
  grep -o '"bench": "[a-z]*"' "$OUT/shared_bench.json" | sort | uniq -c
  echo "bench failures (want none):"; grep -E 'FAILED|fail:|rc=[1-9]' "$OUT/shared_bench.txt"
  echo "parts lines (want > 20):"; grep -c 'parts:' "$OUT/shared_parts.txt"
  echo "kernels check:"; tail -1 "$OUT/shared_kernels.txt"
} > "$OUT/shared_summary.txt" 2>&1
cat "$OUT/shared_summary.txt"
