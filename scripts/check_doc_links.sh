#!/usr/bin/env bash
# Every link in the documentation leads somewhere (CTest test
# docs_links_resolve, label "docs").
#
#   check_doc_links.sh [SOURCE_DIR]
#
# Checks, in the source tree (build directories left out):
# - each relative Markdown link `[text](path)` or `[text](path#anchor)` of a
#   .md file names a file or folder that exists, relative to that .md file;
# - each mention of `docs/<name>.md` or `bench/results/<file>` in any source,
#   header, script, CMake or Markdown file names a file that exists,
#   relative to the top of the tree.
# Prints every broken one as FILE:LINE: target, and exits 1 if there is one.
set -uo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root" || exit 2

files() {
  find . \( -name 'build*' -o -name .git -o -name Testing -o -name _deps \) -prune -o \
    -type f \( "$@" \) -print | sed 's|^\./||' | sort
}

bad=0
checked=0

# 1. Markdown links, relative to the file.
while IFS= read -r md; do
  dir="$(dirname "$md")"
  # one "LINE<TAB>TARGET" per link; code spans and fenced blocks are skipped
  while IFS=$'\t' read -r line target; do
    [ -n "$target" ] || continue
    case "$target" in
      http:*|https:*|mailto:*|'#'*|'<'*) continue ;;
    esac
    path="${target%%#*}"
    [ -n "$path" ] || continue
    checked=$((checked + 1))
    if [ ! -e "$dir/$path" ]; then
      echo "$md:$line: link to $target: no such file"
      bad=1
    fi
  done < <(awk '
    /^```/ { fenced = !fenced; next }
    fenced { next }
    {
      s = $0
      gsub(/`[^`]*`/, "", s)
      while (match(s, /\]\([^) ]+\)/)) {
        printf "%d\t%s\n", NR, substr(s, RSTART + 2, RLENGTH - 3)
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$md")
done < <(files -name '*.md')

# 2. Paths of documents and results files named in text, from the top.
while IFS= read -r f; do
  while IFS=: read -r line target; do
    checked=$((checked + 1))
    if [ ! -e "$target" ]; then
      echo "$f:$line: names $target: no such file"
      bad=1
    fi
  done < <(grep -noE '(docs/[A-Za-z0-9_/.-]+\.md|bench/results/[A-Za-z0-9_.-]+\.(txt|md|json))' "$f" |
           awk -F: '{print $1 ":" $2}')
done < <(files -name '*.md' -o -name '*.c' -o -name '*.h' -o -name '*.sh' -o \
  -name '*.cmake' -o -name 'CMakeLists.txt' -o -name '*.toml' -o -name '*.py' -o -name run)

if [ "$bad" = 0 ]; then
  echo "$checked links and named paths resolve"
fi
exit "$bad"
