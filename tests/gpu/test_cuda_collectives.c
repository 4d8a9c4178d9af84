/* Collectives and send/recv on CUDA devices through NCCL, in one process:
 * every operation over the devices present (1 to 4; send/recv needs 2),
 * every element type NCCL reduces with every op, sizes 0, 1, odd and
 * large; the NCCL type table's refusals; streams; the path a group across
 * processes takes (a communicator made from a token, one rank); a peer
 * that never arrives (2 GPUs); communicators finalized at ruda_shutdown.
 * Skips with the reason where CUDA or libnccl.so.2 is missing. Keep
 * NCCL_NVLS_ENABLE=0 (NVLink multicast off) when running it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/comm/collective_checks.h"
#include "client/collective.h"
#include "ruda/ruda.h"
#include "test.h"

static ruda_client_t *gpus[4];
static size_t ngpu;

/* Read once, at the first collective: 3 s is long enough for creating the
 * communicators and short enough for the absent-peer test. */
__attribute__((constructor)) static void comm_timeout(void) {
  setenv("RUDA_COMM_TIMEOUT", "3", 0);
}

/* Opens up to 4 GPUs and runs one tiny all-reduce, so a missing NCCL shows
 * up as a skip with its reason. */
static void open_gpus(void) {
  static char why[1024];
  if (ngpu) return;
  uint32_t n = 0;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
  size_t want = n > 4 ? 4 : n;
  for (uint16_t i = 0; i < want && !s; i++) {
    s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CUDA, i}, &gpus[i]);
  }
  ruda_handle_t h[4] = {{0}};
  for (size_t i = 0; i < want && !s; i++) s = ruda_client_empty(gpus[i], 16, &h[i]);
  if (!s) s = ruda_client_all_reduce(gpus, want, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  for (size_t i = 0; i < want && !s; i++) s = ruda_client_sync(gpus[i]);
  for (size_t i = 0; i < 4; i++) ruda_handle_release(&h[i]);
  if (s) {
    bool unsupported = ruda_status_kind(s) == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION ||
                       ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE;
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    if (unsupported) SKIP(why);
    rt_fail_msg(__FILE__, __LINE__, "%s", why);
    rt_fail();
  }
  ngpu = want;
  printf("# %zu CUDA device%s\n", ngpu, ngpu == 1 ? "" : "s");
}

static void need_two(void) {
  open_gpus();
  if (ngpu < 2) SKIP("needs 2 CUDA devices (the two-GPU runs)");
}

static const ruda_elem_type_t nccl_types[] = {RUDA_ELEM_F64, RUDA_ELEM_F32, RUDA_ELEM_F16,
                                              RUDA_ELEM_BF16, RUDA_ELEM_I8, RUDA_ELEM_I32,
                                              RUDA_ELEM_I64, RUDA_ELEM_U8, RUDA_ELEM_U32,
                                              RUDA_ELEM_U64};
#define NUM_NCCL_TYPES (sizeof nccl_types / sizeof nccl_types[0])

TEST(all_reduce_every_type_and_op) {
  open_gpus();
  for (size_t ti = 0; ti < NUM_NCCL_TYPES; ti++) {
    for (size_t oi = 0; oi < 4; oi++) cc_all_reduce(gpus, ngpu, nccl_types[ti], cc_ops[oi], 37, oi == 2);
  }
}

TEST(all_reduce_sizes) {
  open_gpus();
  const size_t sizes[] = {0, 1, 3, 1001, (1u << 22) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    cc_all_reduce(gpus, ngpu, RUDA_ELEM_F32, RUDA_REDUCE_SUM, sizes[i], false);
    cc_all_reduce(gpus, ngpu, RUDA_ELEM_I32, RUDA_REDUCE_MEAN, sizes[i], true);
  }
}

TEST(reduce_scatter_types_ops_sizes) {
  open_gpus();
  for (size_t ti = 0; ti < NUM_NCCL_TYPES; ti++) {
    for (size_t oi = 0; oi < 4; oi++) cc_reduce_scatter(gpus, ngpu, nccl_types[ti], cc_ops[oi], 7);
  }
  const size_t sizes[] = {0, 1, 333, (1u << 20) + 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    cc_reduce_scatter(gpus, ngpu, RUDA_ELEM_F32, RUDA_REDUCE_SUM, sizes[i]);
  }
}

TEST(broadcast_and_all_gather) {
  open_gpus();
  const size_t sizes[] = {0, 1, 13, (1u << 22) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (size_t root = 0; root < ngpu; root++) cc_broadcast(gpus, ngpu, root, sizes[i]);
    cc_all_gather(gpus, ngpu, sizes[i]);
  }
}

TEST(send_recv_every_pair) {
  need_two();
  const size_t sizes[] = {0, 1, 77, (1u << 22) + 1};
  cc_f32_round_trips(gpus, ngpu, sizes, sizeof sizes / sizeof sizes[0], SIZE_MAX);
  for (size_t ti = 0; ti < NUM_NCCL_TYPES; ti++) {
    cc_send_recv_round_trip(gpus[1], 1, gpus[0], nccl_types[ti], 9);
  }
}

TEST(nccl_type_table_and_strides) {
  open_gpus();
  ruda_handle_t h[4];
  for (size_t i = 0; i < ngpu; i++) ASSERT_OK(ruda_client_empty(gpus[i], 64, &h[i]));
  ruda_status_t s = ruda_client_all_reduce(gpus, ngpu, h, h, RUDA_ELEM_I16, RUDA_REDUCE_SUM);
  ASSERT_TRUE(s != NULL);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "the cuda backend cannot reduce i16");
  free(text);
  ruda_status_free(s);
  ASSERT_ERR_KIND(ruda_client_all_reduce(gpus, ngpu, h, h, RUDA_ELEM_E4M3, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  if (ngpu >= 2) {
    ruda_shape_t shape = {.rank = 2, .dims = {4, 2}};
    ruda_strides_t strides = {.rank = 2, .values = {4, 1}};
    ruda_handle_t out;
    ASSERT_ERR_KIND(ruda_client_send_recv(gpus[0], &h[0], &shape, &strides, RUDA_ELEM_F32,
                                          gpus[1], &out),
                    RUDA_ERR_IO_UNSUPPORTED_STRIDES);
  }
  for (size_t i = 0; i < ngpu; i++) {
    ASSERT_OK(ruda_client_sync(gpus[i]));
    ruda_handle_release(&h[i]);
  }
}

/* to_client to the CPU backend goes through the host; between GPUs
 * through send/recv. */
TEST(to_client) {
  open_gpus();
  ruda_client_t *cpu = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &cpu));
  float v[333];
  for (int i = 0; i < 333; i++) v[i] = (float)i - 7.5f;
  ruda_handle_t src, on_cpu, on_gpu;
  ASSERT_OK(ruda_client_create_buffer(gpus[0], v, sizeof v, &src));
  ASSERT_OK(ruda_client_to_client(gpus[0], &src, cpu, &on_cpu));
  ASSERT_OK(ruda_client_to_client(cpu, &on_cpu, gpus[ngpu - 1], &on_gpu));
  float got[333];
  ASSERT_OK(ruda_client_read(gpus[ngpu - 1], &on_gpu, got, sizeof got));
  ASSERT_MEM_EQ(got, v, sizeof v);
  ruda_handle_release(&on_gpu);
  if (ngpu >= 2) {
    ASSERT_OK(ruda_client_to_client(gpus[0], &src, gpus[1], &on_gpu));
    memset(got, 0, sizeof got);
    ASSERT_OK(ruda_client_read(gpus[1], &on_gpu, got, sizeof got));
    ASSERT_MEM_EQ(got, v, sizeof v);
    ruda_handle_release(&on_gpu);
  }
  ruda_handle_release(&src);
  ruda_handle_release(&on_cpu);
  ruda_client_release(cpu);
}

/* An all-reduce issued from another stream; sync_collective orders this
 * stream after it, and its buffer (from this stream) stays valid. */
TEST(streams_and_sync_collective) {
  open_gpus();
  ruda_client_t *other[4];
  ruda_handle_t h[4];
  for (size_t i = 0; i < ngpu; i++) {
    ASSERT_OK(ruda_client_on_stream(gpus[i], (ruda_stream_id_t){4242}, &other[i]));
    int32_t v[100];
    for (int e = 0; e < 100; e++) v[e] = e + (int32_t)i;
    ASSERT_OK(ruda_client_create_buffer(gpus[i], v, sizeof v, &h[i]));
  }
  ASSERT_OK(ruda_client_all_reduce(other, ngpu, h, h, RUDA_ELEM_I32, RUDA_REDUCE_MAX));
  for (size_t i = 0; i < ngpu; i++) {
    ASSERT_OK(ruda_client_sync_collective(gpus[i]));
    int32_t got[100];
    ASSERT_OK(ruda_client_read(gpus[i], &h[i], got, sizeof got));
    for (int e = 0; e < 100; e++) ASSERT_EQ(got[e], e + (int32_t)ngpu - 1);
    ASSERT_OK(ruda_client_sync(other[i]));
    ruda_handle_release(&h[i]);
    ruda_client_release(other[i]);
  }
}

/* What a group across processes does on each rank, here with one rank:
 * a token (ncclGetUniqueId), a communicator from it, and operations on
 * it queued without a device set. */
TEST(communicator_from_a_token) {
  open_gpus();
  uint8_t token[256];
  size_t len = 0;
  ASSERT_OK(ruda__client_comm_token(gpus[0], token, sizeof token, &len));
  ASSERT_UEQ(len, 128);
  ruda__comm_peers_t peers = {0x5eed, 0, 1, NULL};
  ASSERT_OK(ruda__client_comm_init(gpus[0], &peers, token, len));
  float v[64], got[64];
  for (int i = 0; i < 64; i++) v[i] = (float)i;
  ruda_handle_t src, dst;
  ASSERT_OK(ruda_client_create_buffer(gpus[0], v, sizeof v, &src));
  ASSERT_OK(ruda_client_empty(gpus[0], sizeof v, &dst));
  ruda__coll_t c;
  memset(&c, 0, sizeof c);
  c.kind = RUDA__COLL_ALL_REDUCE;
  c.peers = peers;
  c.src.binding = ruda_handle_binding(&src);
  c.src.shape.rank = c.src.strides.rank = 1;
  c.src.shape.dims[0] = 64;
  c.src.strides.values[0] = 1;
  c.src.elem_size = 4;
  c.dst = ruda_handle_binding(&dst);
  c.count = 64;
  c.dtype = RUDA_ELEM_F32;
  c.op = RUDA_REDUCE_SUM;
  ASSERT_OK(ruda__client_collective_queue(gpus[0], &c));
  ASSERT_OK(ruda_client_read(gpus[0], &dst, got, sizeof got));
  ASSERT_MEM_EQ(got, v, sizeof v);
  ASSERT_OK(ruda__client_comm_destroy(gpus[0], peers.id));
  /* destroyed: later operations on it fail on the stream, not hang */
  ASSERT_OK(ruda__client_collective_queue(gpus[0], &c));
  ASSERT_ERR_KIND(ruda_client_sync(gpus[0]), RUDA_ERR_SERVER_UNHEALTHY);
  ruda_binding_release(&c.src.binding);
  ruda_binding_release(&c.dst);
  ruda_handle_release(&src);
  ruda_handle_release(&dst);
}

static ruda_status_t hold_worker(ruda_client_t *c, void *ctx) {
  (void)c;
  (void)ctx;
  struct timespec ts = {4, 500 * 1000 * 1000};
  nanosleep(&ts, NULL);
  return NULL;
}

static void *hold_thread(void *arg) {
  ruda_status_free(ruda_client_exclusive(arg, hold_worker, NULL));
  return NULL;
}

/* cuda:1 does not reach an all-reduce within the timeout (its worker is
 * held): cuda:0 fails with an error naming it, nothing is issued to NCCL,
 * and the devices stay usable. Last but one: it breaks the pair's
 * communicator for the rest of the process. */
TEST(y_absent_peer_times_out) {
  need_two();
  ruda_handle_t h[2];
  for (int i = 0; i < 2; i++) ASSERT_OK(ruda_client_empty(gpus[i], 64, &h[i]));
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, hold_thread, gpus[1]), 0);
  struct timespec settle = {0, 100 * 1000 * 1000};
  nanosleep(&settle, NULL);
  ruda_client_t *pair[2] = {gpus[0], gpus[1]};
  ASSERT_OK(ruda_client_all_reduce(pair, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ruda_status_t e = ruda_client_sync(gpus[0]);
  pthread_join(t, NULL);
  ASSERT_TRUE(e != NULL);
  char *text = ruda_status_to_string(e);
  ASSERT_STR_CONTAINS(text, "waiting for cuda:1");
  free(text);
  ruda_status_free(e);
  ruda_status_free(ruda_client_sync(gpus[1]));
  for (int i = 0; i < 2; i++) {
    ASSERT_OK(ruda_client_sync(gpus[i]));
    ruda_handle_release(&h[i]);
  }
}

/* ruda_shutdown finalizes and destroys every communicator (each device at
 * once) in bounded time. */
TEST(z_shutdown_finalizes_communicators) {
  open_gpus();
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  ruda_shutdown();
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
  printf("# ruda_shutdown with communicators: %.3f s\n", secs);
  ASSERT_LT(secs, 30);
  ASSERT_ERR_KIND(ruda_client_sync(gpus[0]), RUDA_ERR_UNAVAILABLE);
  for (size_t i = 0; i < ngpu; i++) ruda_client_release(gpus[i]);
  ngpu = 0;
}
