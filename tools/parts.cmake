# Parts of the `ruda` command built as static libraries, so that the
# command (tools/CMakeLists.txt) and the unit tests that check a part alone
# (tests/unit/tools/, tests/unit/kernels/) link the same objects, and no
# test compiles a tools/ or bench/ source into itself:
#   ruda_tools_common   tools/tools_common.c: help, exit codes, opening a device
#   ruda_bench_harness  bench/harness.c: statistics, reports, JSON lines
# (ruda_kernel_text, the kernel file reader, is defined with the embed step
# in the top-level CMakeLists.txt, which needs it before the library.)
add_library(ruda_tools_common STATIC ${PROJECT_SOURCE_DIR}/tools/tools_common.c)
target_include_directories(ruda_tools_common PUBLIC ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(ruda_tools_common PUBLIC ruda_static)

add_library(ruda_bench_harness STATIC ${PROJECT_SOURCE_DIR}/bench/harness.c)
target_include_directories(ruda_bench_harness PUBLIC ${PROJECT_SOURCE_DIR}/bench
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(ruda_bench_harness PUBLIC ruda_static)

foreach(t ruda_tools_common ruda_bench_harness)
  target_compile_options(${t} PRIVATE ${RUDA_WARNINGS})
  target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
endforeach()
