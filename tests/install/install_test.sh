#!/usr/bin/env bash
# The install tests (CTest label "install"), one step per call:
#
#   install_test.sh tree         <build dir> <work dir> <version> <has command: 0|1>
#   install_test.sh find_package <work dir> <consumer src> <version> <cc> <generator>
#   install_test.sh pkg_config   <work dir> <consumer src> <version> <cc>
#   install_test.sh mpi          <work dir> <consumer src> <version> <mpicc> <mpiexec> [flag]...
#
# `tree` installs the build into <work dir>/prefix (cmake --install) and
# checks the layout and the installed `ruda` command; the other two build
# tests/install/consumer against that prefix, as another project would,
# and run the result: find_package with the given CMake generator ("Ninja",
# "Unix Makefiles"), the consumer's portable kernel embedded by the
# installed ruda_add_kernels(); pkg_config with `--libs` and with
# `--static --libs` (libruda.so, and libruda.a). `mpi` builds
# consumer/mpi_consumer.c with the MPI compiler wrapper, once with
# `-lruda_mpi -lruda` as ruda/mpi.h says and once with pkg-config's
# ruda_mpi, and runs each on 2 ranks (mpiexec and its flags). Exit 77
# (skip) when pkg-config, or the generator's build tool, is not installed.
set -euo pipefail
step="$1"
shift

fail() {
  echo "install test: $*" >&2
  exit 1
}

# The program must run against the installed library, not the build tree's.
check_links_installed() {
  local exe="$1" prefix="$2"
  local lib
  lib="$(ldd "$exe" | awk '/libruda\.so/ {print $3}')"
  case "$lib" in
    "$prefix"/*) ;;
    *) fail "$exe loads libruda from '${lib:-nowhere}', not from $prefix" ;;
  esac
}

case "$step" in
  tree)
    build="$1" work="$2" version="$3" has_cmd="$4"
    prefix="$work/prefix"
    rm -rf "$prefix"
    mkdir -p "$work"
    cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
      { cat "$work/install.log"; fail "cmake --install failed"; }
    libdir="$(dirname "$(find "$prefix" -name "libruda.so.$version" | head -n 1)")"
    [ -n "$libdir" ] && [ "$libdir" != "." ] || fail "no libruda.so.$version under $prefix"
    for f in include/ruda/ruda.h include/ruda/export.h include/ruda/version.h; do
      [ -e "$prefix/$f" ] || fail "$prefix/$f is missing"
    done
    for f in libruda.so libruda.a cmake/ruda/ruda-config.cmake \
      cmake/ruda/ruda-config-version.cmake cmake/ruda/ruda-targets.cmake pkgconfig/ruda.pc; do
      [ -e "$libdir/$f" ] || fail "$libdir/$f is missing"
    done
    soname="$(objdump -p "$libdir/libruda.so.$version" | awk '/SONAME/ {print $2}')"
    major="${version%%.*}"
    rest="${version#*.}"
    minor="${rest%%.*}"
    if [ "$major" = 0 ]; then want="libruda.so.0.$minor"; else want="libruda.so.$major"; fi
    [ "$soname" = "$want" ] || fail "SONAME is '$soname', expected $want"
    [ -e "$libdir/$soname" ] || fail "no $soname link in $libdir"
    if [ "$has_cmd" = 1 ]; then
      out="$("$prefix/bin/ruda" --version)"
      [ "$out" = "ruda $version" ] || fail "installed 'ruda --version' printed '$out'"
      "$prefix/bin/ruda" devices >"$work/devices.txt" || fail "installed 'ruda devices' failed"
      grep -q '^  cpu:0 ' "$work/devices.txt" || fail "installed 'ruda devices' lists no cpu:0"
    fi
    echo "installed into $prefix: headers, libruda.so ($soname), libruda.a, bin/ruda," \
      "the CMake package and ruda.pc"
    ;;

  find_package)
    work="$1" src="$2" version="$3" cc="$4" generator="$5"
    prefix="$work/prefix"
    case "$generator" in
      Ninja) tool=ninja out="$work/find_package_ninja" ;;
      "Unix Makefiles") tool=make out="$work/find_package_make" ;;
      *) tool="" out="$work/find_package_other" ;;
    esac
    if [ -n "$tool" ] && ! command -v "$tool" >/dev/null 2>&1; then
      echo "$tool is not installed: the $generator consumer is skipped"
      exit 77
    fi
    rm -rf "$out"
    # A copy of the project, so that touching its kernel file below does
    # not disturb the other generator's test running beside this one.
    mkdir -p "$out"
    cp -R "$src" "$out/src"
    src="$out/src"
    # A C-only consumer: a C++ compiler that does not exist must not matter.
    cmake -S "$src" -B "$out/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_PREFIX_PATH="$prefix" -DRUDA_EXPECTED_VERSION="$version" \
      -DCMAKE_CXX_COMPILER=/nonexistent/c++ ||
      fail "configuring the find_package consumer failed"
    out="$out/build"
    cmake --build "$out" || fail "building the find_package consumer failed"
    check_links_installed "$out/consumer_shared" "$prefix"
    "$out/consumer_shared" || fail "consumer_shared (ruda::ruda) failed"
    if ldd "$out/consumer_static" | grep -q libruda; then
      fail "consumer_static (ruda::ruda_static) loads libruda.so"
    fi
    "$out/consumer_static" || fail "consumer_static (ruda::ruda_static) failed"
    check_links_installed "$out/consumer_kernels" "$prefix"
    "$out/consumer_kernels" || fail "consumer_kernels (ruda_add_kernels) failed"
    # A second build must find nothing to do (the embed step's dependencies
    # are right), and a touched kernel file must re-embed it.
    cmake --build "$out" >"$out/rebuild.log" || fail "the second build failed"
    if grep -q "Embedding the kernel text" "$out/rebuild.log"; then
      cat "$out/rebuild.log"
      fail "the second build ran the embed step again"
    fi
    sleep 1
    touch "$src/scale_kernel.h"
    cmake --build "$out" >"$out/rebuild.log" || fail "the build after touching the kernel failed"
    grep -q "Embedding the kernel text" "$out/rebuild.log" ||
      { cat "$out/rebuild.log"; fail "touching the kernel file did not re-embed it"; }
    ;;

  pkg_config)
    work="$1" src="$2" version="$3" cc="$4"
    prefix="$work/prefix" out="$work/pkg_config"
    if ! command -v pkg-config >/dev/null 2>&1; then
      echo "pkg-config is not installed (apt-get install pkg-config): skipped"
      exit 77
    fi
    pc="$(find "$prefix" -name ruda.pc | head -n 1)"
    [ -n "$pc" ] || fail "no ruda.pc under $prefix"
    export PKG_CONFIG_PATH="$(dirname "$pc")"
    got="$(pkg-config --modversion ruda)"
    [ "$got" = "$version" ] || fail "pkg-config --modversion ruda gave '$got', expected $version"
    libdir="$(pkg-config --variable=libdir ruda)"
    rm -rf "$out"
    mkdir -p "$out"
    # shellcheck disable=SC2046 # word splitting of pkg-config's flags is wanted
    "$cc" -std=c11 -Wall -Werror $(pkg-config --cflags ruda) "$src/consumer.c" -o "$out/consumer" \
      $(pkg-config --libs ruda) -Wl,-rpath,"$libdir" || fail "building with pkg-config's flags failed"
    check_links_installed "$out/consumer" "$prefix"
    "$out/consumer" || fail "the pkg-config consumer failed"
    # --static: the libraries libruda.a needs must all be there to link
    # (hwloc's private ones, such as -ludev, need not be).
    static_libs="$(pkg-config --static --libs ruda)" || fail "pkg-config --static --libs ruda failed"
    # shellcheck disable=SC2086
    "$cc" -std=c11 -Wall -Werror $(pkg-config --cflags ruda) "$src/consumer.c" \
      -o "$out/consumer_pc_static" $static_libs -Wl,-rpath,"$libdir" ||
      fail "building with pkg-config --static --libs ruda ($static_libs) failed"
    "$out/consumer_pc_static" || fail "the pkg-config --static consumer failed"
    # ... and with libruda.a itself in place of libruda.so.
    # shellcheck disable=SC2086
    "$cc" -std=c11 -Wall -Werror $(pkg-config --cflags ruda) "$src/consumer.c" \
      -o "$out/consumer_libruda_a" ${static_libs/-lruda /-l:libruda.a } ||
      fail "building against libruda.a with pkg-config --static --libs ruda failed"
    if ldd "$out/consumer_libruda_a" | grep -q libruda; then
      fail "the consumer linked with libruda.a loads libruda.so"
    fi
    "$out/consumer_libruda_a" || fail "the libruda.a consumer (pkg-config --static) failed"
    ;;

  mpi)
    work="$1" src="$2" version="$3" mpicc="$4" mpiexec="$5"
    shift 5
    prefix="$work/prefix" out="$work/mpi"
    pc="$(find "$prefix" -name ruda_mpi.pc | head -n 1)"
    [ -n "$pc" ] || fail "no ruda_mpi.pc under $prefix"
    libdir="$(dirname "$(dirname "$pc")")"
    [ -e "$libdir/libruda_mpi.so" ] || fail "no libruda_mpi.so in $libdir"
    rm -rf "$out"
    mkdir -p "$out"
    # As ruda/mpi.h says: the MPI compiler wrapper, -lruda_mpi -lruda.
    "$mpicc" -std=c11 -Wall -Werror -I"$prefix/include" "$src/mpi_consumer.c" \
      -o "$out/mpi_consumer" -L"$libdir" -lruda_mpi -lruda -Wl,-rpath,"$libdir" ||
      fail "building with $mpicc ... -lruda_mpi -lruda failed"
    check_links_installed "$out/mpi_consumer" "$prefix"
    "$mpiexec" -n 2 "$@" "$out/mpi_consumer" || fail "the mpi consumer (-lruda_mpi -lruda) failed"
    if command -v pkg-config >/dev/null 2>&1; then
      export PKG_CONFIG_PATH="$(dirname "$pc")"
      got="$(pkg-config --modversion ruda_mpi)"
      [ "$got" = "$version" ] || fail "pkg-config --modversion ruda_mpi gave '$got', expected $version"
      # shellcheck disable=SC2046
      "$mpicc" -std=c11 -Wall -Werror $(pkg-config --cflags ruda_mpi) "$src/mpi_consumer.c" \
        -o "$out/mpi_consumer_pc" $(pkg-config --libs ruda_mpi) -Wl,-rpath,"$libdir" ||
        fail "building with $mpicc and pkg-config's ruda_mpi failed"
      "$mpiexec" -n 2 "$@" "$out/mpi_consumer_pc" || fail "the mpi consumer (pkg-config) failed"
    fi
    ;;

  *)
    fail "unknown step '$step'"
    ;;
esac
