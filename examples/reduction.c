/* A sum reduction through shared memory: the first launch leaves one
 * partial sum per ruda, the second reduces the partial sums in one ruda.
 * The kernel is written once, in examples/kernels/reduction.h, and runs on
 * the CPU backend (or RUDA_DEVICE=cuda:0, opencl:0). Checked against the
 * host. Then the same sum in f32 through ruda's tuned reduction
 * (ruda/tune.h), which picks the fastest of its candidates here. */
#include "example_common.h"
#include "kernels/reduction.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const char *name;
  ruda_client_t *client = example_open(&name);
  ruda_status_t s;
  const uint64_t n = 1 << 20, per = 4096;
  double *in = malloc(n * sizeof *in), want = 0;
  for (uint64_t i = 0; i < n; i++) {
    in[i] = (double)(i % 1000) * 0.5;
    want += in[i];
  }
  uint32_t rudas = (uint32_t)((n + per - 1) / per);
  ruda_kernel_t *k = NULL;
  ruda_handle_t data, partial, total;
  double got = 0;
  if ((s = RUDA_KERNEL_CREATE(partial_sum, &k)) ||
      (s = ruda_client_create_buffer(client, in, n * sizeof *in, &data)) ||
      (s = ruda_client_empty(client, rudas * sizeof(double), &partial)) ||
      (s = ruda_client_empty(client, sizeof(double), &total)) ||
      (s = RUDA_LAUNCH(partial_sum, client, k, ruda_count_static(rudas, 1, 1), &data, &partial, n,
                       per)) ||
      (s = RUDA_LAUNCH(partial_sum, client, k, ruda_count_static(1, 1, 1), &partial, &total,
                       (uint64_t)rudas, (uint64_t)rudas)) ||
      (s = ruda_client_read(client, &total, &got, sizeof got))) {
    return example_fail("the partial sums", s);
  }
  printf("reduction on %s: sum %.1f, expected %.1f\n", name, got, want);
  /* The tuned f32 sum: the first call of this size tunes it. */
  float *in32 = malloc(n * sizeof *in32), got32 = 0;
  for (uint64_t i = 0; i < n; i++) in32[i] = (float)in[i];
  ruda_handle_t data32, total32;
  if ((s = ruda_client_create_buffer(client, in32, n * sizeof *in32, &data32)) ||
      (s = ruda_client_empty(client, sizeof got32, &total32)) ||
      (s = ruda_tune_sum_f32(client, &data32, &total32, n)) ||
      (s = ruda_client_read(client, &total32, &got32, sizeof got32)))
    return example_fail("the tuned sum", s);
  bool tuned_ok = fabs((double)got32 - want) <= 1e-4 * want;
  printf("tuned f32 sum: %.1f (%s)\n", got32, tuned_ok ? "within 1e-4" : "WRONG");
  ruda_handle_release(&data32);
  ruda_handle_release(&total32);
  free(in32);
  ruda_handle_release(&data);
  ruda_handle_release(&partial);
  ruda_handle_release(&total);
  ruda_kernel_release(k);
  ruda_client_release(client);
  free(in);
  return got == want && tuned_ok ? 0 : 1;
}
