/* Shared helpers of the CUDA-only tests (tests/gpu/test_cuda_*.c). Every
 * test skips, with the reason, where CUDA is unavailable (no driver, no
 * device, built without the headers). */
#ifndef RUDA_TEST_CUDA_UTIL_H
#define RUDA_TEST_CUDA_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static inline ruda_client_t *cuda_client(void) {
  static ruda_client_t *client;
  static char why[1024];
  if (client) return client;
  uint32_t n = 0;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
  if (!s) {
    ruda_device_id_t id = {RUDA_DEVICE_TYPE_CUDA, 0};
    s = ruda_client_create(id, &client);
  }
  if (s) {
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    client = NULL;
    SKIP(why);
  }
  return client;
}

/* A new client on cuda:0 on a stream no other test uses (the caller
 * releases it); skips like cuda_client. */
static inline ruda_client_t *cuda_stream_client(void) {
  ruda_client_t *s = NULL;
  ASSERT_OK(ruda_client_on_stream(cuda_client(), ruda_stream_id_next(), &s));
  return s;
}

/* Client c still round-trips data: 64 words written into a new buffer
 * read back equal. */
static inline void client_round_trips(ruda_client_t *c) {
  uint32_t v[64], back[64];
  for (int i = 0; i < 64; i++) v[i] = (uint32_t)i * 11u + 1u;
  memset(back, 0, sizeof back);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  ASSERT_MEM_EQ(back, v, sizeof v);
  ruda_handle_release(&h);
}

static inline ruda_kernel_t *cuda_kernel(const char *name, const char *src, ruda_dim_t dim,
                                  uint64_t shared) {
  return test_kernel(RUDA_KERNEL_FORMAT_CUDA_C, name, src, dim, shared);
}

/* info = {n, value}: out[i] = value for i < n. */
static const char cuda_fill_src[] =
    "extern \"C\" __global__ void fill(unsigned int *out, const unsigned long long *info) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < info[0]) out[i] = (unsigned int)info[1];\n"
    "}\n";

static inline char *status_text(ruda_status_t s) {
  char *t = ruda_status_to_string(s);
  return t ? t : strdup("(no text)");
}

#endif
