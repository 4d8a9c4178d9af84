# Build settings of the CUDA backend: the CUDA headers are needed at build
# time only (libcuda, NVRTC and NCCL are dlopen()ed at run time). Without
# them the backend still builds and reports itself unavailable.
if(RUDA_HAVE_CUDA_HEADERS)
  target_include_directories(${RUDA_BACKEND_TARGET} PRIVATE ${RUDA_CUDA_ROOT}/include)
  target_compile_definitions(${RUDA_BACKEND_TARGET} PRIVATE RUDA_HAVE_CUDA_HEADERS=1)
endif()
