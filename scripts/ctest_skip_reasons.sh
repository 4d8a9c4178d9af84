#!/usr/bin/env bash
# Prints why each skipped test was skipped, one line per test, after a
# CTest run (scripts/setup_test.sh calls it):
#
#   ctest_skip_reasons.sh <ctest's output> <Testing/Temporary/LastTest.log>
#
# The skipped tests are those CTest lists as "(Skipped)" in its output; the
# reason is the first line of the test's own output that says it skipped
# ("SKIP name: reason", "...: skipped"), or, when that line is followed by
# "Caused by:", the cause's first line. Prints nothing when no test was
# skipped.
set -uo pipefail
out="$1"
last="$2"
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]\{1,\} - \(.*\) (Skipped)$/\1/p' "$out")
[ ${#skipped[@]} -eq 0 ] && exit 0
echo
echo "Skipped tests and why (${#skipped[@]}):"
for name in "${skipped[@]}"; do
  reason="$(awk -v name="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { intest = (substr($0, index($0, "Test: ") + 6) == name); inout = 0; next }
    !intest { next }
    /^Output:$/ { inout = 1; next }
    /^<end of output>$/ { intest = 0; next }
    !inout || /^-+$/ { next }
    want_cause { sub(/^[[:space:]]+/, ""); print; exit }
    /^SKIP/ || /[Ss]kip/ {
      line = $0
      if ((getline nxt) > 0 && nxt == "Caused by:") { want_cause = 1; next }
      print line; exit
    }' "$last" 2>/dev/null)"
  reason="${reason#SKIP }"
  reason="${reason#SKIP: }"
  # the source position the harness appends says nothing to a reader
  reason="$(printf '%s' "$reason" | sed 's/ ([^()]*\.[ch]:[0-9]*)$//')"
  [ -n "$reason" ] || reason="(no reason printed; run ctest -V -R '^$name\$')"
  if [ ${#reason} -gt 200 ]; then reason="${reason:0:197}..."; fi
  printf '  %s: %s\n' "$name" "$reason"
done
