#!/usr/bin/env bash
# NVIDIA OpenCL and CUDA latency figures on the GPU machine, several runs
# each (after a build; reuses build-gpu/ when another gpu_*.sh script made
# it):
#
#   scripts/gpu_opencl_perf.sh [--runs N] [--no-kernels] [--mpi]
#
#  1. `ruda bench launch --device opencl:N` on the NVIDIA OpenCL device with
#     RUDA_BENCH_PARTS=1 in every run: the round trip (launch + sync against
#     clEnqueueNDRangeKernel + clFinish) and its parts, the medians of the
#     OpenCL calls (enqueue alone, + clFlush, + clFinish, a marker event and
#     clWaitForEvents, with a thread polling) next to ruda's own parts
#     (client call, server call, its flush and wait);
#  2. `ruda bench compile --device opencl:N`: the warm kernel load against
#     clBuildProgram, with the driver's own share of a disk hit (the
#     progress line "per disk hit: key, file, program from binary, kernel":
#     "program from binary" is clCreateProgramWithBinary + clBuildProgram of
#     the binary, which bounds the ratio from the driver's side);
#  3. `ruda bench copy --device cuda:0`: read_4B_latency (and the rest of
#     the copy group);
#  4. unless --no-kernels, `ruda bench kernels` on cuda:0 and on the NVIDIA
#     OpenCL device (portable against CUDA C / against OpenCL C);
#  5. with --mpi (and an mpirun), `mpirun -np 2 ruda bench comm` confined to
#     two cores (taskset -c 0,1, like the 2-core CI machine), alternating
#     RUDA_MPI_INLINE_BYTES=1048576 (large CPU operations queued on the
#     device worker, as before) and unset (on the caller's thread): the
#     all-reduce and broadcast of 64 MiB against MPI called directly.
#
# Writes to $OUT (or ./gpu-out):
#   opencl_perf_env.txt      GPU, driver, OpenCL devices as ruda lists them
#   opencl_perf_runs.txt     every `--json` line, each block headed
#                            "## run R group G device D"
#   opencl_perf_stderr.txt   progress lines (parts tables, compile breakdown)
# and prints a summary: each case's ratios over the runs.
set -uo pipefail
source "$(dirname "$0")/gpu_common.sh"
RUNS=3
KERNELS=1
MPI=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    --no-kernels) KERNELS=0 ;;
    --mpi) MPI=1 ;;
  esac
  shift
done
gpu_build_tools opencl_perf_build.log
RUDA=build-gpu/tools/ruda
{
  echo "== date"; date -u
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
  echo "== ruda devices"; "$RUDA" devices 2>&1
} > "$OUT/opencl_perf_env.txt"
cat "$OUT/opencl_perf_env.txt"
# The NVIDIA OpenCL device: the first opencl:N whose name says NVIDIA or
# names the GPU (PoCL may be installed too).
OCL="$("$RUDA" devices 2>/dev/null | grep -Ei '^ +opencl:[0-9]+ +.*(nvidia|h100|h200|a100|tesla|geforce)' |
  head -1 | awk '{print $1}')"
if [ -z "$OCL" ]; then
  echo "no NVIDIA OpenCL device listed by 'ruda devices': the OpenCL cases are skipped"
fi
echo "NVIDIA OpenCL device: ${OCL:-none}"

: > "$OUT/opencl_perf_runs.txt"
: > "$OUT/opencl_perf_stderr.txt"
bench() { # run group device [env...]
  local run="$1" group="$2" dev="$3"
  shift 3
  echo "## run $run group $group device $dev" >> "$OUT/opencl_perf_runs.txt"
  echo "## run $run group $group device $dev" >> "$OUT/opencl_perf_stderr.txt"
  env "$@" timeout 300 "$RUDA" bench "$group" --device "$dev" --json \
    >> "$OUT/opencl_perf_runs.txt" 2>> "$OUT/opencl_perf_stderr.txt"
  echo "run $run $group $dev rc=$?"
}
for run in $(seq 1 "$RUNS"); do
  if [ -n "$OCL" ]; then
    bench "$run" launch "$OCL" RUDA_BENCH_PARTS=1
    bench "$run" compile "$OCL"
  fi
  bench "$run" copy cuda:0
  if [ "$KERNELS" = 1 ]; then
    bench "$run" kernels cuda:0
    [ -n "$OCL" ] && bench "$run" kernels "$OCL"
  fi
done
if [ "$MPI" = 1 ] && command -v mpirun > /dev/null; then
  root=()
  [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  for run in $(seq 1 "$RUNS"); do
    for mode in queued_above_1MiB caller_thread; do
      inline=""
      [ "$mode" = queued_above_1MiB ] && inline=1048576
      echo "## run $run group comm device cpu-np2-$mode" >> "$OUT/opencl_perf_runs.txt"
      RUDA_MPI_INLINE_BYTES="$inline" timeout 400 taskset -c 0,1 mpirun "${root[@]}" --oversubscribe \
        -np 2 -x RUDA_MPI_INLINE_BYTES "$RUDA" bench comm --json \
        >> "$OUT/opencl_perf_runs.txt" 2>> "$OUT/opencl_perf_stderr.txt"
      echo "run $run comm $mode rc=$?"
    done
  done
fi
echo "== parts and compile breakdown (stderr)"
grep -hE '^## |parts|per disk hit|disk hits' "$OUT/opencl_perf_stderr.txt" || true
echo "== ratios over the runs (ruda / baseline; see 'better' for the direction)"
python3 - "$OUT/opencl_perf_runs.txt" <<'PY'
import collections, json, sys
rows = collections.defaultdict(list)
dev = "?"
for line in open(sys.argv[1]):
    if line.startswith("## "):
        dev = line.split()[-1]
        continue
    try:
        o = json.loads(line)
    except ValueError:
        continue
    rows[(dev, o["bench"], o["case"])].append(o)
for (d, b, c), v in sorted(rows.items()):
    r = [o["ratio"] for o in v if o.get("ratio") is not None]
    span = "%.3f-%.3f" % (min(r), max(r)) if r else "n/a"
    print("%-10s %-8s %-34s ratios %s (%s better) [%s] ruda %s %s" % (
        d, b, c, " ".join("%.3f" % x for x in r), v[0]["better"], span,
        " ".join("%.4g" % o["ruda"] for o in v), v[0]["unit"]))
PY
exit 0
