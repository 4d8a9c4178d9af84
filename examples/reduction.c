/* A sum reduction that uses shared memory: each ruda reduces UNITS values
 * in its private shared block, then a second launch reduces the partial
 * sums. Checked against the host. */
#include "example_common.h"
#include <stdio.h>
#include <stdlib.h>

enum { UNITS = 256 };

/* info[0] = n. out[ruda] = sum of in[ruda*UNITS .. ) */
static void partial_sum_cpu(const ruda_cpu_kernel_ctx_t *k) {
  const double *in = k->buffers[0];
  double *out = k->buffers[1], *sh = k->shared;
  uint64_t n = k->info[0], base = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) sh[u] = base + u < n ? in[base + u] : 0.0;
  for (uint32_t s = k->ruda_dim.x / 2; s > 0; s /= 2)
    for (uint32_t u = 0; u < s; u++) sh[u] += sh[u + s];
  out[k->ruda_pos.x] = sh[0];
}

static const char partial_sum_cuda[] =
    "extern \"C\" __global__ void partial_sum(const double *in, double *out,\n"
    "                                         const unsigned long long *info) {\n"
    "  extern __shared__ double sh[];\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  sh[threadIdx.x] = i < info[0] ? in[i] : 0.0;\n"
    "  __syncthreads();\n"
    "  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {\n"
    "    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];\n"
    "}\n";

int main(void) {
  const char *name;
  ruda_client_t *client = NULL;
  int rc = example_open(&name, &client);
  if (rc) return rc;
  ruda_status_t s;
  const uint64_t n = 1 << 20;
  double *in = malloc(n * sizeof *in), want = 0;
  for (uint64_t i = 0; i < n; i++) {
    in[i] = (double)(i % 1000) * 0.5;
    want += in[i];
  }
  ruda_kernel_desc_t desc = {.name = "partial_sum", .ruda_dim = {UNITS, 1, 1},
                             .shared_mem_bytes = UNITS * sizeof(double), .code = (ruda_kernel_code_t[]){ruda_kernel_code_cpu(partial_sum_cpu),
                                                     ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, partial_sum_cuda)},
                             .num_code = 2};
  ruda_kernel_t *k = NULL;
  ruda_handle_t data, partial, total;
  uint32_t rudas = (uint32_t)(n / UNITS);
  uint64_t info1[1] = {n}, info2[1] = {rudas};
  if ((s = ruda_kernel_create(&desc, &k)) ||
      (s = ruda_client_create_buffer(client, in, n * sizeof *in, &data)) ||
      (s = ruda_client_empty(client, rudas * sizeof(double), &partial)) ||
      (s = ruda_client_empty(client, (rudas / UNITS) * sizeof(double), &total))) {
    return example_fail(s);
  }
  ruda_handle_t pass1[2] = {data, partial}, pass2[2] = {partial, total};
  ruda_kernel_args_t a1 = {.buffers = pass1, .num_buffers = 2, .info = {info1, 1, 1}};
  ruda_kernel_args_t a2 = {.buffers = pass2, .num_buffers = 2, .info = {info2, 1, 1}};
  double sums[UNITS];
  uint32_t blocks2 = rudas / UNITS;
  if ((s = ruda_client_launch(client, k, ruda_count_static(rudas, 1, 1), &a1)) ||
      (s = ruda_client_launch(client, k, ruda_count_static(blocks2, 1, 1), &a2)) ||
      (s = ruda_client_read(client, &total, sums, sizeof sums))) {
    return example_fail(s);
  }
  double got = 0;
  for (uint32_t i = 0; i < blocks2; i++) got += sums[i];
  printf("reduction on %s: sum %.1f, expected %.1f\n", name, got, want);
  ruda_handle_release(&data);
  ruda_handle_release(&partial);
  ruda_handle_release(&total);
  ruda_kernel_release(k);
  ruda_client_release(client);
  free(in);
  return got == want ? 0 : 1;
}
