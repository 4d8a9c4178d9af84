#!/usr/bin/env bash
# Prints why each skipped test was skipped, one line per test, after a
# CTest run (scripts/setup_test.sh calls it):
#
#   ctest_skip_reasons.sh <ctest's output> <Testing/Temporary/LastTest.log>
#
# The skipped tests are those CTest lists as "(Skipped)" in its output; a
# reason is a line of the test's own output that says it skipped ("SKIP
# name: reason", "...: skipped"), or, when that line is followed by "Caused
# by:", the cause's first line; the reason given most often is printed
# (one case may skip for a reason of its own). Prints nothing when no test
# was skipped.
set -uo pipefail
out="$1"
last="$2"
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]\{1,\} - \(.*\) (Skipped)$/\1/p' "$out")
[ ${#skipped[@]} -eq 0 ] && exit 0
echo
echo "Skipped tests and why (${#skipped[@]}):"
for name in "${skipped[@]}"; do
  reason="$(awk -v name="$name" '
    function note(r) { if (!(r in count)) order[n++] = r; count[r]++ }
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { intest = (substr($0, index($0, "Test: ") + 6) == name); inout = 0; next }
    !intest { next }
    /^Output:$/ { inout = 1; next }
    !inout || /^-+$/ { next }
    want_cause { want_cause = 0; sub(/^[[:space:]]+/, ""); note($0); next }
    pending != "" {
      if ($0 == "Caused by:") { pending = ""; want_cause = 1; next }
      note(pending)
      pending = ""
    }
    /^<end of output>$/ { intest = 0; inout = 0; next }
    /^[0-9]+ passed, [0-9]+ failed/ { next }
    /^SKIP/ || /[Ss]kip/ { pending = $0 }
    END {
      if (pending != "") note(pending)
      best = ""
      for (i = 0; i < n; i++) if (best == "" || count[order[i]] > count[best]) best = order[i]
      print best
    }' "$last" 2>/dev/null)"
  reason="${reason#SKIP }"
  reason="${reason#SKIP: }"
  # the source position the harness appends says nothing to a reader
  reason="$(printf '%s' "$reason" | sed 's/ ([^()]*\.[ch]:[0-9]*)$//')"
  [ -n "$reason" ] || reason="(no reason printed; run ctest -V -R '^$name\$')"
  if [ ${#reason} -gt 160 ]; then reason="${reason:0:157}..."; fi
  printf '  %s: %s\n' "$name" "$reason"
done
