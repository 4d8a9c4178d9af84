# Shared by scripts/setup_demo.sh, scripts/setup_test.sh and .ci/run
# (sourced, not run). Checks the Debian packages a build needs and installs
# the missing ones with apt-get when running as root; otherwise prints the
# exact command to run.
#
# Packages (Debian 12 names):
#   demo   cmake ninja-build gcc libc6-dev libhwloc-dev
#   tests  the demo's + g++ (the public headers are also compiled as C++),
#          pkg-config, doxygen, Open MPI, PoCL and the OpenCL ICD loader
#   CI     the tests' + clang and its sanitizer runtimes (TSan, libFuzzer)
# hwloc and everything the tests add are optional: without them the build
# still works and the tests that need them skip, saying why.

RUDA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

RUDA_PACKAGES_BUILD=(cmake ninja-build gcc libc6-dev)
RUDA_PACKAGES_DEMO=(libhwloc-dev)
RUDA_PACKAGES_TEST=(libhwloc-dev g++ pkg-config doxygen openmpi-bin libopenmpi-dev
  pocl-opencl-icd ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-headers)
RUDA_PACKAGES_CI=(clang libclang-rt-dev)

# The packages of "$@" that dpkg does not list as installed.
ruda_missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
      printf '%s\n' "$p"
  done
}

# ruda_install_packages required|optional package...: installs the missing
# packages as root; otherwise prints the command. Returns 1 only when a
# required package is missing and could not be installed.
ruda_install_packages() {
  local need="$1"
  shift
  if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: nothing to check here; CMake says what it cannot find.
    return 0
  fi
  local missing=()
  mapfile -t missing < <(ruda_missing_packages "$@")
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    if [ "$need" = required ]; then
      echo "ruda: missing packages. Install them with:" >&2
    else
      echo "ruda: optional packages are missing (the tests that need them will skip)." \
        "Install them with:" >&2
    fi
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    [ "$need" = required ] && return 1
    return 0
  fi
  echo "ruda: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "${RUDA_APT_UPDATED:-}" ]; then
    apt-get update -qq >&2 && RUDA_APT_UPDATED=1
  fi
  if ! apt-get install -y -qq "${missing[@]}" >&2; then
    echo "ruda: apt-get install ${missing[*]} failed" >&2
    [ "$need" = required ] && return 1
  fi
  return 0
}

# ruda_require "command:package" ...: every command must be on PATH; the
# missing ones' packages are installed as above (required).
ruda_require() {
  local pair cmd pkgs=()
  for pair in "$@"; do
    cmd="${pair%%:*}"
    command -v "$cmd" >/dev/null 2>&1 || pkgs+=("${pair#*:}")
  done
  [ ${#pkgs[@]} -eq 0 ] && return 0
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "ruda: missing tools; install the packages that provide: ${pkgs[*]}" >&2
    return 1
  fi
  ruda_install_packages required "${pkgs[@]}"
}

ruda_check_cmake_version() {
  local v
  v="$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')"
  if [ "$(printf '%s\n3.25\n' "$v" | sort -V | head -n1)" != "3.25" ]; then
    echo "ruda: CMake >= 3.25 is required (found $v)" >&2
    return 1
  fi
}

# What the library and the demo need (a C compiler only).
ruda_require_build_tools() {
  ruda_install_packages required "${RUDA_PACKAGES_BUILD[@]}" || return 1
  ruda_require cmake:cmake ninja:ninja-build cc:gcc || return 1
  ruda_install_packages optional "${RUDA_PACKAGES_DEMO[@]}"
  ruda_check_cmake_version
}

# What the whole test suite needs.
ruda_require_test_tools() {
  ruda_require_build_tools || return 1
  ruda_install_packages optional "${RUDA_PACKAGES_TEST[@]}"
}

# What .ci/run needs: every test's packages are required there, so that a
# CI machine runs every test instead of skipping some.
ruda_require_ci_tools() {
  ruda_require_build_tools || return 1
  ruda_install_packages required "${RUDA_PACKAGES_TEST[@]}" "${RUDA_PACKAGES_CI[@]}" || return 1
  ruda_require clang:clang
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
