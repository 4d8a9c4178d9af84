/* Memory and handles: ownership, views, bindings, copies and what release
 * means, watched through the stream's memory usage. */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

static uint64_t live_allocations(ruda_client_t *c) {
  ruda_memory_usage_t u = {0};
  ruda_status_t s = ruda_client_memory_usage(c, &u);
  if (s) exit(fail(s));
  return u.number_allocs;
}

int main(void) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_client_create(cpu, &c);
  if (s) return fail(s);

  /* guide-begin: create */
  float values[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  ruda_handle_t a;
  /* The data is copied before the call returns: `values` may change now. */
  if ((s = ruda_client_create_buffer(c, values, sizeof values, &a))) return fail(s);
  values[0] = 100;
  float back[8];
  if ((s = ruda_client_read(c, &a, back, sizeof back))) return fail(s);
  printf("read back: %g .. %g (%" PRIu64 " bytes)\n", back[0], back[7], ruda_handle_size_in_used(&a));
  /* guide-end: create */

  /* guide-begin: clone */
  ruda_handle_t b = ruda_handle_clone(&a); /* a second reference, owned too */
  printf("shared by two handles: can_mut = %d\n", ruda_handle_can_mut(&a));
  ruda_handle_release(&b); /* drops b's reference only; a is untouched */
  printf("after releasing the clone: can_mut = %d\n", ruda_handle_can_mut(&a));
  /* guide-end: clone */

  /* guide-begin: view */
  ruda_handle_t middle = ruda_handle_clone(&a);
  if ((s = ruda_handle_offset_start(&middle, 2 * sizeof(float))) ||
      (s = ruda_handle_offset_end(&middle, 2 * sizeof(float))))
    return fail(s);
  float four[4];
  if ((s = ruda_client_read(c, &middle, four, sizeof four))) return fail(s);
  printf("view of %" PRIu64 " bytes: %g %g %g %g\n", ruda_handle_size_in_used(&middle), four[0],
         four[1], four[2], four[3]);
  ruda_handle_release(&middle);
  /* guide-end: view */

  /* guide-begin: release */
  printf("live allocations: %" PRIu64 "\n", live_allocations(c));
  ruda_binding_t keep = ruda_handle_binding(&a); /* keeps the memory, not a handle */
  ruda_handle_release(&a);
  printf("handle released, binding held: %" PRIu64 "\n", live_allocations(c));
  ruda_binding_release(&keep); /* the last reference: the slice is free again */
  printf("binding released: %" PRIu64 "\n", live_allocations(c));

  ruda_memory_usage_t u = {0};
  if ((s = ruda_client_memory_usage(c, &u))) return fail(s);
  printf("pool keeps its pages: %s\n", u.bytes_reserved > 0 ? "yes" : "no");
  if ((s = ruda_client_memory_cleanup(c)) || (s = ruda_client_memory_usage(c, &u))) return fail(s);
  printf("after memory_cleanup: %" PRIu64 " bytes reserved\n", u.bytes_reserved);
  /* guide-end: release */

  /* guide-begin: stale */
  ruda_handle_t h;
  if ((s = ruda_client_empty(c, 1024, &h))) return fail(s);
  ruda_handle_t copy = h; /* the same reference: not a clone */
  ruda_handle_release(&h);  /* zeroes h; `copy` is now stale */
  printf("released handle is empty: %d\n", ruda_handle_is_empty(&h));
  float one;
  s = ruda_client_read(c, &copy, &one, sizeof one); /* refused, nothing is read */
  printf("read through a stale copy: %s\n", ruda_error_kind_name(ruda_status_kind(s)));
  ruda_status_free(s);
  ruda_handle_release(&copy); /* a stale copy: releasing it does nothing */
  /* guide-end: stale */

  /* guide-begin: device_usage */
  ruda_handle_t d;
  if ((s = ruda_client_empty(c, 4096, &d))) return fail(s);
  ruda_memory_usage_t dev = {0};
  /* Every stream's pools of the device together (ruda_client_memory_usage
   * is the calling stream's only). */
  if ((s = ruda_client_memory_usage_device(c, &dev))) return fail(s);
  char report[512];
  ruda_memory_usage_format(&dev, report, sizeof report);
  printf("%s", report);
  ruda_handle_release(&d);
  /* guide-end: device_usage */

  ruda_client_release(c);
  return 0;
}
