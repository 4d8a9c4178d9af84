/* A tiled matrix multiply C = A x B (f32): each ruda computes one tile of C,
 * staging tiles of A and B through shared memory. The kernel is written
 * once, in examples/kernels/matmul.h, and runs on the CPU backend (or
 * RUDA_DEVICE=cuda:0, opencl:0). Checked against a host multiply; then
 * the same product through ruda's tuned matmul (ruda/tune.h), which picks
 * the fastest of its candidates for this device and size. */
#include <math.h>
#include "example_common.h"
#include "kernels/matmul.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  const char *name;
  ruda_client_t *client = example_open(&name);
  ruda_status_t s;
  const uint64_t M = 200, N = 150, K = 77;
  float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
  for (uint64_t i = 0; i < M * K; i++) A[i] = (float)((i * 7) % 11) - 5.0f;
  for (uint64_t i = 0; i < K * N; i++) B[i] = (float)((i * 3) % 13) * 0.5f;
  ruda_kernel_t *k = NULL;
  ruda_handle_t buf[3];
  ruda_count_t count = ruda_count_static((uint32_t)((N + MATMUL_TILE - 1) / MATMUL_TILE),
                                         (uint32_t)((M + MATMUL_TILE - 1) / MATMUL_TILE), 1);
  if ((s = RUDA_KERNEL_CREATE(matmul, &k)) ||
      (s = ruda_client_create_buffer(client, A, M * K * 4, &buf[0])) ||
      (s = ruda_client_create_buffer(client, B, K * N * 4, &buf[1])) ||
      (s = ruda_client_empty(client, M * N * 4, &buf[2])) ||
      (s = RUDA_LAUNCH(matmul, client, k, count, &buf[0], &buf[1], &buf[2], (uint32_t)M,
                       (uint32_t)N, (uint32_t)K)) ||
      (s = ruda_client_read(client, &buf[2], C, M * N * 4))) {
    return example_fail("the tiled matmul", s);
  }
  size_t bad = 0;
  for (uint64_t r = 0; r < M; r++)
    for (uint64_t c = 0; c < N; c++) {
      float want = 0;
      for (uint64_t p = 0; p < K; p++) want += A[r * K + p] * B[p * N + c];
      if (fabsf(C[r * N + c] - want) > 1e-3f * (1.0f + fabsf(want))) bad++;
    }
  printf("matmul on %s: %llux%llux%llu, %zu mismatches\n", name, (unsigned long long)M,
         (unsigned long long)N, (unsigned long long)K, bad);
  /* The tuned matmul: the first call of this size tunes it. */
  float *T = malloc(M * N * 4);
  if ((s = ruda_tune_matmul_f32(client, &buf[0], &buf[1], &buf[2], M, N, K)) ||
      (s = ruda_client_read(client, &buf[2], T, M * N * 4)))
    return example_fail("the tuned matmul", s);
  size_t tuned_bad = 0;
  for (uint64_t i = 0; i < M * N; i++)
    if (fabsf(T[i] - C[i]) > 1e-3f * (1.0f + fabsf(C[i]))) tuned_bad++;
  printf("tuned matmul: %zu mismatches\n", tuned_bad);
  free(T);
  bad += tuned_bad;
  for (int i = 0; i < 3; i++) ruda_handle_release(&buf[i]);
  ruda_kernel_release(k);
  ruda_client_release(client);
  free(A);
  free(B);
  free(C);
  return bad ? 1 : 0;
}
