/* compile: loading a kernel from the compile cache against compiling it.
 * The CUDA backend compiles with NVRTC (bench_cuda.c), the OpenCL backend
 * with clBuildProgram (bench_opencl.c). */
#include "harness.h"

void ruda_bench_compile(ruda_bench_t *b) {
  if (ruda_bench_on_cuda(b)) {
    ruda_bench_cuda_compile(b);
    return;
  }
  if (ruda_bench_on_opencl(b)) {
    ruda_bench_opencl_compile(b);
    return;
  }
  ruda_bench_skip(b, "compile", "warm_cache_load",
                  "the CPU backend runs native C functions; nothing is compiled "
                  "(use --device cuda:N or opencl:N)");
}
