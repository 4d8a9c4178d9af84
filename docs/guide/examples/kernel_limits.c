/* Launch limits: a launch the device's properties rule out (here more
 * units per ruda than cpu:0 allows) is refused by ruda_client_launch
 * itself, before anything is queued, and the stream stays healthy. */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

static void nothing(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

int main(void) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *c = NULL;
  ruda_kernel_t *k = NULL;
  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &c))) return fail(s);
  const ruda_device_properties_t *p = ruda_client_properties(c);
  printf("cpu:0 allows %" PRIu32 " units per ruda\n", p->hardware.max_units_per_ruda);

  /* guide-begin: refused */
  ruda_kernel_code_t code = ruda_kernel_code_cpu(nothing);
  ruda_kernel_desc_t desc = {.name = "too_wide", .ruda_dim = {2048, 1, 1}, /* 2048 units */
                             .code = &code, .num_code = 1};
  if ((s = ruda_kernel_create(&desc, &k))) return fail(s);
  ruda_kernel_args_t none = {0};
  s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &none);
  /* Refused by the call itself: nothing was queued. */
  printf("launch: %s\n", s ? ruda_error_kind_name(ruda_status_kind(s)) : "ok");
  ruda_status_t limit = ruda_status_find(s, RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  printf("too many resources: %s\n", limit ? "yes" : "no");
  char *text = ruda_status_to_string(s);
  printf("%s\n", text);
  free(text);
  ruda_status_free(s);
  s = ruda_client_sync(c); /* the stream is healthy: nothing comes back here */
  printf("next sync: %s\n", s ? ruda_error_kind_name(ruda_status_kind(s)) : "ok");
  /* guide-end: refused */
  if (s) return fail(s);

  ruda_kernel_release(k);
  ruda_client_release(c);
  return 0;
}
