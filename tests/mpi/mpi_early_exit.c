/* A rank that leaves early: rank 1 finalizes and exits while rank 0 waits
 * in an all-reduce it never joins. Rank 0 must not hang: after
 * RUDA_COMM_TIMEOUT (2 s under CTest) its watchdog reports what it waited
 * for and ends the job. CTest (mpi_early_exit_np2) passes when that report
 * appears within the test's time limit. */
#include <stdio.h>
#include <stdlib.h>

#include "ruda/mpi.h"
#include "ruda/ruda.h"

static int fail(ruda_status_t s) {
  char *t = ruda_status_to_string(s);
  fprintf(stderr, "error: %s\n", t ? t : "?");
  free(t);
  ruda_status_free(s);
  return 1;
}

int main(int argc, char **argv) {
  ruda_group_t *world = NULL;
  ruda_status_t s = ruda_world_init(&argc, &argv, &world);
  if (s) return fail(s);
  ruda_client_t *c = NULL;
  ruda_device_id_t dev;
  if ((s = ruda_group_device(world, "cpu", &dev)) || (s = ruda_client_create(dev, &c))) return fail(s);
  float v[16] = {1};
  ruda_handle_t h;
  if ((s = ruda_client_create_buffer(c, v, sizeof v, &h))) return fail(s);
  /* One all-reduce together, so the world is known to work. */
  if ((s = ruda_group_all_reduce(world, c, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_SUM)) ||
      (s = ruda_client_sync(c))) {
    return fail(s);
  }
  if (ruda_group_rank(world) == 1) {
    printf("rank 1 leaves early\n");
    fflush(stdout);
    ruda_handle_release(&h);
    ruda_client_release(c);
    ruda_group_release(world);
    ruda_status_free(ruda_world_finalize());
    return 0;
  }
  s = ruda_group_all_reduce(world, c, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  if (!s) s = ruda_client_sync(c);
  /* Not reached while rank 1 is gone: the watchdog ends the job first. */
  fprintf(stderr, "rank 0 finished an all-reduce without its peer\n");
  return s ? fail(s) : 1;
}
