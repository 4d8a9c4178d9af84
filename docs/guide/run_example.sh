#!/usr/bin/env bash
# Runs one guide example and checks its output (CTest, label "guide"):
#
#   run_example.sh <program> <expected file> [--file PATH TEXT]... [-- ARG...]
#
# ARGs after "--" are passed to the program.
# The program must exit 0 (77 means skip: a device it needs is absent) and
# print, in order, every line of the expected file (other lines may come in
# between). An expected line ending in "..." matches any output line that
# starts with the rest. Each --file PATH TEXT checks afterwards that PATH
# exists and contains TEXT.
set -uo pipefail
program="$1"
expected="$2"
shift 2
files=()
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --file) files+=("$2" "$3"); shift 3 ;;
    --) shift; args=("$@"); break ;;
    *) echo "guide example: unknown option $1" >&2; exit 2 ;;
  esac
done
out="$("$program" "${args[@]}" 2>&1)"
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 77 ]; then
  exit 77
fi
if [ "$rc" -ne 0 ]; then
  echo "guide example: $program exited $rc" >&2
  exit 1
fi
missing="$(printf '%s\n' "$out" | awk -v want_file="$expected" '
  BEGIN {
    n = 0
    while ((getline line < want_file) > 0) want[n++] = line
    i = 0
  }
  i < n {
    w = want[i]
    if (w ~ /\.\.\.$/) {
      p = substr(w, 1, length(w) - 3)
      if (substr($0, 1, length(p)) == p) i++
    } else if ($0 == w) {
      i++
    }
  }
  END { if (i < n) print want[i] }')"
if [ -n "$missing" ]; then
  echo "guide example: expected, in order, every line of $expected; missing:" >&2
  echo "  $missing" >&2
  exit 1
fi
for ((k = 0; k < ${#files[@]}; k += 2)); do
  path="${files[k]}"
  text="${files[k + 1]}"
  if ! grep -qF -- "$text" "$path" 2>/dev/null; then
    echo "guide example: $path does not exist or does not contain '$text'" >&2
    exit 1
  fi
done
exit 0
