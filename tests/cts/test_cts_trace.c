/* Conformance: the timeline trace holds what docs/tools.md says, on every
 * backend: slices of the categories "kernel", "copy", "sync", "alloc" and
 * (where the backend has collectives) "collective" named after the
 * operation, and the device's "memory in use" and "memory reserved"
 * counter tracks; the file is valid JSON. */
#include "../unit/tools/json_check.h"
#include "cts.h"

TEST(the_trace_has_every_documented_category_and_counter) {
  ruda_client_t *c = cts_client();
  const char *dev = getenv("RUDA_CTS_DEVICE");
  char path[512];
  snprintf(path, sizeof path, "%s/trace_%s.json", rt_tmpdir(), dev && *dev ? dev : "cpu:0");
  ruda_status_t started = ruda_trace_start(path);
  if (!started && !ruda_trace_active()) SKIP("no trace");
  ASSERT_OK(started);

  uint32_t x[CTS_UNITS] = {0};
  ruda_handle_t h = cts_upload(c, x, sizeof x); /* alloc, copy */
  ruda_kernel_t *k = cts_kernel_inc_u32();
  uint64_t n = CTS_UNITS;
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {&n, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args)); /* kernel */
  ASSERT_OK(ruda_client_sync(c));                                          /* sync */
  ASSERT_OK(ruda_client_read(c, &h, x, sizeof x));                         /* copy */
  ASSERT_UEQ(x[0], 1);
  /* A collective over this one device, where the backend has them. */
  ruda_handle_t out = cts_empty(c, sizeof x);
  ruda_status_t cs = ruda_client_all_reduce(&c, 1, &h, &out, RUDA_ELEM_U32, RUDA_REDUCE_SUM);
  bool collectives = cs == NULL;
  if (cs) {
    ASSERT_EQ(ruda_status_kind(cs), RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION);
    ruda_status_free(cs);
  }
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_memory_cleanup(c);
  ruda_handle_release(&out);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  ruda_trace_stop();

  char *text = rt_read_file(path);
  ASSERT_NOT_NULL(text);
  char err[128];
  jv_t *root = jv_parse(text, err, sizeof err);
  if (!root) rt_fail_msg(__FILE__, __LINE__, "the trace is not JSON: %s", err);
  free(text);
  ASSERT_NOT_NULL(root);
  const jv_t *events = jv_get(root, "traceEvents");
  ASSERT_NOT_NULL(events);
  static const char *const cats[] = {"kernel", "copy", "sync", "alloc"};
  for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++) {
    if (!jv_find_event(events, "X", "cat", cats[i]))
      rt_fail_msg(__FILE__, __LINE__, "no \"%s\" slice in %s", cats[i], path);
  }
  ASSERT_NOT_NULL(jv_find_event(events, "X", "name", "inc_u32"));
  if (collectives) {
    const jv_t *coll = jv_find_event(events, "X", "cat", "collective");
    ASSERT_NOT_NULL(coll);
    ASSERT_STR_EQ(jv_str(coll, "name"), "all-reduce");
  } else {
    printf("    (%s has no collectives: no \"collective\" slice expected)\n", dev ? dev : "?");
  }
  ASSERT_NULL(jv_find_event(events, "X", "cat", "comm")); /* the old name */
  ASSERT_NOT_NULL(jv_find_event(events, "C", "name", "memory in use"));
  ASSERT_NOT_NULL(jv_find_event(events, "C", "name", "memory reserved"));
  jv_free(root);
}
