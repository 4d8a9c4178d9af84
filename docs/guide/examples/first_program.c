/* The first program: add 1 to 1000 floats on the CPU device. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

/* A CPU kernel is called once per ruda (a group of units) and loops over
 * the ruda's units itself. */
static void add_one(const ruda_cpu_kernel_ctx_t *k) {
  float *x = k->buffers[0];
  uint64_t n = k->buffer_sizes[0] / sizeof(float);
  uint64_t first = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint64_t i = first; i < first + k->ruda_dim.x && i < n; ++i) x[i] += 1.0f;
}

int main(void) {
  float data[1000];
  for (int i = 0; i < 1000; ++i) data[i] = (float)i;

  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *client = NULL;
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x = {0};
  ruda_kernel_code_t code = ruda_kernel_code_cpu(add_one); /* the kernel's code: a C function */
  ruda_kernel_desc_t desc = {.name = "add_one", .ruda_dim = {256, 1, 1}, .code = &code, .num_code = 1};
  ruda_kernel_args_t args = {.buffers = &x, .num_buffers = 1};

  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &client)) ||
      (s = ruda_kernel_create(&desc, &kernel)) ||
      (s = ruda_client_create_buffer(client, data, sizeof data, &x)) ||
      (s = ruda_client_launch(client, kernel, ruda_count_static(4, 1, 1), &args)) ||
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
