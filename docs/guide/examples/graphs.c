/* Graphs: record two launches and a write once, replay them with new
 * inputs, and compare with launching one by one. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "add_one.h" /* x[i] += 1, written once for every backend */
#include "fail.h" /* fail(s): print the status, free it, return 1 */

int main(void) {
  ruda_client_t *client = NULL;
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x = {0};
  float data[1000] = {0};
  ruda_status_t s;
  if ((s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &client)) ||
      (s = RUDA_KERNEL_CREATE(add_one, &kernel)) ||
      (s = ruda_client_create_buffer(client, data, sizeof data, &x))) {
    return fail(s);
  }

  /* guide-begin: record */
  /* Between begin and end, launches and writes on this stream are
   * recorded, not run. */
  ruda_graph_t *graph = NULL;
  if ((s = ruda_client_graph_begin(client)) ||
      (s = RUDA_LAUNCH(add_one, client, kernel, ruda_count_static(4, 1, 1), &x, 1000u)) ||
      (s = RUDA_LAUNCH(add_one, client, kernel, ruda_count_static(4, 1, 1), &x, 1000u)) ||
      (s = ruda_client_graph_end(client, &graph))) {
    return fail(s);
  }
  printf("recorded %zu launches\n", ruda_graph_num_launches(graph));
  /* guide-end: record */

  /* guide-begin: replay */
  /* Each replay runs both launches, with the buffer as it is now. */
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 1000; i++) data[i] = (float)(round * 10);
    if ((s = ruda_client_write(client, &x, data, sizeof data)) ||
        (s = ruda_client_graph_replay(client, graph)) ||
        (s = ruda_client_read(client, &x, data, sizeof data))) {
      return fail(s);
    }
    printf("round %d: x[0] = %g, x[999] = %g\n", round, data[0], data[999]);
  }
  ruda_graph_release(graph); /* the buffers it used are released with it */
  /* guide-end: replay */

  ruda_handle_release(&x);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  return data[999] == 22.0f ? 0 : 1;
}
