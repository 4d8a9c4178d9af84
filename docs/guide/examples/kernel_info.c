/* Writing a kernel: y = a * x + y, written once in the kernel dialect
 * (saxpy.h), with the scalars a (f32) and n (u32) passed in the launch's
 * info words, launched by hand on the device named by argv[1] (cpu, cuda:0,
 * opencl:0). */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saxpy.h"

static int fail(ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "ruda: %s\n", text);
  free(text);
  int unavailable = ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE;
  ruda_status_free(s);
  return unavailable ? 77 : 1; /* 77: the device is not here (a skip) */
}

int main(int argc, char **argv) {
  const char *device = argc > 1 ? argv[1] : "cpu";
  ruda_device_id_t id;
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_device_parse(device, &id);
  if (!s) s = ruda_client_create(id, &c);
  if (s) return fail(s);

  enum { N = 1000, UNITS = 128 }; /* UNITS: saxpy's RUDA_DIM */
  float x[N], y[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }

  /* guide-begin: info */
  /* saxpy's scalars: a (scalar 0) in word 0, n (scalar 1) in word 1. */
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
  /* The kernel's own description: its name, dims and code (the natively
   * compiled function for cpu:N, the embedded text for cuda:N and opencl:N). */
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t buffers[2];
  if ((s = RUDA_KERNEL_CREATE(saxpy, &kernel)) ||
      (s = ruda_client_create_buffer(c, x, sizeof x, &buffers[0])) ||
      (s = ruda_client_create_buffer(c, y, sizeof y, &buffers[1])))
    return fail(s);
  /* Buffers in declaration order, then the info words. */
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
