/* The first program: add 1 to 1000 floats on the CPU device. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "add_one.h" /* compiles the kernel for cpu:N */

int main(void) {
  float data[1000];
  for (int i = 0; i < 1000; ++i) data[i] = (float)i;

  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0}; /* or {RUDA_DEVICE_TYPE_CUDA, 0} */
  ruda_client_t *client = NULL;
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x = {0};

  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &client)) ||
      (s = RUDA_KERNEL_CREATE(add_one, &kernel)) ||
      (s = ruda_client_create_buffer(client, data, sizeof data, &x)) ||
      (s = RUDA_LAUNCH(add_one, client, kernel, ruda_count_static(4, 1, 1), &x, 1000u)) ||
      (s = ruda_client_read(client, &x, data, sizeof data))) {
    char *text = ruda_status_to_string(s);
    fprintf(stderr, "ruda: %s\n", text);
    free(text);
    ruda_status_free(s);
    return 1;
  }
  printf("data[0] = %g, data[999] = %g\n", data[0], data[999]);

  ruda_handle_release(&x);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  return data[999] == 1000.0f ? 0 : 1;
}
