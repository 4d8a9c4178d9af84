/* Group operations across MPI ranks on the CPU backend, run by CTest under
 * the launcher with 2 and with 4 ranks (mpi_test_mpi_collectives_np2/np4):
 * the world and its ranks, every operation with sizes 0, 1, odd and large,
 * every element type MPI reduces with every op, rank r holding values
 * derived from r; send/recv between every pair; split groups; two groups
 * on two devices used from two threads at once; bad inputs answered at
 * once with clear errors, a size mismatch between send and recv reported
 * on the receiver's stream, and the devices usable afterwards.
 *
 * Every rank runs every test in the same order; a failing rank would leave
 * the others waiting, which the watchdog ends (RUDA_COMM_TIMEOUT, set low
 * by CTest). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/comm/collective_checks.h"
#include "mpi/mpi_internal.h"
#include "ruda/mpi.h"
#include "ruda/ruda.h"
#include "test.h"

static ruda_group_t *world;
static ruda_client_t *client;  /* cpu:0 of this process */
static ruda_client_t *client2; /* cpu:1, for the threaded test */
static uint32_t rank, size;

/* Read with the configuration, before any other ruda call: two CPU
 * devices, and each stream's host memory limited to 64 MiB, so that a
 * buffer fails on one rank only when that rank's stream already holds most
 * of it. */
#define CPU_LIMIT (64u << 20)
__attribute__((constructor)) static void two_cpu_devices(void) {
  setenv("RUDA_CPU_DEVICES", "2", 1);
  setenv("RUDA_CPU_MEMORY_LIMIT", "64MiB", 1);
}

static void setup(void) {
  if (world) return;
  ASSERT_OK(ruda_world_init(NULL, NULL, &world));
  rank = ruda_group_rank(world);
  size = ruda_group_size(world);
  ruda_device_id_t dev;
  ASSERT_OK(ruda_group_device(world, "cpu:0", &dev));
  ASSERT_OK(ruda_client_create(dev, &client));
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 1}, &client2));
}

static void expect_error_naming(ruda_status_t s, ruda_error_kind_t kind, const char *needle);

static const ruda_elem_type_t mpi_types[] = {RUDA_ELEM_F64, RUDA_ELEM_F32, RUDA_ELEM_F16,
                                             RUDA_ELEM_BF16, RUDA_ELEM_I8, RUDA_ELEM_I16,
                                             RUDA_ELEM_I32, RUDA_ELEM_I64, RUDA_ELEM_U8,
                                             RUDA_ELEM_U16, RUDA_ELEM_U32, RUDA_ELEM_U64};

/* MPI's sums wrap in the element type before a mean divides; the values
 * here are small enough that nothing wraps. */
static void check_all_reduce(ruda_group_t *g, ruda_elem_type_t t, ruda_reduce_op_t op,
                             size_t count, bool in_place) {
  uint32_t r = ruda_group_rank(g), n = ruda_group_size(g);
  size_t es = ruda_elem_type_size(t);
  ruda_handle_t src, dst;
  cc_make(client, t, r, 0, count, &src);
  if (in_place) dst = ruda_handle_clone(&src);
  else ASSERT_OK(ruda_client_empty(client, count * es, &dst));
  ASSERT_OK(ruda_group_all_reduce(g, client, &src, &dst, t, op));
  void *host = cc_read(client, &dst, count * es);
  for (size_t e = 0; e < count; e++) {
    double got = cc_load(t, host, e), want = cc_expect(t, op, n, e);
    if (!cc_close(t, got, want)) {
      CC_FAIL("all-reduce %s %s count=%zu: rank %u element %zu is %g, want %g", cc_type_name(t),
              cc_op_names[op], count, r, e, got, want);
    }
  }
  free(host);
  ruda_handle_release(&src);
  ruda_handle_release(&dst);
}

TEST(world_ranks_and_launcher) {
  setup();
  const char *env = getenv("OMPI_COMM_WORLD_SIZE");
  if (env) {
    ASSERT_EQ(size, atoi(env));
    ASSERT_STR_EQ(ruda_world_launcher(), "Open MPI");
    ASSERT_EQ(rank, atoi(getenv("OMPI_COMM_WORLD_RANK")));
    ASSERT_EQ(ruda_group_local_rank(world), atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
  }
  ASSERT_LT(rank, size);
  ASSERT_LE(ruda_group_local_size(world), size);
  /* a second init gives the same world */
  ruda_group_t *again = NULL;
  ASSERT_OK(ruda_world_init(NULL, NULL, &again));
  ASSERT_PTR_EQ(again, world);
  ruda_group_release(again);
  /* the local rank picks the device when the name has no index */
  ruda_device_id_t dev;
  ASSERT_OK(ruda_group_device(world, "cpu", &dev));
  ASSERT_EQ(dev.type_id, RUDA_DEVICE_TYPE_CPU);
  ASSERT_EQ(dev.index_id, ruda_group_local_rank(world) % 2);
  ASSERT_OK(ruda_group_device(world, "cpu:1", &dev));
  ASSERT_EQ(dev.index_id, 1);
  ASSERT_ERR_KIND(ruda_group_device(world, "gpu!", &dev), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_OK(ruda_group_barrier(world));
}

TEST(all_reduce_every_type_and_op) {
  setup();
  for (size_t ti = 0; ti < sizeof mpi_types / sizeof mpi_types[0]; ti++) {
    for (size_t oi = 0; oi < 4; oi++) check_all_reduce(world, mpi_types[ti], cc_ops[oi], 29, oi == 3);
  }
}

TEST(all_reduce_sizes) {
  setup();
  const size_t sizes[] = {0, 1, 3, 1001, (1u << 20) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    check_all_reduce(world, RUDA_ELEM_F32, RUDA_REDUCE_SUM, sizes[i], false);
    check_all_reduce(world, RUDA_ELEM_I64, RUDA_REDUCE_MEAN, sizes[i], true);
  }
}

TEST(reduce_scatter_every_type_and_op) {
  setup();
  const size_t counts[] = {0, 1, 7, 4099};
  for (size_t ti = 0; ti < sizeof mpi_types / sizeof mpi_types[0]; ti++) {
    for (size_t oi = 0; oi < 4; oi++) {
      for (size_t ci = 0; ci < 4; ci++) {
        if (ci == 3 && (ti % 3 || oi)) continue; /* the large size: a few types */
        ruda_elem_type_t t = mpi_types[ti];
        size_t es = ruda_elem_type_size(t), count = counts[ci];
        ruda_handle_t src, dst;
        cc_make(client, t, rank, 0, count * size, &src);
        ASSERT_OK(ruda_client_empty(client, count * es, &dst));
        ASSERT_OK(ruda_group_reduce_scatter(world, client, &src, &dst, t, cc_ops[oi]));
        void *host = cc_read(client, &dst, count * es);
        for (size_t e = 0; e < count; e++) {
          double got = cc_load(t, host, e), want = cc_expect(t, cc_ops[oi], size, rank * count + e);
          if (!cc_close(t, got, want)) {
            CC_FAIL("reduce-scatter %s %s: rank %u element %zu is %g, want %g", cc_type_name(t),
                    cc_op_names[oi], rank, e, got, want);
          }
        }
        free(host);
        ruda_handle_release(&src);
        ruda_handle_release(&dst);
      }
    }
  }
}

TEST(broadcast_every_root_and_size) {
  setup();
  const size_t sizes[] = {0, 1, 13, (1u << 20) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (uint32_t root = 0; root < size; root++) {
      ruda_handle_t buf;
      cc_make(client, RUDA_ELEM_U8, rank, 0, sizes[i], &buf);
      ASSERT_OK(ruda_group_broadcast(world, client, root, &buf));
      uint8_t *host = cc_read(client, &buf, sizes[i]);
      for (size_t e = 0; e < sizes[i]; e++) {
        if (host[e] != (uint8_t)cc_value(root, e)) {
          CC_FAIL("broadcast from %u: rank %u byte %zu is %u", root, rank, e, host[e]);
        }
      }
      free(host);
      ruda_handle_release(&buf);
    }
  }
}

TEST(all_gather_sizes_and_in_place) {
  setup();
  const size_t sizes[] = {0, 1, 13, (1u << 18) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t b = sizes[i];
    ruda_handle_t src, dst;
    cc_make(client, RUDA_ELEM_U8, rank, 0, b, &src);
    ASSERT_OK(ruda_client_empty(client, b * size, &dst));
    ASSERT_OK(ruda_group_all_gather(world, client, &src, &dst));
    uint8_t *host = cc_read(client, &dst, b * size);
    for (uint32_t k = 0; k < size; k++) {
      for (size_t e = 0; e < b; e++) {
        if (host[k * b + e] != (uint8_t)cc_value(k, e)) {
          CC_FAIL("all-gather of %zu: rank %u block %u byte %zu is %u", b, rank, k, e,
                  host[k * b + e]);
        }
      }
    }
    free(host);
    /* in place: src is this rank's block of dst */
    ruda_handle_t view = ruda_handle_clone(&dst);
    ASSERT_OK(ruda_handle_offset_start(&view, rank * b));
    ASSERT_OK(ruda_handle_offset_end(&view, (size - 1 - rank) * b));
    ASSERT_OK(ruda_group_all_gather(world, client, &view, &dst));
    host = cc_read(client, &dst, b * size);
    for (uint32_t k = 0; k < size && b; k++) ASSERT_EQ(host[k * b + b - 1], (uint8_t)cc_value(k, b - 1));
    free(host);
    ruda_handle_release(&view);
    ruda_handle_release(&src);
    ruda_handle_release(&dst);
  }
}

/* a sends n bytes, b receives them and sends them back (the ranks other
 * than a and b do nothing). */
static void send_recv_pair(size_t a, size_t b, size_t n, void *ctx) {
  (void)ctx;
  if (rank == a) {
    ruda_handle_t src, back;
    cc_make(client, RUDA_ELEM_U8, a, 0, n, &src);
    ASSERT_OK(ruda_group_send(world, client, &src, (uint32_t)b));
    ASSERT_OK(ruda_group_recv(world, client, n, (uint32_t)b, &back));
    uint8_t *host = cc_read(client, &back, n);
    for (size_t e = 0; e < n; e++) {
      if (host[e] != (uint8_t)cc_value(a, e)) CC_FAIL("send/recv %zu->%zu->%zu: byte %zu", a, b, a, e);
    }
    free(host);
    ruda_handle_release(&src);
    ruda_handle_release(&back);
  } else if (rank == b) {
    ruda_handle_t got;
    ASSERT_OK(ruda_group_recv(world, client, n, (uint32_t)a, &got));
    ASSERT_UEQ(ruda_handle_size_in_used(&got), n);
    ASSERT_OK(ruda_group_send(world, client, &got, (uint32_t)a));
    uint8_t *host = cc_read(client, &got, n);
    for (size_t e = 0; e < n; e++) {
      if (host[e] != (uint8_t)cc_value(a, e)) CC_FAIL("send/recv %zu->%zu: byte %zu", a, b, e);
    }
    free(host);
    ruda_handle_release(&got);
  }
}

/* Every ordered pair (a, b): a sends, b receives and sends it back. */
TEST(send_recv_every_pair) {
  setup();
  const size_t sizes[] = {0, 1, 77, (1u << 20) + 1};
  cc_each_pair(size, sizes, sizeof sizes / sizeof sizes[0], send_recv_pair, NULL);
  ASSERT_OK(ruda_group_barrier(world));
}

/* A send of a strided view (every other column of a 5 x 8 matrix of i32)
 * arrives packed and contiguous, as in one process; so do a contiguous
 * prefix (two rows), and a large strided view (1 MiB packed out of 2 MiB,
 * beyond what runs on the caller's thread). Rank 0 sends, the last rank
 * receives. */
TEST(send_view_packs_on_the_sender) {
  setup();
  uint32_t last = size - 1;
  enum { R = 5, C = 8, BR = 1024, BC = 512 };
  int32_t m[R][C];
  for (int r = 0; r < R; r++) {
    for (int c = 0; c < C; c++) m[r][c] = r * 100 + c;
  }
  int32_t *big = malloc(sizeof(int32_t) * BR * BC);
  ASSERT_TRUE(big != NULL);
  for (int i = 0; i < BR * BC; i++) big[i] = i;
  ruda_shape_t cols = {.rank = 2, .dims = {R, C / 2}};
  ruda_strides_t cols_st = {.rank = 2, .values = {C, 2}};
  ruda_shape_t rows = {.rank = 2, .dims = {2, C}};
  ruda_strides_t rows_st = {.rank = 2, .values = {C, 1}};
  ruda_shape_t bcols = {.rank = 2, .dims = {BR, BC / 2}};
  ruda_strides_t bcols_st = {.rank = 2, .values = {BC, 2}};
  if (size >= 2 && rank == 0) {
    ruda_handle_t src, bsrc;
    ASSERT_OK(ruda_client_create_buffer(client, m, sizeof m, &src));
    ASSERT_OK(ruda_client_create_buffer(client, big, sizeof(int32_t) * BR * BC, &bsrc));
    ASSERT_OK(ruda_client_sync(client));
    ASSERT_OK(ruda_group_send_view(world, client, &src, &cols, &cols_st, RUDA_ELEM_I32, last));
    ASSERT_OK(ruda_group_send_view(world, client, &src, &rows, &rows_st, RUDA_ELEM_I32, last));
    ASSERT_OK(ruda_group_send_view(world, client, &bsrc, &bcols, &bcols_st, RUDA_ELEM_I32, last));
    ASSERT_OK(ruda_group_send_view(world, client, &src, NULL, NULL, RUDA_ELEM_I32, last));
    ASSERT_OK(ruda_client_sync(client));
    /* Refused at once, nothing sent. */
    ruda_shape_t wide = {.rank = 2, .dims = {R, C}};
    ruda_strides_t wide_st = {.rank = 2, .values = {C + 1, 1}};
    expect_error_naming(ruda_group_send_view(world, client, &src, &wide, &wide_st, RUDA_ELEM_I32, last),
                        RUDA_ERR_INVALID_ARGUMENT, "the view spans 176 bytes, the handle has 160");
    expect_error_naming(ruda_group_send_view(world, client, &src, &cols, NULL, RUDA_ELEM_I32, last),
                        RUDA_ERR_INVALID_ARGUMENT, "give both shape and strides");
    ruda_strides_t flat = {.rank = 1, .values = {1}};
    expect_error_naming(ruda_group_send_view(world, client, &src, &cols, &flat, RUDA_ELEM_I32, last),
                        RUDA_ERR_INVALID_ARGUMENT, "rank differs");
    expect_error_naming(ruda_group_send_view(world, client, &src, &cols, &cols_st,
                                             (ruda_elem_type_t)999, last),
                        RUDA_ERR_INVALID_ARGUMENT, "unknown element type");
    ASSERT_OK(ruda_client_sync(client));
    ruda_handle_release(&src);
    ruda_handle_release(&bsrc);
  } else if (size >= 2 && rank == last) {
    ruda_handle_t a, b, c, d;
    ASSERT_OK(ruda_group_recv(world, client, R * (C / 2) * sizeof(int32_t), 0, &a));
    ASSERT_OK(ruda_group_recv(world, client, 2 * C * sizeof(int32_t), 0, &b));
    ASSERT_OK(ruda_group_recv(world, client, BR * (BC / 2) * sizeof(int32_t), 0, &c));
    ASSERT_OK(ruda_group_recv(world, client, sizeof m, 0, &d));
    int32_t got[R][C / 2], two[2][C], whole[R][C];
    ASSERT_OK(ruda_client_read(client, &a, got, sizeof got));
    for (int r = 0; r < R; r++) {
      for (int k = 0; k < C / 2; k++) ASSERT_EQ(got[r][k], r * 100 + 2 * k);
    }
    ASSERT_OK(ruda_client_read(client, &b, two, sizeof two));
    for (int r = 0; r < 2; r++) {
      for (int k = 0; k < C; k++) ASSERT_EQ(two[r][k], r * 100 + k);
    }
    int32_t *bgot = malloc(sizeof(int32_t) * BR * (BC / 2));
    ASSERT_TRUE(bgot != NULL);
    ASSERT_OK(ruda_client_read(client, &c, bgot, sizeof(int32_t) * BR * (BC / 2)));
    for (int r = 0; r < BR; r++) {
      for (int k = 0; k < BC / 2; k++) {
        if (bgot[r * (BC / 2) + k] != r * BC + 2 * k) CC_FAIL("big view: [%d][%d]", r, k);
      }
    }
    free(bgot);
    ASSERT_OK(ruda_client_read(client, &d, whole, sizeof whole));
    ASSERT_EQ(memcmp(whole, m, sizeof m), 0);
    ruda_handle_release(&a);
    ruda_handle_release(&b);
    ruda_handle_release(&c);
    ruda_handle_release(&d);
  }
  free(big);
  ASSERT_OK(ruda_group_barrier(world));
}

/* Small operations on an idle CPU device run on the caller's thread (no
 * hand-off to the worker); behind queued work they are queued, and the
 * call returns at once. Both give the same results, in stream order. */
static ruda_status_t hold_worker(void *ctx, void *src, uint64_t sn, void *dst, uint64_t dn) {
  (void)src, (void)sn, (void)dst, (void)dn;
  atomic_int *release = ctx;
  while (!atomic_load(release)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void nothing(void *ctx) { (void)ctx; }

/* Waits (bounded) until the device has finished what was queued, as a
 * later operation's check sees it. */
static void wait_idle(ruda_client_t *c) {
  bool ran = false;
  for (int i = 0; i < 10000 && !ran; i++) ASSERT_OK(ruda__client_run_if_idle(c, nothing, NULL, &ran));
  ASSERT_TRUE(ran);
}

TEST(small_operations_on_the_callers_thread) {
  setup();
  /* The size limit is RUDA_MPI_INLINE_BYTES's (none when unset). */
  bool default_limit = !getenv("RUDA_MPI_INLINE_BYTES") && !getenv("RUDA_TRACE");
  float v[64];
  for (int i = 0; i < 64; i++) v[i] = (float)(rank + 1);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(client, v, sizeof v, &h));
  ASSERT_OK(ruda_client_sync(client));
  /* Idle: on this thread. */
  wait_idle(client);
  uint64_t runs = ruda__mpi_inline_runs();
  ASSERT_OK(ruda_group_all_reduce(world, client, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  if (default_limit) ASSERT_UEQ(ruda__mpi_inline_runs(), runs + 1);
  ASSERT_OK(ruda_client_read(client, &h, v, sizeof v));
  float sum = (float)size * (float)(size + 1) / 2;
  ASSERT_DBL_NEAR(v[0], sum, 1e-6);
  ASSERT_DBL_NEAR(v[63], sum, 1e-6);
  /* Busy (the worker held by a host call): queued, and back at once. */
  atomic_int release = 0;
  ASSERT_OK(ruda__client_host_call(client, NULL, NULL, "hold", hold_worker, &release, NULL));
  runs = ruda__mpi_inline_runs();
  ASSERT_OK(ruda_group_all_reduce(world, client, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ASSERT_OK(ruda_group_broadcast(world, client, size - 1, &h));
  ASSERT_UEQ(ruda__mpi_inline_runs(), runs);
  atomic_store(&release, 1);
  ASSERT_OK(ruda_client_read(client, &h, v, sizeof v));
  ASSERT_DBL_NEAR(v[0], sum * (float)size, 1e-4);
  /* A write queued just before: the all-reduce comes after it, whichever
   * way it runs. */
  for (int i = 0; i < 64; i++) v[i] = (float)i;
  ASSERT_OK(ruda_client_write(client, &h, v, sizeof v));
  ASSERT_OK(ruda_group_all_reduce(world, client, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_MAX));
  ASSERT_OK(ruda_client_read(client, &h, v, sizeof v));
  for (int i = 0; i < 64; i++) ASSERT_DBL_NEAR(v[i], (double)i, 0);
  /* A large operation, idle: on this thread too (no limit by default). */
  ruda_handle_t big;
  ASSERT_OK(ruda_client_empty(client, (1u << 20) + 4, &big));
  ASSERT_OK(ruda_client_sync(client));
  wait_idle(client);
  runs = ruda__mpi_inline_runs();
  ASSERT_OK(ruda_group_broadcast(world, client, 0, &big));
  if (default_limit) ASSERT_UEQ(ruda__mpi_inline_runs(), runs + 1);
  ASSERT_OK(ruda_client_sync(client));
  ruda_handle_release(&big);
  ruda_handle_release(&h);
}

/* An error of a job that ran on the caller's thread goes where a queued
 * job's would: on the stream, for its next sync. */
TEST(errors_of_callers_thread_jobs_are_queued) {
  setup();
  ASSERT_OK(ruda_client_sync(client));
  ASSERT_NULL(ruda__mpi_queue_error(client, ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                                               "an inline job failed")));
  expect_error_naming(ruda_client_sync(client), RUDA_ERR_SERVER_UNHEALTHY, "an inline job failed");
  ASSERT_OK(ruda_client_sync(client));
}

/* Groups split by parity, ordered by descending rank; a rank without a
 * color gets no group. */
TEST(split_groups) {
  setup();
  ruda_group_t *half = NULL, *none = NULL;
  ASSERT_OK(ruda_group_split(world, (int)(rank % 2), -(int)rank, &half));
  ASSERT_NOT_NULL(half);
  uint32_t members = (size + 1 - rank % 2) / 2;
  ASSERT_EQ(ruda_group_size(half), members);
  /* ranks of one parity, highest first: rank r is at (members-1) - r/2 */
  ASSERT_EQ(ruda_group_rank(half), members - 1 - rank / 2);
  int32_t v = (int32_t)rank + 1, sum = 0;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(client, &v, sizeof v, &h));
  ASSERT_OK(ruda_group_all_reduce(half, client, &h, &h, RUDA_ELEM_I32, RUDA_REDUCE_SUM));
  ASSERT_OK(ruda_client_read(client, &h, &sum, sizeof sum));
  int32_t want = 0;
  for (uint32_t k = rank % 2; k < size; k += 2) want += (int32_t)k + 1;
  ASSERT_EQ(sum, want);
  ASSERT_OK(ruda_group_split(world, rank == 0 ? 0 : RUDA_GROUP_NO_COLOR, 0, &none));
  ASSERT_TRUE((none != NULL) == (rank == 0));
  if (none) ASSERT_EQ(ruda_group_size(none), 1);
  ASSERT_ERR_KIND(ruda_group_split(world, -5, 0, &none), RUDA_ERR_INVALID_ARGUMENT);
  ruda_group_release(none);
  ruda_handle_release(&h);
  ruda_group_release(half);
}

/* Two groups on two devices of each process, used from two threads at
 * once (MPI_THREAD_MULTIPLE under ruda's workers). */
typedef struct thread_arg {
  ruda_group_t *g;
  ruda_client_t *c;
  int rounds, failures;
} thread_arg_t;

static void *group_thread(void *p) {
  thread_arg_t *a = p;
  uint32_t r = ruda_group_rank(a->g), n = ruda_group_size(a->g);
  float v[300];
  ruda_handle_t h;
  for (int i = 0; i < 300; i++) v[i] = (float)(r * 1000 + i);
  if (ruda_client_create_buffer(a->c, v, sizeof v, &h)) a->failures++;
  for (int k = 0; k < a->rounds; k++) {
    if (ruda_group_all_reduce(a->g, a->c, &h, &h, RUDA_ELEM_F32, RUDA_REDUCE_MEAN)) a->failures++;
    if (ruda_group_broadcast(a->g, a->c, (uint32_t)k % n, &h)) a->failures++;
  }
  if (ruda_client_read(a->c, &h, v, sizeof v)) a->failures++;
  float mean0 = (float)(n - 1) * 500.0f; /* mean of r * 1000 */
  for (int i = 0; i < 300; i++) {
    float want = mean0 + (float)i, d = v[i] - want;
    if (d > 1e-2f || d < -1e-2f) a->failures++;
  }
  ruda_handle_release(&h);
  return NULL;
}

TEST(two_groups_from_two_threads) {
  setup();
  ruda_group_t *copy = NULL;
  ASSERT_OK(ruda_group_split(world, 0, (int)rank, &copy));
  thread_arg_t args[2] = {{world, client, 20, 0}, {copy, client2, 20, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&t[i], NULL, group_thread, &args[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  ASSERT_EQ(args[0].failures, 0);
  ASSERT_EQ(args[1].failures, 0);
  ruda_group_release(copy);
}

static void expect_error_naming(ruda_status_t s, ruda_error_kind_t kind, const char *needle) {
  ASSERT_TRUE(s != NULL);
  ASSERT_TRUE(ruda_status_find(s, kind) != NULL);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, needle);
  free(text);
  ruda_status_free(s);
}

TEST(bad_inputs_and_a_size_mismatch) {
  setup();
  ruda_handle_t a, b, big, out;
  ASSERT_OK(ruda_client_empty(client, 64, &a));
  ASSERT_OK(ruda_client_empty(client, 64, &b));
  ASSERT_OK(ruda_client_empty(client, 100, &big));
  expect_error_naming(ruda_group_all_reduce(world, client, &a, &b, RUDA_ELEM_E4M3, RUDA_REDUCE_SUM),
                      RUDA_ERR_INVALID_ARGUMENT, "MPI cannot reduce e4m3");
  expect_error_naming(ruda_group_all_reduce(world, client, &a, &big, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                      RUDA_ERR_INVALID_ARGUMENT, "needs 64 and 64");
  expect_error_naming(ruda_group_all_reduce(world, client, &a, &b, RUDA_ELEM_F32, (ruda_reduce_op_t)9),
                      RUDA_ERR_INVALID_ARGUMENT, "unknown reduce op");
  expect_error_naming(ruda_group_all_gather(world, client, &a, &b), RUDA_ERR_INVALID_ARGUMENT,
                      size == 1 ? "" : "needs 64 and");
  expect_error_naming(ruda_group_broadcast(world, client, size, &a), RUDA_ERR_INVALID_ARGUMENT,
                      "outside the group");
  expect_error_naming(ruda_group_send(world, client, &a, size + 3), RUDA_ERR_INVALID_ARGUMENT,
                      "outside the group");
  expect_error_naming(ruda_group_send(world, client, &a, rank), RUDA_ERR_INVALID_ARGUMENT,
                      "or this rank");
  expect_error_naming(ruda_group_recv(world, client, 8, rank, &out), RUDA_ERR_INVALID_ARGUMENT,
                      "or this rank");
  ASSERT_TRUE(ruda_handle_is_empty(&out));
  expect_error_naming(ruda_group_all_reduce(NULL, client, &a, &b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                      RUDA_ERR_INVALID_ARGUMENT, "NULL group");
  ruda_handle_t empty = {0};
  expect_error_naming(ruda_group_all_reduce(world, client, &empty, &b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                      RUDA_ERR_INVALID_ARGUMENT, "empty handle");
  ASSERT_OK(ruda_client_sync(client));
  /* A size mismatch: rank 0 sends 64 bytes; rank 1 expects 100, then 32. */
  if (size >= 2 && rank == 0) {
    ASSERT_OK(ruda_group_send(world, client, &a, 1));
    ASSERT_OK(ruda_group_send(world, client, &a, 1));
    ASSERT_OK(ruda_client_sync(client));
  } else if (size >= 2 && rank == 1) {
    ASSERT_OK(ruda_group_recv(world, client, 100, 0, &out));
    expect_error_naming(ruda_client_sync(client), RUDA_ERR_SERVER_UNHEALTHY,
                        "rank 0 sent 64 bytes where rank 1 expected 100");
    ruda_handle_release(&out);
    ASSERT_OK(ruda_group_recv(world, client, 32, 0, &out));
    expect_error_naming(ruda_client_sync(client), RUDA_ERR_SERVER_UNHEALTHY,
                        "sent more than the 32 bytes rank 1 expected");
    ruda_handle_release(&out);
  }
  /* everyone's devices and the group still work */
  check_all_reduce(world, RUDA_ELEM_F64, RUDA_REDUCE_SUM, 10, false);
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda_handle_release(&big);
}

/* A buffer of another device is refused at once (InvalidHandle). A buffer
 * that cannot be allocated (the last rank's stream on cpu:1 is near the
 * memory limit)
 * fails on that rank's stream only; the rank still takes part with scratch
 * memory, so its peers finish with the sum of the others' data. */
TEST(failed_buffer_still_takes_part) {
  setup();
  float v[4] = {1, 1, 1, 1};
  ruda_handle_t foreign, mine;
  ASSERT_OK(ruda_client_create_buffer(client2, v, sizeof v, &foreign));
  ASSERT_OK(ruda_client_create_buffer(client, v, sizeof v, &mine));
  expect_error_naming(ruda_group_all_reduce(world, client, &foreign, &mine, RUDA_ELEM_F32,
                                            RUDA_REDUCE_SUM),
                      RUDA_ERR_INVALID_HANDLE, "belongs to cpu:1, not cpu:0");
  ruda_handle_release(&foreign);
  ruda_handle_release(&mine);

  size_t n = (2u << 20) / sizeof(float);
  float *ones = malloc(n * sizeof *ones);
  ASSERT_TRUE(ones != NULL);
  for (size_t i = 0; i < n; i++) ones[i] = 1;
  ruda_handle_t filler = {0}, big;
  if (rank == size - 1) ASSERT_OK(ruda_client_empty(client2, CPU_LIMIT - (1u << 20), &filler));
  ASSERT_OK(ruda_client_create_buffer(client2, ones, n * sizeof *ones, &big));
  ASSERT_OK(ruda_group_all_reduce(world, client2, &big, &big, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  if (rank == size - 1) {
    expect_error_naming(ruda_client_sync(client2), RUDA_ERR_SERVER_UNHEALTHY, "scratch memory");
  } else {
    ASSERT_OK(ruda_client_read(client2, &big, ones, n * sizeof *ones));
    ASSERT_DBL_NEAR(ones[0], (double)(size - 1), 1e-6); /* the failed rank gave zeros */
    ASSERT_DBL_NEAR(ones[n - 1], (double)(size - 1), 1e-6);
  }
  free(ones);
  ruda_handle_release(&big);
  ruda_handle_release(&filler);
  ASSERT_OK(ruda_group_barrier(world));
}
