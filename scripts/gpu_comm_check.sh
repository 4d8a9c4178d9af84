#!/usr/bin/env bash
# Communication on the lent GPU machine: a fresh build, the NCCL tests, and
# `ruda bench comm` on CUDA next to NCCL called directly. With one GPU the
# single-device paths run (all-reduce, broadcast, all-gather and
# reduce-scatter over cuda:0, a communicator made from a token as an MPI
# rank would, the NCCL type table, to_client through the host); send/recv,
# the absent-peer timeout and the two-GPU bandwidths need two GPUs and
# report a skip. There is no MPI on these machines: the MPI transport is
# not built there.
#
#   scripts/gpu_comm_check.sh [--quick] [--no-bench]
#
# Logs under $OUT (or ./gpu-out): env.txt, build.log, ctest.log,
# bench_comm.json (+ bench_comm_stderr.txt), bench_comm_grouped0.json (the
# all-reduce with RUDA_NCCL_GROUPED=0, each worker issuing its own call) and
# bench_comm_blocking.json (blocking communicators, RUDA_NCCL_BLOCKING=1).
set -uo pipefail

source "$(dirname "$0")/gpu_common.sh"
gpu_quick_args "$@"

{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi -L 2>&1 || echo "nvidia-smi not found"
  echo "== libraries"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnccl\.so' || true
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "== tools"; gcc --version | head -1; cmake --version | head -1; nproc
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== build"
start=$(date +%s)
{
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  ninja -C build-gpu -j "$(nproc)" ruda_cmd gpu_test_cuda_collectives unit_test_cpu_collectives \
    unit_test_cpu_comm_timeout
} > "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - start ))s"
if [ $rc -ne 0 ]; then grep -E 'error|FAILED' "$OUT/build.log" | head -40; exit 1; fi

echo "== tests"
(
  cd build-gpu
  timeout 300 ctest -R 'gpu_test_cuda_collectives|unit_test_cpu_collectives|unit_test_cpu_comm_timeout' \
    --output-on-failure --timeout 240 -V
) > "$OUT/ctest.log" 2>&1
echo "tests rc=$?"
grep -E '^[0-9]+: (PASS|FAIL|SKIP)|# |tests passed|Failed|\*\*\*' "$OUT/ctest.log" | tail -60

if [ "$BENCH" = 1 ]; then
  echo "== bench comm --device cuda:0"
  timeout 400 build-gpu/tools/ruda bench comm --device cuda:0 --json $QUICK \
    > "$OUT/bench_comm.json" 2> "$OUT/bench_comm_stderr.txt"
  echo "bench rc=$?"
  cat "$OUT/bench_comm.json"
  grep -E 'skipped|failed|error' "$OUT/bench_comm_stderr.txt" | head -20
  echo "== the same, each worker issuing its own NCCL call (RUDA_NCCL_GROUPED=0)"
  RUDA_NCCL_GROUPED=0 timeout 300 build-gpu/tools/ruda bench comm --device cuda:0 --json $QUICK \
    > "$OUT/bench_comm_grouped0.json" 2>> "$OUT/bench_comm_stderr.txt"
  grep -E 'allreduce' "$OUT/bench_comm_grouped0.json"
  echo "== the same with blocking communicators (RUDA_NCCL_BLOCKING=1)"
  RUDA_NCCL_BLOCKING=1 timeout 300 build-gpu/tools/ruda bench comm --device cuda:0 --json $QUICK \
    > "$OUT/bench_comm_blocking.json" 2>> "$OUT/bench_comm_stderr.txt"
  grep -E 'allreduce' "$OUT/bench_comm_blocking.json"
fi
