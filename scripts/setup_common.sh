# Shared by scripts/setup_demo.sh, scripts/setup_test.sh and .ci/run
# (sourced, not run). Finds the tools a build needs and installs the
# missing Debian packages when running as root; otherwise prints the exact
# command to run and stops.

RUDA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# ruda_require "command:package" ... : every command must be on PATH.
ruda_require() {
  local missing=() pair cmd pkg
  for pair in "$@"; do
    cmd="${pair%%:*}"
    pkg="${pair#*:}"
    if ! command -v "$cmd" >/dev/null 2>&1; then
      case " ${missing[*]} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0

  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ruda: missing tools; install the packages that provide: ${missing[*]}" >&2
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "ruda: missing packages. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    return 1
  fi
  echo "ruda: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq "${missing[@]}" >&2 || {
    echo "ruda: apt-get install failed" >&2
    return 1
  }
}

# The build tools every configuration needs (C and C++ compilers: the
# project also checks that public headers compile as C++).
ruda_require_build_tools() {
  ruda_require cmake:cmake ninja:ninja-build gcc:gcc g++:g++ || return 1
  local v
  v="$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')"
  if [ "$(printf '%s\n3.25\n' "$v" | sort -V | head -n1)" != "3.25" ]; then
    echo "ruda: CMake >= 3.25 is required (found $v)" >&2
    return 1
  fi
}

# ruda_configure <build dir> [cmake args...]: configures once (Ninja).
ruda_configure() {
  local dir="$1"
  shift
  if [ -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$RUDA_ROOT" -B "$dir" "$@"
  else
    cmake -S "$RUDA_ROOT" -B "$dir" -G Ninja "$@"
  fi
}

ruda_jobs() { nproc 2>/dev/null || echo 2; }
