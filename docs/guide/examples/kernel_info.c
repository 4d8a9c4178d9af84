/* Writing a kernel: y = a * x + y with the scalars a (f32) and n (u32)
 * passed in the launch's info words, and one kernel carrying both a CPU
 * function and CUDA C source. */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "ruda: %s\n", text);
  free(text);
  ruda_status_free(s);
  return 1;
}

/* guide-begin: kernel */
/* Info words: word 0 holds the f32 group (a, then 4 bytes of padding),
 * word 1 the u32 group (n). */
static void saxpy_cpu(const ruda_cpu_kernel_ctx_t *k) {
  float a;
  uint32_t n;
  memcpy(&a, (const unsigned char *)k->info + 0, sizeof a);
  memcpy(&n, (const unsigned char *)k->info + 8, sizeof n);
  const float *x = k->buffers[0];
  float *y = k->buffers[1];
  uint64_t first = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint64_t i = first; i < first + k->ruda_dim.x && i < n; ++i) y[i] = a * x[i] + y[i];
}

/* The same kernel for cuda:N: one thread per unit; buffers in order, then
 * the info words. */
static const char saxpy_cuda[] =
    "extern \"C\" __global__ void saxpy(const float *x, float *y,\n"
    "                                  const unsigned long long *info) {\n"
    "  float a = ((const float *)info)[0];\n"
    "  unsigned n = ((const unsigned *)(info + 1))[0];\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";
/* guide-end: kernel */

int main(int argc, char **argv) {
  const char *device = argc > 1 ? argv[1] : "cpu";
  ruda_device_id_t id;
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_device_parse(device, &id);
  if (!s) s = ruda_client_create(id, &c);
  if (s) return fail(s);

  enum { N = 1000, UNITS = 128 };
  float x[N], y[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }

  /* guide-begin: info */
  float a = 2.0f;
  uint32_t n = N;
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, &a, 1); /* one group per type */
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U32, &n, 1);
  ruda_info_t info;
  if ((s = ruda_info_builder_finish(&b, &info))) return fail(s);
  printf("info: %zu words\n", info.len);
  /* guide-end: info */

  /* guide-begin: launch */
  /* Code for two backends: each device runs the first format it can. */
  ruda_kernel_code_t code[2] = {
      ruda_kernel_code_cpu(saxpy_cpu),
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, saxpy_cuda),
  };
  ruda_kernel_desc_t desc = {
      .name = "saxpy",           /* the CUDA entry point too */
      .ruda_dim = {UNITS, 1, 1}, /* units per ruda */
      .code = code,
      .num_code = 2,
  };
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t buffers[2];
  if ((s = ruda_kernel_create(&desc, &kernel)) ||
      (s = ruda_client_create_buffer(c, x, sizeof x, &buffers[0])) ||
      (s = ruda_client_create_buffer(c, y, sizeof y, &buffers[1])))
    return fail(s);
  ruda_kernel_args_t args = {.buffers = buffers, .num_buffers = 2, .info = info};
  s = ruda_client_launch(c, kernel, ruda_count_static((N + UNITS - 1) / UNITS, 1, 1), &args);
  ruda_info_builder_deinit(&b); /* the launch copied the words */
  if (s || (s = ruda_client_read(c, &buffers[1], y, sizeof y))) return fail(s);
  /* guide-end: launch */

  int bad = 0;
  for (int i = 0; i < N; ++i) bad += y[i] != 2.0f * (float)i + 1.0f;
  printf("saxpy on %s: y[10] = %g, %d mismatches\n", device, y[10], bad);
  ruda_handle_release(&buffers[0]);
  ruda_handle_release(&buffers[1]);
  ruda_kernel_release(kernel);
  ruda_client_release(c);
  return bad ? 1 : 0;
}
