#!/usr/bin/env bash
# Keeps the guide's quoted code identical to the files it quotes (CTest
# test guide_quotes_match_files, label "guide").
#
#   check_quotes.sh [--update] <guide dir>
#
# In a chapter, a line
#   <!-- include: examples/handles.c -->            the whole file
#   <!-- include: examples/handles.c#views -->      one region of it
# is followed by a fenced code block holding that text. A region is the
# lines between a line containing "guide-begin: views" and one containing
# "guide-end: views", without those two lines and with their common
# indentation removed. --update rewrites the blocks from the files.
set -uo pipefail
update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
dir="$1"
status=0
for md in "$dir"/*.md; do
  new="$(mktemp)"
  awk -v dir="$dir" -v md="$md" -v update="$update" '
    function region(path, name,    line, lines, n, on, i, ind, min, r) {
      n = 0; on = (name == ""); min = -1
      while ((getline line < path) > 0) {
        if (name != "" && index(line, "guide-begin: " name) && !on) { on = 1; continue }
        if (name != "" && index(line, "guide-end: " name) && on) { on = 0; break }
        if (on) {
          lines[++n] = line
          if (line ~ /[^ ]/) {
            match(line, /^ */); ind = RLENGTH
            if (min < 0 || ind < min) min = ind
          }
        }
      }
      close(path)
      if (n == 0) { printf "%s: %s%s%s is empty or missing\n", md, path, (name == "" ? "" : "#"), name > "/dev/stderr"; bad = 1 }
      if (min < 0) min = 0
      r = ""
      for (i = 1; i <= n; i++) r = r substr(lines[i], min + 1) "\n"
      return r
    }
    {
      print_line = 1
      if (state == 0 && match($0, /^<!-- include: [^ ]+ -->$/)) {
        spec = substr($0, 15, length($0) - 18)
        name = ""
        if (index(spec, "#")) { name = substr(spec, index(spec, "#") + 1); spec = substr(spec, 1, index(spec, "#") - 1) }
        want = region(dir "/" spec, name)
        label = spec (name == "" ? "" : "#" name)
        state = 1
      } else if (state == 1) {
        if ($0 ~ /^```/) { state = 2; got = ""; print; print_line = 0; fence = $0 }
        else if ($0 != "") { printf "%s: no code block after the include of %s\n", md, label > "/dev/stderr"; bad = 1; state = 0 }
      } else if (state == 2) {
        if ($0 == "```") {
          if (got != want) {
            if (!update) { printf "%s: the block quoting %s differs from the file (run docs/guide/check_quotes.sh --update %s)\n", md, label, dir > "/dev/stderr"; bad = 1 }
          }
          if (update) printf "%s", want
          state = 0
        } else {
          got = got $0 "\n"
          if (update) print_line = 0
        }
      }
      if (print_line) print
    }
    END { exit bad }
  ' "$md" >"$new"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    status=1
  elif [ "$update" = 1 ] && ! cmp -s "$new" "$md"; then
    cat "$new" >"$md"
    echo "updated $md"
  fi
  rm -f "$new"
done
exit "$status"
