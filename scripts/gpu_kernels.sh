#!/usr/bin/env bash
# Portable kernels on the GPU machine: every kernel file compiled by the
# machine's NVRTC for the GPU's architecture, the conformance suite (its
# kernels and the dialect tests are portable kernels) and the examples on
# cuda:0, then `ruda bench kernels` on cuda:0 and cpu:0 (and opencl:0 when
# the build has an OpenCL backend and the machine an OpenCL driver).
#
#   scripts/gpu_kernels.sh [--quick] [--no-bench]
#
# About 3 minutes on one H200 (most of it the build). Logs go to $OUT (the
# device tool brings that folder back) or ./gpu-out:
#   kernels_env.txt     nvidia-smi, NVRTC, OpenCL platforms
#   kernels_build.log   cmake + ninja
#   kernels_check.txt   `ruda kernels check --arch sm_XY` over every kernel file
#   kernels_ctest.log   the conformance tests and examples on cuda:0
#   bench_kernels_cuda.json / bench_kernels_cpu.json / bench_kernels_opencl.json
#                       `ruda bench kernels --json` per device
#   bench_kernels_stderr.txt  progress lines and failures
set -uo pipefail

source "$(dirname "$0")/gpu_common.sh"
gpu_quick_args "$@"

{
  echo "== date"; date -u
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
  ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null
  echo "== OpenCL"; (clinfo -l 2>&1 || echo "no clinfo") | head -20
  ls /etc/OpenCL/vendors 2>/dev/null
} > "$OUT/kernels_env.txt" 2>&1
cat "$OUT/kernels_env.txt"
CC_CAP="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')"
ARCH="sm_${CC_CAP:-90}"

echo "== build"
gpu_build kernels_build.log || exit 1

echo "== ruda kernels check --arch $ARCH (every kernel file of the tree)"
mapfile -t files < build-gpu/kernel_files.txt
timeout 300 build-gpu/tools/ruda kernels check --arch "$ARCH" --skip-unavailable "${files[@]}" \
  > "$OUT/kernels_check.txt" 2>&1
echo "check rc=$?"
cut -c1-160 "$OUT/kernels_check.txt"

echo "== conformance and examples on cuda:0"
start=$(date +%s)
(
  cd build-gpu
  export RUDA_CTS_DEVICE=cuda:0 RUDA_DEVICE=cuda:0
  timeout 300 ctest -L cts --output-on-failure --timeout 120
  timeout 120 ctest -R '^example_' --output-on-failure --timeout 60
  for e in vector_add reduction matmul; do ./examples/example_$e; done
) > "$OUT/kernels_ctest.log" 2>&1
echo "tests rc=$? in $(( $(date +%s) - start ))s"
grep -E 'tests passed|Test +#|\*\*\*|Failed|FAIL |on cuda' "$OUT/kernels_ctest.log" | tail -30

if [ "$BENCH" = 1 ]; then
  : > "$OUT/bench_kernels_stderr.txt"
  for dev in cuda:0 cpu:0 opencl:0; do
    tag="${dev%%:*}"
    echo "== ruda bench kernels --device $dev"
    start=$(date +%s)
    timeout 400 build-gpu/tools/ruda bench kernels --device "$dev" --json $QUICK \
      > "$OUT/bench_kernels_$tag.json" 2>> "$OUT/bench_kernels_stderr.txt"
    echo "bench $dev rc=$? in $(( $(date +%s) - start ))s"
    cat "$OUT/bench_kernels_$tag.json"
  done
  tail -20 "$OUT/bench_kernels_stderr.txt"
fi
exit 0
