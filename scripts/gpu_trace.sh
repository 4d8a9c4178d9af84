#!/usr/bin/env bash
# The timeline trace on the GPU machine's devices: cuda:0 (slices timed by
# CUDA events) and the NVIDIA OpenCL device (timed by markers on its
# profiling queue), both bracketed by the server layer's operation
# pipeline (src/server/stream_op.h). After a build (reuses build-gpu/ when
# another gpu_*.sh script made it):
#
#   scripts/gpu_trace.sh [DEVICE ...]     (default: cuda:0 and the NVIDIA
#                                         OpenCL device)
#
#  1. the conformance suite's trace test on each device (every documented
#     category and counter, valid JSON);
#  2. `ruda demo --trace` on each device, and per slice (category, name):
#     how many, the median duration in us, the bytes seen.
#
# Writes to $OUT (or ./gpu-out): trace_<device>.json, trace_summary.txt.
# Exits 1 when a test fails, a category is missing, or every kernel slice
# of a device lasts 0 us (its timer did not time anything).
set -uo pipefail
source "$(dirname "$0")/gpu_common.sh"
gpu_build_tools gpu_trace_build.log
RUDA=build-gpu/tools/ruda
DEVICES=("$@")
if [ ${#DEVICES[@]} -eq 0 ]; then
  DEVICES=(cuda:0 $("$RUDA" devices 2>/dev/null |
    grep -Ei '^ +opencl:[0-9]+ +.*(nvidia|h100|h200|a100|tesla|geforce)' | head -1 | awk '{print $1}'))
fi
rc=0
: > "$OUT/trace_summary.txt"
for dev in "${DEVICES[@]}"; do
  echo "== $dev" | tee -a "$OUT/trace_summary.txt"
  RUDA_CTS_DEVICE="$dev" RUDA_TEST_TMP="$OUT" timeout 120 build-gpu/tests/cts_test_cts_trace \
    2>&1 | tail -3 | tee -a "$OUT/trace_summary.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  file="$OUT/trace_${dev/:/_}.json"
  timeout 300 "$RUDA" demo --device "$dev" --trace "$file" > "$OUT/trace_demo_${dev/:/_}.txt" 2>&1 ||
    { echo "ruda demo failed on $dev"; rc=1; }
  python3 - "$file" <<'PY' | tee -a "$OUT/trace_summary.txt" || rc=1
import collections, json, statistics, sys
slices = collections.defaultdict(list)
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("ph") == "X":
        slices[(e["cat"], e["name"])].append((e.get("dur", 0), (e.get("args") or {}).get("bytes")))
for (cat, name), v in sorted(slices.items()):
    sizes = sorted({b for _, b in v if b})
    print(f"  {cat:10s} {name[:40]:40s} {len(v):5d}  median {statistics.median(d for d, _ in v):10.1f} us"
          f"  bytes {sizes[:6]}")
cats = {c for c, _ in slices}
missing = {"kernel", "copy", "sync", "alloc"} - cats
kernels = [d for (c, _), v in slices.items() if c == "kernel" for d, _ in v]
if missing or not any(kernels):
    print(f"  FAIL: missing {sorted(missing)}; kernel slices timed: {any(kernels)}")
    sys.exit(1)
PY
done
exit $rc
