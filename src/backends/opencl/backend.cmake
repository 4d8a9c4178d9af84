# Build settings of the OpenCL backend: CL/cl.h is needed at build time only
# (the ICD loader libOpenCL.so.1 is dlopen()ed at run time). Without the
# headers, or with -DRUDA_OPENCL=OFF, the backend still builds and reports
# itself unavailable. RUDA_HAVE_OPENCL_HEADERS and RUDA_OPENCL_INCLUDE_DIR
# are seen by tests/ and tools/ too (OpenCL tests and benchmark baselines).
option(RUDA_OPENCL "Build the OpenCL backend with the OpenCL headers when CL/cl.h is found" ON)
set(RUDA_HAVE_OPENCL_HEADERS OFF)
if(RUDA_OPENCL)
  find_path(RUDA_OPENCL_INCLUDE_DIR CL/cl.h)
  if(RUDA_OPENCL_INCLUDE_DIR)
    set(RUDA_HAVE_OPENCL_HEADERS ON)
  endif()
endif()
message(STATUS "ruda: OpenCL headers ${RUDA_HAVE_OPENCL_HEADERS} (${RUDA_OPENCL_INCLUDE_DIR})")
if(RUDA_HAVE_OPENCL_HEADERS)
  target_include_directories(${RUDA_BACKEND_TARGET} PRIVATE ${RUDA_OPENCL_INCLUDE_DIR})
  target_compile_definitions(${RUDA_BACKEND_TARGET} PRIVATE RUDA_HAVE_OPENCL_HEADERS=1)
endif()

# Tests (see the top-level CMakeLists.txt): the conformance suite runs again
# on opencl:0 (PoCL in CI) as cts_opencl_*, label "opencl" only, so that
# .ci/run's ASan stage takes it (-L opencl) and its TSan stage, whose
# instrumentation PoCL's threads lack, leaves it out. tests/unit/opencl/*
# see the OpenCL headers. Both keep their compiled programs in the build
# tree.
set(RUDA_BACKEND_CTS_DEVICE opencl:0)
# Once more as cts_opencl_no_kernel_events_*: kernels without events, syncs
# fenced by clFinish on the waiting thread, as on GPUs (docs/design/opencl.md).
set(RUDA_BACKEND_CTS_VARIANTS "no_kernel_events=RUDA_OPENCL_KERNEL_EVENTS=0")
set(RUDA_BACKEND_TEST_LABELS opencl)
set(RUDA_BACKEND_TEST_ENVIRONMENT "RUDA_CACHE_DIR=${PROJECT_BINARY_DIR}/test-tmp/opencl-cache")
if(RUDA_HAVE_OPENCL_HEADERS)
  set(RUDA_BACKEND_TEST_INCLUDE_DIRS ${RUDA_OPENCL_INCLUDE_DIR})
  set(RUDA_BACKEND_TEST_DEFINITIONS RUDA_HAVE_OPENCL_HEADERS=1)
endif()
