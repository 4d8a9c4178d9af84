/* The head of the CPU backend's run-time kernel prelude (cpu_compile.c).
 *
 * Kernel text compiled by ruda at run time for cpu:N is this file, then
 * ruda/dialect/common.h and ruda/dialect/cpu.h (their `#include "ruda/..."`
 * lines left out), then the user's text: the prelude is built into the
 * library, so no ruda header is needed on the machine. This file stands for
 * the few declarations of ruda/kernel.h and ruda/types.h that the CPU
 * mapping uses; their layout must match those headers (the unit test
 * unit_cpu_compile launches through every field).
 *
 * ruda_cpu_kernel_fail is reached through a pointer that the backend sets
 * after loading the object, so the object needs no symbol of the library
 * (it loads the same whether the program links libruda or a language
 * binding opened it privately). */
#ifndef RUDA_CPU_PRELUDE_H
#define RUDA_CPU_PRELUDE_H

#define RUDA__CPU_RUNTIME 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ruda_dim {
  uint32_t x, y, z;
} ruda_dim_t;

typedef struct ruda_count3 {
  uint32_t x, y, z;
} ruda_count3_t;

typedef struct ruda_cpu_kernel_ctx {
  ruda_count3_t ruda_pos;
  ruda_count3_t ruda_count;
  ruda_dim_t ruda_dim;
  void *const *buffers;
  const uint64_t *buffer_sizes;
  size_t num_buffers;
  const uint64_t *info;
  size_t info_len;
  size_t dynamic_metadata_offset;
  void *shared;
  uint64_t shared_size;
  void *internal_;
} ruda_cpu_kernel_ctx_t;

__attribute__((visibility("default"))) void (*ruda__cpu_kernel_fail)(
    const ruda_cpu_kernel_ctx_t *ctx, const char *fmt, ...);
#define ruda_cpu_kernel_fail(...) ruda__cpu_kernel_fail(__VA_ARGS__)

#endif
