/* A tiled matrix multiply C = A x B (f32): each ruda computes one TILE x TILE
 * tile of C, staging tiles of A and B through shared memory. Checked against
 * a host multiply. */
#include <math.h>
#include "example_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TILE = 16 };

/* info = {M, N, K}. A is MxK, B is KxN, C is MxN, row-major. */
static void matmul_cpu(const ruda_cpu_kernel_ctx_t *k) {
  const float *A = k->buffers[0], *B = k->buffers[1];
  float *C = k->buffers[2];
  uint64_t M = k->info[0], N = k->info[1], K = k->info[2];
  float *As = k->shared, *Bs = As + TILE * TILE;
  float acc[TILE][TILE];
  memset(acc, 0, sizeof acc);
  uint64_t row0 = (uint64_t)k->ruda_pos.y * TILE, col0 = (uint64_t)k->ruda_pos.x * TILE;
  for (uint64_t t = 0; t < K; t += TILE) {
    for (int i = 0; i < TILE; i++)
      for (int j = 0; j < TILE; j++) {
        uint64_t r = row0 + i, c = t + j;
        As[i * TILE + j] = r < M && c < K ? A[r * K + c] : 0.0f;
        r = t + i;
        c = col0 + j;
        Bs[i * TILE + j] = r < K && c < N ? B[r * N + c] : 0.0f;
      }
    for (int i = 0; i < TILE; i++)
      for (int p = 0; p < TILE; p++) {
        float a = As[i * TILE + p];
        for (int j = 0; j < TILE; j++) acc[i][j] += a * Bs[p * TILE + j];
      }
  }
  for (int i = 0; i < TILE; i++)
    for (int j = 0; j < TILE; j++)
      if (row0 + i < M && col0 + j < N) C[(row0 + i) * N + col0 + j] = acc[i][j];
}

static const char matmul_cuda[] =
    "#define TILE 16\n"
    "extern \"C\" __global__ void matmul(const float *A, const float *B, float *C,\n"
    "                                    const unsigned long long *info) {\n"
    "  unsigned long long M = info[0], N = info[1], K = info[2];\n"
    "  __shared__ float As[TILE][TILE], Bs[TILE][TILE];\n"
    "  unsigned long long row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;\n"
    "  float acc = 0.f;\n"
    "  for (unsigned long long t = 0; t < K; t += TILE) {\n"
    "    As[threadIdx.y][threadIdx.x] = row < M && t + threadIdx.x < K ? A[row * K + t + threadIdx.x] : 0.f;\n"
    "    Bs[threadIdx.y][threadIdx.x] = t + threadIdx.y < K && col < N ? B[(t + threadIdx.y) * N + col] : 0.f;\n"
    "    __syncthreads();\n"
    "    for (int p = 0; p < TILE; p++) acc += As[threadIdx.y][p] * Bs[p][threadIdx.x];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (row < M && col < N) C[row * N + col] = acc;\n"
    "}\n";

int main(void) {
  const char *name;
  ruda_client_t *client = NULL;
  int rc = example_open(&name, &client);
  if (rc) return rc;
  ruda_status_t s;
  const uint64_t M = 200, N = 150, K = 77;
  float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
  for (uint64_t i = 0; i < M * K; i++) A[i] = (float)((i * 7) % 11) - 5.0f;
  for (uint64_t i = 0; i < K * N; i++) B[i] = (float)((i * 3) % 13) * 0.5f;
  ruda_kernel_desc_t desc = {.name = "matmul", .ruda_dim = {TILE, TILE, 1},
                             .shared_mem_bytes = 2 * TILE * TILE * sizeof(float),
                             .code = (ruda_kernel_code_t[]){ruda_kernel_code_cpu(matmul_cpu),
                                                     ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, matmul_cuda)},
                             .num_code = 2};
  ruda_kernel_t *k = NULL;
  ruda_handle_t buf[3];
  uint64_t info[3] = {M, N, K};
  ruda_kernel_args_t args = {.buffers = buf, .num_buffers = 3, .info = {info, 3, 3}};
  ruda_count_t count = ruda_count_static((uint32_t)((N + TILE - 1) / TILE), (uint32_t)((M + TILE - 1) / TILE), 1);
  if ((s = ruda_kernel_create(&desc, &k)) ||
      (s = ruda_client_create_buffer(client, A, M * K * 4, &buf[0])) ||
      (s = ruda_client_create_buffer(client, B, K * N * 4, &buf[1])) ||
      (s = ruda_client_empty(client, M * N * 4, &buf[2])) ||
      (s = ruda_client_launch(client, k, count, &args)) ||
      (s = ruda_client_read(client, &buf[2], C, M * N * 4))) {
    return example_fail(s);
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
  for (int i = 0; i < 3; i++) ruda_handle_release(&buf[i]);
  ruda_kernel_release(k);
  ruda_client_release(client);
  free(A);
  free(B);
  free(C);
  return bad ? 1 : 0;
}
