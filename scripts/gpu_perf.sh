#!/usr/bin/env bash
# The CUDA performance cases on the GPU machine, several runs each, after a
# build (reuses build-gpu/ when scripts/gpu_check.sh made it):
#
#   scripts/gpu_perf.sh [--runs N] [--groups "launch memory copy compile graph"] [--parts]
#
# --parts adds the round-trip decomposition (RUDA_BENCH_PARTS=1: medians of
# the driver calls and ruda calls a launch, sync and small read are made of)
# to the launch group's progress lines. Writes to $OUT (or ./gpu-out):
#   perf_runs.txt     `ruda bench <group> --device cuda:0 --json` of every run,
#                     each block headed "## run N group G"
#   perf_stderr.txt   progress lines (the parts table among them)
set -uo pipefail
source "$(dirname "$0")/gpu_common.sh"
RUNS=3
GROUPS_="launch memory copy compile graph"
PARTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    --groups) GROUPS_="$2"; shift ;;
    --parts) PARTS=1 ;;
  esac
  shift
done
gpu_build_tools perf_build.log
for run in $(seq 1 "$RUNS"); do
  for g in $GROUPS_; do
    env_parts=()
    [ "$PARTS" = 1 ] && [ "$g" = launch ] && [ "$run" = 1 ] && env_parts=(RUDA_BENCH_PARTS=1)
    echo "## run $run group $g" >> "$OUT/perf_runs.txt"
    env "${env_parts[@]}" timeout 180 build-gpu/tools/ruda bench "$g" --device cuda:0 --json \
      >> "$OUT/perf_runs.txt" 2>> "$OUT/perf_stderr.txt"
    echo "run $run $g rc=$?"
  done
done
grep -h 'parts:' "$OUT/perf_stderr.txt" || true
python3 - "$OUT" <<'PY'
import glob, json, os, sys, collections
rows = collections.defaultdict(list)
for f in [os.path.join(sys.argv[1], "perf_runs.txt")]:
    for line in open(f):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        rows[(o["bench"], o["case"])].append((o["ruda"], o["baseline"], o["ratio"], o["unit"]))
for (b, c), v in sorted(rows.items()):
    ratios = " ".join("%.3f" % r[2] if r[2] is not None else "nan" for r in v)
    print("%-8s %-40s %s ruda %s | ratios %s" % (b, c, v[0][3], " ".join("%.4g" % r[0] for r in v), ratios))
PY
