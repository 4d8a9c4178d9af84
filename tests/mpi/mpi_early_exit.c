/* A rank that leaves early, three ways (argv[1]):
 *
 *   finalize (default)  rank 1 finalizes and exits cleanly while rank 0
 *                       waits in an all-reduce it never joins. Rank 0 must
 *                       not hang: after RUDA_COMM_TIMEOUT (2 s under CTest)
 *                       its watchdog reports what it waited for and ends
 *                       the job (mpi_early_exit_np2 passes on that report).
 *   exit                rank 1 dies without finalizing (_exit(3)) while
 *                       both ranks are inside an all-reduce of 64 MiB;
 *   kill                the same with raise(SIGKILL).
 *
 * In the last two the job must end with a non-zero status within the
 * test's bound (the launcher ends it when it sees a rank die; failing that,
 * rank 0's watchdog does), never with rank 0 reporting success
 * (mpi_early_exit_exit_np2, mpi_early_exit_kill_np2 through
 * expect_job_failure.sh). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ruda/mpi.h"
#include "ruda/ruda.h"

static int fail(ruda_status_t s) {
  char *t = ruda_status_to_string(s);
  fprintf(stderr, "error: %s\n", t ? t : "?");
  free(t);
  ruda_status_free(s);
  return 1;
}

/* Both ranks queue 64 MiB all-reduces (RUDA_MPI_INLINE_BYTES=0); rank 1
 * dies while its worker is inside one. Rank 0 waits for the result. */
static int die_mid_run(ruda_group_t *world, ruda_client_t *c, bool kill_it) {
  size_t n = (64u << 20) / sizeof(float);
  float *v = malloc(n * sizeof *v);
  if (!v) return 1;
  for (size_t i = 0; i < n; i++) v[i] = 1.0f;
  ruda_handle_t big;
  ruda_status_t s = ruda_client_create_buffer(c, v, n * sizeof *v, &big);
  free(v);
  if (s) return fail(s);
  if ((s = ruda_client_sync(c))) return fail(s);
  if ((s = ruda_group_barrier(world))) return fail(s);
  for (int i = 0; i < 4 && !s; i++) {
    s = ruda_group_all_reduce(world, c, &big, &big, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  }
  if (s) return fail(s);
  if (ruda_group_rank(world) == 1) {
    usleep(2000); /* the worker is inside MPI_Allreduce by now */
    printf("rank 1 dies without finalizing (%s)\n", kill_it ? "SIGKILL" : "_exit(3)");
    fflush(stdout);
    if (kill_it) raise(SIGKILL);
    _exit(3);
  }
  s = ruda_client_sync(c);
  if (s) { /* an error instead of a hang: what is asked for */
    fprintf(stderr, "rank 0: the all-reduce failed: ");
    return fail(s);
  }
  /* Not reached while rank 1 is gone: the job ends first. */
  fprintf(stderr, "rank 0 finished an all-reduce without its peer\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "finalize";
  /* Rank 1 must die while its worker is inside a queued all-reduce: an
   * operation on an idle device would run on this thread instead, and
   * would be over before rank 1 dies. */
  if (strcmp(mode, "exit") == 0 || strcmp(mode, "kill") == 0) setenv("RUDA_MPI_INLINE_BYTES", "0", 1);
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
  if (strcmp(mode, "exit") == 0 || strcmp(mode, "kill") == 0) {
    return die_mid_run(world, c, strcmp(mode, "kill") == 0);
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
