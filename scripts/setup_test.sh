#!/usr/bin/env bash
# Builds ruda and every test, then runs them with CTest; CTest's summary
# is the last thing printed. Exit status: 0 when every test passed.
#   bash scripts/setup_test.sh [extra ctest options, e.g. -L unit]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_common.sh"
ruda_require_build_tools
ruda_configure "$RUDA_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$RUDA_ROOT/build" -j "$(ruda_jobs)"
cd "$RUDA_ROOT/build"
exec ctest --output-on-failure -j "$(ruda_jobs)" "$@"
