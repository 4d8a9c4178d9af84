/* A program outside the ruda tree, built against an installed ruda (by
 * tests/install/consumer_test.sh, once through find_package and once
 * through pkg-config): it creates a CPU client, writes a buffer, launches a
 * kernel on it, reads it back and checks every value. Prints "consumer ok"
 * and exits 0 when all is well. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "consumer_fail.h"

#define N 1000

/* x[i] = 2 * x[i] + 1 over this ruda's units. */
static void scale(const ruda_cpu_kernel_ctx_t *k) {
  float *x = k->buffers[0];
  uint64_t n = k->buffer_sizes[0] / sizeof(float);
  uint64_t first = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint64_t i = first; i < first + k->ruda_dim.x && i < n; ++i) x[i] = 2.0f * x[i] + 1.0f;
}

/* This program's error report (consumer_fail.h). */
static int fail(const char *what, ruda_status_t s) {
  return consumer_fail("consumer", what, s);
}

int main(void) {
  if (ruda_version() != RUDA_VERSION_NUMBER) {
    fprintf(stderr, "consumer: headers %s, library %s\n", RUDA_VERSION_STRING,
            ruda_version_string());
    return 1;
  }
  float data[N];
  for (int i = 0; i < N; ++i) data[i] = (float)i;

  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *client = NULL;
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x = {0};
  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &client))) return fail("client", s);
  ruda_kernel_code_t code = ruda_kernel_code_cpu(scale);
  ruda_kernel_desc_t desc = {.name = "scale", .ruda_dim = {128, 1, 1}, .code = &code, .num_code = 1};
  if ((s = ruda_kernel_create(&desc, &kernel))) return fail("kernel", s);
  if ((s = ruda_client_empty(client, sizeof data, &x))) return fail("empty", s);
  if ((s = ruda_client_write(client, &x, data, sizeof data))) return fail("write", s);
  ruda_kernel_args_t args = {.buffers = &x, .num_buffers = 1};
  if ((s = ruda_client_launch(client, kernel, ruda_count_static((N + 127) / 128, 1, 1), &args)))
    return fail("launch", s);
  float out[N] = {0};
  if ((s = ruda_client_read(client, &x, out, sizeof out))) return fail("read", s);
  for (int i = 0; i < N; ++i) {
    if (out[i] != 2.0f * (float)i + 1.0f) {
      fprintf(stderr, "consumer: out[%d] = %g, expected %g\n", i, out[i], 2.0f * (float)i + 1.0f);
      return 1;
    }
  }
  ruda_handle_release(&x);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  printf("consumer ok: ruda %s, %d values checked\n", ruda_version_string(), N);
  return 0;
}
