#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) against the ruda of a
# build tree: a virtual environment in BUILD/python-venv (with the system's
# site packages, so what is installed is reused), what the tests need
# installed into it with pip when missing (pytest, numpy; cffi, setuptools
# and wheel to build), `pip install ./python` without build isolation
# (works offline once those are there), then pytest.
#
#   bash scripts/python_test.sh [BUILD]     (default: build/; CTest: python_tests)
#
# Exit 77 (a skip, with the reason) when Python, venv or pip cannot provide
# what the tests need (no python3, pip offline); 1 when the package does not
# build or a test fails.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null 2>&1 || { echo "SKIP python_tests: no $PY on PATH"; exit 77; }
[ -e "$BUILD/libruda.so" ] || { echo "FAILED: $BUILD/libruda.so is not built"; exit 1; }
VENV="$BUILD/python-venv"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv --system-site-packages "$VENV" >/dev/null 2>&1 ||
    { echo "SKIP python_tests: $PY -m venv failed (install the venv module)"; exit 77; }
fi
VPY="$VENV/bin/python"
missing=()
for m in pytest numpy cffi setuptools wheel; do
  "$VPY" -c "import $m" 2>/dev/null || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with pip"
  timeout 300 "$VPY" -m pip install -q --disable-pip-version-check "${missing[@]}" ||
    { echo "SKIP python_tests: pip cannot install ${missing[*]} (offline?)"; exit 77; }
fi
RUDA_INCLUDE_DIR="$ROOT/include" RUDA_LIBRARY_DIR="$BUILD" \
  timeout 300 "$VPY" -m pip install -q --disable-pip-version-check --no-build-isolation \
  --no-deps --force-reinstall "$ROOT/python" ||
  { echo "FAILED: pip install ./python"; exit 1; }
# From the build tree, so that python/ruda (the sources) does not shadow
# the installed package.
cd "$BUILD" && exec "$VPY" -m pytest -q -p no:cacheprovider -rs "$ROOT/python/tests"
