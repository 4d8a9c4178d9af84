/* Two CPU devices in one process (run with RUDA_CPU_DEVICES=2) sum their
 * buffers with an all-reduce; every device gets the result. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

int main(void) {
  uint32_t count = 0;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CPU, &count);
  if (s) return fail(s);
  if (count < 2) {
    printf("needs two CPU devices: run with RUDA_CPU_DEVICES=2\n");
    return 77;
  }
  /* guide-begin: all_reduce */
  enum { N = 4 };
  ruda_client_t *clients[2] = {NULL, NULL};
  ruda_handle_t bufs[2];
  for (uint16_t d = 0; d < 2; ++d) {
    float v[N] = {1.0f * (d + 1), 2.0f * (d + 1), 3.0f * (d + 1), 4.0f * (d + 1)};
    ruda_device_id_t id = {RUDA_DEVICE_TYPE_CPU, d};
    if ((s = ruda_client_create(id, &clients[d])) ||
        (s = ruda_client_create_buffer(clients[d], v, sizeof v, &bufs[d])))
      return fail(s);
  }
  /* In place (src == dst); queued on both devices' streams like a launch. */
  if ((s = ruda_client_all_reduce(clients, 2, bufs, bufs, RUDA_ELEM_F32, RUDA_REDUCE_SUM)))
    return fail(s);
  for (int d = 0; d < 2; ++d) {
    float out[N];
    if ((s = ruda_client_read(clients[d], &bufs[d], out, sizeof out))) return fail(s);
    printf("cpu:%d: %g %g %g %g\n", d, out[0], out[1], out[2], out[3]);
  }
  /* guide-end: all_reduce */
  for (int d = 0; d < 2; ++d) {
    ruda_handle_release(&bufs[d]);
    ruda_client_release(clients[d]);
  }
  return 0;
}
