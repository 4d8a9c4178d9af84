#!/usr/bin/env bash
# A/B on the GPU machine: the cuda:0 launch and copy benchmarks of an older
# tree against this one, alternated in the same call (timings compare only
# on the same machine). The older tree travels as an ignored folder:
#
#   here:   mkdir -p build-base-src && git archive REV | tar -x -C build-base-src
#   device: run `bash scripts/gpu_ab.sh` with carry ["build-base-src"]
#
#   scripts/gpu_ab.sh [--rounds N] [--groups "launch copy"] [--base DIR]
#
# Writes to $OUT (or ./gpu-out): ab.json (every case, tagged "tree":
# "base"|"new" and its round), ab_summary.txt (per case: the medians of
# ruda's figure on each side, new/base, and the ratios of every run).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
ROUNDS=3
GROUPS_="launch copy"
BASE=build-base-src
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --groups) GROUPS_="$2"; shift ;;
    --base) BASE="$2"; shift ;;
  esac
  shift
done
[ -f "$BASE/CMakeLists.txt" ] || { echo "no older tree in $BASE (see the header)"; exit 2; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
(cmake -S "$BASE" -B "$BASE/b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  ninja -C "$BASE/b" tools/ruda) > "$OUT/ab_build_base.log" 2>&1 &
(cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  ninja -C build-gpu tools/ruda) > "$OUT/ab_build_new.log" 2>&1
wait
for r in $(seq 1 "$ROUNDS"); do
  for g in $GROUPS_; do
    for t in base new; do
      bin=build-gpu/tools/ruda
      [ "$t" = base ] && bin="$BASE/b/tools/ruda"
      RUDA_CACHE_DIR="/tmp/ruda-ab-cache-$t" timeout 120 "$bin" bench "$g" --device cuda:0 --json \
        2>>"$OUT/ab_stderr.txt" | sed "s/^{/{\"tree\":\"$t\",\"round\":$r,/" >>"$OUT/ab.json"
    done
  done
done
python3 - "$OUT/ab.json" <<'PY' | tee "$OUT/ab_summary.txt"
import collections, json, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('{'):
        j = json.loads(line)
        d[(j['case'], j['tree'])].append(j)
for case in sorted({c for c, _ in d}):
    b = [x['ruda'] for x in d[(case, 'base')]]
    n = [x['ruda'] for x in d[(case, 'new')]]
    if b and n:
        print(f"{case:30s} base {statistics.median(b):10.3f} new {statistics.median(n):10.3f} "
              f"new/base {statistics.median(n) / statistics.median(b):.3f} ratios base "
              f"{[round(x['ratio'], 3) for x in d[(case, 'base')]]} new "
              f"{[round(x['ratio'], 3) for x in d[(case, 'new')]]}")
PY
