/* The timeline trace under the MPI launcher (mpi_test_mpi_trace_np2/np4):
 * every rank traces to the same path, and each writes its own valid JSON
 * file (".rank<r>" before the extension), whose device process is named
 * "rank <r> cpu:0" with a pid of its own; the all-reduce across the ranks
 * is a "collective" slice named after the operation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/tools/json_check.h"
#include "ruda/mpi.h"
#include "ruda/ruda.h"
#include "server/trace.h"
#include "test.h"

TEST(each_rank_writes_its_own_trace_with_its_rank) {
  ruda_group_t *world = NULL;
  ASSERT_OK(ruda_world_init(NULL, NULL, &world));
  uint32_t rank = ruda_group_rank(world), size = ruda_group_size(world);
  ruda_device_id_t dev;
  ASSERT_OK(ruda_group_device(world, "cpu:0", &dev));
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(dev, &c));

  const char *base = getenv("RUDA_TEST_TMP");
  if (!base || !*base) base = "/tmp";
  mkdir(base, 0777);
  char path[512], mine[600];
  snprintf(path, sizeof path, "%s/mpi_trace_np%u.json", base, size);
  snprintf(mine, sizeof mine, "%s/mpi_trace_np%u.rank%u.json", base, size, rank);
  ASSERT_OK(ruda_trace_start(path)); /* every rank names the same file */

  float v[16];
  for (int i = 0; i < 16; i++) v[i] = (float)rank;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  ASSERT_OK(ruda_group_all_reduce(world, c, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ASSERT_OK(ruda_client_read(c, &h, v, sizeof v));
  ASSERT_DBL_NEAR(v[0], (double)size * (size - 1) / 2, 0);
  ruda_handle_release(&h);
  ruda_trace_stop();
  ASSERT_OK(ruda_group_barrier(world));

  char *text = rt_read_file(mine);
  if (!text) rt_fail_msg(__FILE__, __LINE__, "rank %u wrote no %s", rank, mine);
  ASSERT_NOT_NULL(text);
  char err[128];
  jv_t *root = jv_parse(text, err, sizeof err);
  if (!root) rt_fail_msg(__FILE__, __LINE__, "%s is not JSON: %s", mine, err);
  free(text);
  ASSERT_NOT_NULL(root);
  const jv_t *events = jv_get(root, "traceEvents");
  ASSERT_NOT_NULL(events);
  /* The device's process: named with the rank, a pid no other rank uses. */
  char want[64];
  snprintf(want, sizeof want, "rank %u cpu:0", rank);
  bool named = false;
  double pid = ruda__trace_pid(dev) + (double)rank * 100000;
  for (size_t i = 0; i < events->len && !named; i++) {
    const jv_t *e = events->items[i];
    const char *n = jv_str(e, "name");
    const jv_t *p = jv_get(e, "pid");
    if (n && strcmp(n, "process_name") == 0 && p && p->num == pid)
      named = strcmp(jv_str(jv_get(e, "args"), "name"), want) == 0;
  }
  if (!named) rt_fail_msg(__FILE__, __LINE__, "no process %.0f named '%s' in %s", pid, want, mine);
  ASSERT_TRUE(named);
  const jv_t *coll = jv_find_event(events, "X", "cat", "collective");
  ASSERT_NOT_NULL(coll);
  ASSERT_STR_EQ(jv_str(coll, "name"), "all-reduce");
  ASSERT_NULL(jv_find_event(events, "X", "name", "host_call"));
  jv_free(root);
  ASSERT_OK(ruda_group_barrier(world));
  ruda_client_release(c);
  ruda_group_release(world);
}
