/* Vector add through ruda's public API: c = a + b on the CPU backend (or
 * RUDA_DEVICE=cuda:0), checked against the host. Exit 0 on success. */
#include "example_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNITS = 256 };

/* Called once per ruda; loops over the ruda's units. info[0] = n. */
static void add_cpu(const ruda_cpu_kernel_ctx_t *k) {
  const float *a = k->buffers[0], *b = k->buffers[1];
  float *c = k->buffers[2];
  uint64_t n = k->info[0], base = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint32_t u = 0; u < k->ruda_dim.x && base + u < n; u++) c[base + u] = a[base + u] + b[base + u];
}

static const char add_cuda[] =
    "extern \"C\" __global__ void vector_add(const float *a, const float *b, float *c,\n"
    "                                        const unsigned long long *info) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < info[0]) c[i] = a[i] + b[i];\n"
    "}\n";

int main(void) {
  const char *name;
  ruda_client_t *client = NULL;
  int rc = example_open(&name, &client);
  if (rc) return rc;
  ruda_status_t s;

  const size_t n = 1000003;
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  for (size_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 2.0f * (float)i;
  }
  ruda_handle_t buf[3];
  ruda_kernel_t *kernel = NULL;
  ruda_kernel_desc_t desc = {.name = "vector_add", .ruda_dim = {UNITS, 1, 1}, .code = (ruda_kernel_code_t[]){ruda_kernel_code_cpu(add_cpu),
                                                     ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, add_cuda)},
                             .num_code = 2};
  uint64_t info[1] = {n};
  ruda_kernel_args_t args = {.buffers = buf, .num_buffers = 3, .info = {info, 1, 1}};
  if ((s = ruda_kernel_create(&desc, &kernel)) ||
      (s = ruda_client_create_buffer(client, a, n * sizeof *a, &buf[0])) ||
      (s = ruda_client_create_buffer(client, b, n * sizeof *b, &buf[1])) ||
      (s = ruda_client_empty(client, n * sizeof *c, &buf[2])) ||
      (s = ruda_client_launch(client, kernel, ruda_count_static((uint32_t)((n + UNITS - 1) / UNITS), 1, 1), &args)) ||
      (s = ruda_client_read(client, &buf[2], c, n * sizeof *c))) {
    return example_fail(s);
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += c[i] != a[i] + b[i];
  printf("vector_add on %s: %zu elements, %zu mismatches\n", name, n, bad);
  for (int i = 0; i < 3; i++) ruda_handle_release(&buf[i]);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  free(a);
  free(b);
  free(c);
  return bad ? 1 : 0;
}
