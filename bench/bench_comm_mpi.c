/* comm across MPI ranks (`mpirun -np N ruda bench comm`): ruda's group
 * all-reduce and broadcast of f32 on each rank's cpu:0 against
 * MPI_Allreduce and MPI_Bcast called directly on plain host buffers, in
 * alternating samples of the same run. Every sample starts after a barrier
 * and its time is the slowest rank's. Bus bandwidth as nccl-tests defines
 * it (all-reduce: algbw x 2(n-1)/n; broadcast: algbw); 4 KiB reports the
 * time per operation. Only rank 0 prints. Built only with the MPI
 * transport. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/mpi.h"
#include "ruda/ruda.h"

#define BENCH "comm"

/* bench_comm.c: the name of a case's size, by the bytes it moves. */
void ruda_bench_comm_size_name(uint64_t bytes, char *out, size_t cap);

typedef struct mpi_side {
  ruda_group_t *g;
  ruda_client_t *c;
  ruda_handle_t src, dst;
  float *hsrc, *hdst;
  size_t count;
  bool bcast;
  ruda_status_t err;
  int mpi_rc;
} mpi_side_t;

/* The slowest rank's time of a sample. */
static double slowest(double ns) {
  double max = ns;
  MPI_Allreduce(&ns, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

static double ruda_sample(void *ctx, size_t inner) {
  mpi_side_t *r = ctx;
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; i++) {
    ruda_bench_keep_error(&r->err, r->bcast ? ruda_group_broadcast(r->g, r->c, 0, &r->dst)
                                            : ruda_group_all_reduce(r->g, r->c, &r->src, &r->dst,
                                                                    RUDA_ELEM_F32,
                                                                    RUDA_REDUCE_SUM));
  }
  ruda_bench_keep_error(&r->err, ruda_client_sync(r->c));
  return slowest((double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1));
}

static double mpi_sample(void *ctx, size_t inner) {
  mpi_side_t *r = ctx;
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; i++) {
    int rc = r->bcast ? MPI_Bcast(r->hdst, (int)r->count, MPI_FLOAT, 0, MPI_COMM_WORLD)
                      : MPI_Allreduce(r->hsrc, r->hdst, (int)r->count, MPI_FLOAT, MPI_SUM,
                                      MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) r->mpi_rc = rc;
  }
  return slowest((double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1));
}

bool ruda_bench_comm_mpi(ruda_bench_t *b) {
  if (!ruda_world_launcher()) return false; /* not started by a launcher */
  ruda_group_t *world = NULL;
  ruda_status_t s = ruda_world_init(NULL, NULL, &world);
  if (s) {
    ruda_bench_fail_status(b, BENCH, "mpi", s);
    return true;
  }
  uint32_t rank = ruda_group_rank(world), n = ruda_group_size(world);
  if (rank != 0 && !freopen("/dev/null", "w", stdout)) {
    /* no /dev/null: the other ranks' rows go to stdout too */
  }
  ruda_client_t *c = NULL;
  ruda_device_id_t dev;
  s = ruda_group_device(world, "cpu", &dev);
  if (!s) s = ruda_client_create(dev, &c);
  if (s) {
    ruda_bench_fail_status(b, BENCH, "mpi", s);
    ruda_group_release(world);
    return true;
  }
  static const struct { uint64_t full, quick, smoke; } sizes[] = {
      {4096, 4096, 4096},
      {1u << 20, 1u << 20, 1u << 14},
      {64u << 20, 8u << 20, 1u << 16},
  };
  for (int bcast = 0; bcast < 2; bcast++) {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      uint64_t bytes = ruda_bench_pick(b, sizes[si].full, sizes[si].quick, sizes[si].smoke);
      bool latency = sizes[si].full <= 4096;
      char name[64], tag[24];
      ruda_bench_comm_size_name(bytes, tag, sizeof tag);
      snprintf(name, sizeof name, "%s_%s_np%u", bcast ? "broadcast" : "allreduce", tag, n);
      mpi_side_t r;
      memset(&r, 0, sizeof r);
      r.g = world;
      r.c = c;
      r.bcast = bcast;
      r.count = (size_t)(bytes / sizeof(float));
      r.hsrc = calloc(r.count + 1, sizeof(float));
      r.hdst = calloc(r.count + 1, sizeof(float));
      s = r.hsrc && r.hdst ? NULL : ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, bytes);
      /* Written before use, so both sides work on real pages: calloc'ed
       * memory that is only read maps the kernel's shared zero page, which
       * stays in cache and would flatter the direct side. */
      for (size_t i = 0; !s && i <= r.count; i++) {
        r.hsrc[i] = (float)(i % 7 + rank);
        r.hdst[i] = 1.0f;
      }
      if (!s) s = ruda_client_create_buffer(c, r.hsrc, bytes, &r.src);
      if (!s) s = ruda_client_create_buffer(c, r.hdst, bytes, &r.dst);
      if (!s) s = ruda_client_sync(c);
      if (s) {
        ruda_bench_fail_status(b, BENCH, name, s);
      } else {
        size_t reps = ruda_bench_pick(b, latency ? 15 : 9, 5, 1);
        size_t inner = ruda_bench_pick(b, latency ? 2000 : bytes >= (32u << 20) ? 3 : 50,
                                       latency ? 200 : 3, 1);
        ruda_bench_stats_t tr, tb;
        ruda_bench_compare(ruda_sample, &r, mpi_sample, &r, 1, reps, inner, &tr, &tb);
        char base[96];
        snprintf(base, sizeof base, "%s directly, host buffers (%u ranks)",
                 bcast ? "MPI_Bcast" : "MPI_Allreduce", n);
        if (r.mpi_rc != MPI_SUCCESS) {
          ruda_bench_fail(b, BENCH, name, "the direct MPI side failed (code %d)", r.mpi_rc);
        } else if (!ruda_bench_fail_status(b, BENCH, name, r.err)) {
          if (latency) {
            ruda_bench_report(b, BENCH, name, "us per op", ruda_bench_stats_scale(tr, 1e-3),
                              ruda_bench_stats_scale(tb, 1e-3), base, true);
          } else {
            double factor = bcast ? 1.0 : 2.0 * (double)(n - 1) / (double)(n ? n : 1);
            if (n == 1) factor = 1.0; /* one rank has no bus: algbw */
            ruda_bench_report(b, BENCH, name, n > 1 ? "GB/s busbw" : "GB/s algbw",
                              ruda_bench_stats_rate(tr, (double)bytes * factor, 1),
                              ruda_bench_stats_rate(tb, (double)bytes * factor, 1), base, false);
          }
        }
        r.err = NULL;
      }
      ruda_handle_release(&r.src);
      ruda_handle_release(&r.dst);
      free(r.hsrc);
      free(r.hdst);
    }
  }
  ruda_client_release(c);
  ruda_group_release(world);
  return true;
}
