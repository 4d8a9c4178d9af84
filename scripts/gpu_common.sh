# Shared by the scripts/gpu_*.sh scripts (sourced, not run): the folder
# their logs go to and the environment of every run on the GPU machine.
#
# Sourcing it moves to the repository root, sets OUT ($OUT, or ./gpu-out)
# and makes that folder, keeps NVLink multicast off (NCCL, and the
# libraries that read their own variables), and points RUDA_CACHE_DIR at
# build-gpu/ruda-cache unless it is set.
#   gpu_quick_args "$@"        sets QUICK ("--quick" or "") and BENCH (1, 0
#                              for --no-bench); other arguments are the
#                              caller's
#   gpu_build_tools LOG        builds build-gpu (all targets) into $OUT/LOG
#                              unless build-gpu/tools/ruda is there; exits
#                              with the log's tail when the build fails
#   gpu_build LOG              configures build-gpu with the examples and
#                              builds every target, logging to $OUT/LOG;
#                              prints "build rc=N in Ns" (and the first
#                              errors when it failed) and returns N

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RUDA_CACHE_DIR="${RUDA_CACHE_DIR:-$PWD/build-gpu/ruda-cache}"

gpu_quick_args() {
  QUICK=""
  BENCH=1
  local a
  for a in "$@"; do
    case "$a" in
      --quick) QUICK="--quick" ;;
      --no-bench) BENCH=0 ;;
    esac
  done
}

gpu_build_tools() {
  local log="$OUT/$1"
  [ -x build-gpu/tools/ruda ] && return 0
  local start
  start=$(date +%s)
  { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    ninja -C build-gpu -j "$(nproc)"; } > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
  echo "build in $(( $(date +%s) - start ))s"
}

gpu_build() {
  local log="$OUT/$1" start rc
  start=$(date +%s)
  { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUDA_BUILD_EXAMPLES=ON &&
    ninja -C build-gpu -j "$(nproc)"; } > "$log" 2>&1
  rc=$?
  echo "build rc=$rc in $(( $(date +%s) - start ))s"
  [ $rc -ne 0 ] && grep -E 'error|FAILED' "$log" | head -40
  return $rc
}
