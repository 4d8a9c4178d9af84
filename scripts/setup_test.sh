#!/usr/bin/env bash
# Builds ruda and every test, then runs them with CTest; then lists each
# skipped test with the reason it printed (scripts/ctest_skip_reasons.sh),
# and CTest's summary line ("100% tests passed, 0 tests failed out of N")
# is the last line printed (repeated after those lists, if any).
# Exit status: 0 when every test passed; non-zero when one failed, when no
# test was found, or when the run outlived RUDA_CTEST_TIMEOUT seconds (if
# set; .ci/run sets it).
#   bash scripts/setup_test.sh [extra ctest options, e.g. -L unit]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_common.sh"
ruda_require_test_tools
ruda_configure "$RUDA_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$RUDA_ROOT/build" -j "$(ruda_jobs)"
cd "$RUDA_ROOT/build"
log="$RUDA_ROOT/build/ctest-output.log"
set +e
limit=()
[ -n "${RUDA_CTEST_TIMEOUT:-}" ] && limit=(timeout -k 10 "$RUDA_CTEST_TIMEOUT")
"${limit[@]}" ctest --no-tests=error --output-on-failure -j "$(ruda_jobs)" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary="$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)"
reasons="$(bash "$RUDA_ROOT/scripts/ctest_skip_reasons.sh" "$log" \
  "$RUDA_ROOT/build/Testing/Temporary/LastTest.log")"
if [ -n "$reasons" ]; then
  printf '%s\n' "$reasons"
  printf '%s\n' "$reasons" >>"$log"
fi
if [ -n "$summary" ] && [ "$(tail -n 1 "$log")" != "$summary" ]; then
  echo
  echo "$summary"
fi
exit "$status"
