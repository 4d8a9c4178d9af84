/* Vector add through ruda's public API: c = a + b on the CPU backend (or
 * RUDA_DEVICE=cuda:0, opencl:0), checked against the host. The kernel is
 * written once, in examples/kernels/vector_add.h. Exit 0 on success. */
#include "example_common.h"
#include "kernels/vector_add.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  const char *name;
  ruda_client_t *client = example_open(&name);
  ruda_status_t s;

  const size_t n = 1000003;
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  for (size_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 2.0f * (float)i;
  }
  ruda_handle_t buf[3];
  ruda_kernel_t *kernel = NULL;
  uint32_t rudas = (uint32_t)((n + VECTOR_ADD_UNITS - 1) / VECTOR_ADD_UNITS);
  if ((s = RUDA_KERNEL_CREATE(vector_add, &kernel)) ||
      (s = ruda_client_create_buffer(client, a, n * sizeof *a, &buf[0])) ||
      (s = ruda_client_create_buffer(client, b, n * sizeof *b, &buf[1])) ||
      (s = ruda_client_empty(client, n * sizeof *c, &buf[2])) ||
      (s = RUDA_LAUNCH(vector_add, client, kernel, ruda_count_static(rudas, 1, 1), &buf[0], &buf[1],
                       &buf[2], (uint64_t)n)) ||
      (s = ruda_client_read(client, &buf[2], c, n * sizeof *c))) {
    return example_fail("vector_add", s);
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += c[i] != a[i] + b[i];
  printf("vector_add on %s: %zu elements, %zu mismatches\n", name, n, bad);
  for (int i = 0; i < 3; i++) ruda_handle_release(&buf[i]);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  free(a);
  free(b);
  free(c);
  return bad ? 1 : 0;
}
