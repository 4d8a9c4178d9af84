/* A program outside the ruda tree that uses a portable kernel
 * (scale_kernel.h), embedded by the installed ruda_add_kernels(): it runs
 * the kernel on cpu:0 (the natively compiled form) and, where the device
 * exists, on opencl:0 (the embedded text, compiled at run time), and checks
 * every value. Prints one "consumer kernels ok on DEVICE" line per device
 * and exits 0 when all is well. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "consumer_fail.h"
#include "scale_kernel.h" /* compiles the kernel for cpu:N */

#define N 1000

/* 0 when the kernel ran and every value is right, 1 on a failure, 77 when
 * the device is unavailable. */
static int run(ruda_device_id_t dev) {
  char name[32];
  ruda_device_id_format(dev, name, sizeof name);
  float data[N];
  for (int i = 0; i < N; ++i) data[i] = (float)i;
  ruda_client_t *client = NULL;
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x = {0};
  ruda_status_t s = ruda_client_create(dev, &client);
  if (s && ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE && dev.type_id != RUDA_DEVICE_TYPE_CPU) {
    ruda_status_free(s);
    printf("consumer kernels: %s is unavailable, skipped\n", name);
    return 77;
  }
  if (s || (s = RUDA_KERNEL_CREATE(consumer_scale, &kernel)) ||
      (s = ruda_client_create_buffer(client, data, sizeof data, &x)) ||
      (s = RUDA_LAUNCH(consumer_scale, client, kernel, ruda_count_static((N + 127) / 128, 1, 1),
                       &x, (uint32_t)N)) ||
      (s = ruda_client_read(client, &x, data, sizeof data))) {
    return consumer_fail("consumer kernels", name, s);
  }
  ruda_handle_release(&x);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  for (int i = 0; i < N; ++i) {
    if (data[i] != 2.0f * (float)i + 1.0f) {
      fprintf(stderr, "consumer kernels on %s: x[%d] = %g, expected %g\n", name, i, data[i],
              2.0f * (float)i + 1.0f);
      return 1;
    }
  }
  printf("consumer kernels ok on %s: %d values checked\n", name, N);
  return 0;
}

int main(void) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0}, ocl = {RUDA_DEVICE_TYPE_OPENCL, 0};
  if (run(cpu) != 0) return 1;
  return run(ocl) == 1 ? 1 : 0;
}
