#!/usr/bin/env bash
# Builds the `ruda` command and runs its demo on the CPU backend: a vector
# add, a shared-memory reduction and a tiled matrix multiply, each checked,
# then the memory usage report and the profiling summary.
#   bash scripts/setup_demo.sh [demo options, e.g. --device cuda:0]
# Exit status: the demo's (0 = every check passed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_common.sh"
ruda_require_build_tools
ruda_configure "$RUDA_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$RUDA_ROOT/build" --target ruda_cmd -j "$(ruda_jobs)"
echo
exec "$RUDA_ROOT/build/tools/ruda" demo "$@"
