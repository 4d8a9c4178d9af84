# Build settings of the CPU backend: hwloc (libhwloc-dev), when the top
# level found it, gives the CPU caches (cpu_topology.c); without it the
# backend reads sysfs.
if(RUDA_HAVE_HWLOC)
  target_include_directories(${RUDA_BACKEND_TARGET} PRIVATE ${RUDA_HWLOC_INCLUDE_DIR})
  target_compile_definitions(${RUDA_BACKEND_TARGET} PRIVATE RUDA_HAVE_HWLOC=1)
endif()

# The run-time kernel prelude (cpu_compile.c): cpu_prelude.h and the
# dialect's CPU mapping, built into the library as one string.
set(RUDA_CPU_PRELUDE_C ${CMAKE_CURRENT_BINARY_DIR}/generated/kernel_prelude_cpu.c)
set(RUDA_CPU_PRELUDE_H ${CMAKE_CURRENT_SOURCE_DIR}/src/backends/cpu/cpu_prelude.h
    ${RUDA_DIALECT_DIR}/common.h ${RUDA_DIALECT_DIR}/cpu.h)
add_custom_command(
  OUTPUT ${RUDA_CPU_PRELUDE_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/generated
  COMMAND ruda_kernel_embed --prelude ruda__prelude_cpu -o ${RUDA_CPU_PRELUDE_C} ${RUDA_CPU_PRELUDE_H}
  DEPENDS ruda_kernel_embed ${RUDA_CPU_PRELUDE_H}
  COMMENT "Building the cpu kernel prelude"
  VERBATIM)
target_sources(${RUDA_BACKEND_TARGET} PRIVATE ${RUDA_CPU_PRELUDE_C})
