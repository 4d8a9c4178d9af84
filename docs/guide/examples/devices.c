/* Devices and clients: which backends can run here, what a device offers,
 * and clients on the default and on an explicit stream. */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

int main(void) {
  /* guide-begin: backends */
  const uint16_t types[] = {RUDA_DEVICE_TYPE_CPU, RUDA_DEVICE_TYPE_CUDA, RUDA_DEVICE_TYPE_OPENCL};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    uint32_t n = 0;
    ruda_status_t s = ruda_device_count(types[t], &n);
    if (s) { /* RUDA_ERR_UNAVAILABLE, with the reason */
      printf("%s: unavailable (%s)\n", ruda_device_type_name(types[t]), ruda_status_reason(s));
      ruda_status_free(s);
      continue;
    }
    printf("%s: %" PRIu32 " device(s)\n", ruda_device_type_name(types[t]), n);
  }
  /* guide-end: backends */

  /* guide-begin: ids */
  /* A device id is two numbers: the backend's type and the device's index
   * among that backend's devices. ruda_device_id_format names it. */
  ruda_device_id_t second_gpu = {.type_id = RUDA_DEVICE_TYPE_CUDA, .index_id = 1};
  char name[32];
  ruda_device_id_format(second_gpu, name, sizeof name);
  printf("{type_id %u, index_id %u} is %s\n", (unsigned)second_gpu.type_id,
         (unsigned)second_gpu.index_id, name);
  /* guide-end: ids */

  /* guide-begin: properties */
  ruda_device_id_t id;
  ruda_status_t s = ruda_device_parse("cpu:0", &id); /* or "cuda:1", "opencl" */
  if (s) return fail(s);
  ruda_client_t *client = NULL;
  if ((s = ruda_client_create(id, &client))) return fail(s);
  const ruda_device_properties_t *p = ruda_client_properties(client);
  char memory[32], l3[32];
  ruda_bytes_format(p->hardware.total_memory, memory, sizeof memory);
  ruda_bytes_format(p->hardware.cache_l3, l3, sizeof l3);
  printf("%s: %s, %s memory, L3 %s\n", "cpu:0", ruda_client_info(client), memory, l3);
  printf("at most %" PRIu32 " units per ruda, %" PRIu64 " bytes of shared memory\n",
         p->hardware.max_units_per_ruda, p->hardware.max_shared_memory_size);
  printf("f64 supported: %s\n", ruda_device_properties_has(p, RUDA_FEATURE_F64) ? "yes" : "no");
  /* guide-end: properties */

  /* guide-begin: streams */
  /* By default a client works on the calling thread's stream. A client
   * pinned to a stream of its own orders its work apart from that. */
  ruda_stream_id_t mine = ruda_client_stream(client);
  ruda_client_t *pinned = NULL;
  if ((s = ruda_client_on_stream(client, ruda_stream_id_next(), &pinned))) return fail(s);
  printf("this thread's stream %" PRIu64 ", the pinned client's stream %" PRIu64 "\n",
         mine.value, ruda_client_stream(pinned).value);
  printf("same device: %s\n",
         ruda_device_id_eq(ruda_client_device(client), ruda_client_device(pinned)) ? "yes" : "no");
  ruda_client_release(pinned);
  ruda_client_release(client);
  /* guide-end: streams */
  return 0;
}
