# Build settings of the CPU backend: hwloc (libhwloc-dev), when the top
# level found it, gives the CPU caches (cpu_topology.c); without it the
# backend reads sysfs.
if(RUDA_HAVE_HWLOC)
  target_include_directories(${RUDA_BACKEND_TARGET} PRIVATE ${RUDA_HWLOC_INCLUDE_DIR})
  target_compile_definitions(${RUDA_BACKEND_TARGET} PRIVATE RUDA_HAVE_HWLOC=1)
endif()
