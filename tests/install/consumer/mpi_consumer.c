/* A program outside the ruda tree that uses the MPI transport, built with
 * the MPI compiler wrapper against an installed ruda, the way ruda/mpi.h
 * says (-lruda_mpi -lruda, or pkg-config's ruda_mpi): every rank all-reduces
 * (rank + 1) over its cpu:0 and checks the sum. Rank 0 prints "mpi consumer
 * ok" and every rank exits 0 when all is well. */
#include <ruda/mpi.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "consumer_fail.h"

#define N 64

/* This program's error report (consumer_fail.h). */
static int fail(const char *what, ruda_status_t s) {
  return consumer_fail("mpi consumer", what, s);
}

int main(int argc, char **argv) {
  ruda_group_t *world = NULL;
  ruda_client_t *c = NULL;
  ruda_handle_t x = {0};
  ruda_device_id_t dev;
  ruda_status_t s;
  if ((s = ruda_world_init(&argc, &argv, &world))) return fail("world", s);
  uint32_t rank = ruda_group_rank(world), size = ruda_group_size(world);
  float data[N];
  for (int i = 0; i < N; ++i) data[i] = (float)(rank + 1) * (float)(i + 1);
  if ((s = ruda_group_device(world, "cpu", &dev)) || (s = ruda_client_create(dev, &c)) ||
      (s = ruda_client_create_buffer(c, data, sizeof data, &x)) ||
      (s = ruda_group_all_reduce(world, c, &x, &x, RUDA_ELEM_F32, RUDA_REDUCE_SUM)) ||
      (s = ruda_client_read(c, &x, data, sizeof data)))
    return fail("all-reduce", s);
  float ranks = (float)size * (float)(size + 1) / 2.0f;
  for (int i = 0; i < N; ++i) {
    if (data[i] != ranks * (float)(i + 1)) {
      fprintf(stderr, "mpi consumer: rank %u: x[%d] = %g, expected %g\n", rank, i, data[i],
              ranks * (float)(i + 1));
      return 1;
    }
  }
  ruda_handle_release(&x);
  ruda_client_release(c);
  ruda_group_release(world);
  if ((s = ruda_world_finalize())) return fail("finalize", s);
  if (rank == 0) printf("mpi consumer ok: %u ranks, %d values checked\n", size, N);
  return 0;
}
