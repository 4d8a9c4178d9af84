/* Collectives and send/recv between in-process CPU devices
 * (RUDA_CPU_DEVICES=4): every operation, sizes 0, 1, odd and large, every
 * element type the CPU backend reduces with every op, device i holding
 * values derived from i; send/recv between every pair (contiguous and
 * strided views), to_client; operations over overlapping device sets from
 * several threads at once; bad inputs answered at once with clear errors,
 * and a failing participant reported on every stream, the devices usable
 * afterwards. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collective_checks.h"
#include "ruda/ruda.h"
#include "test.h"

#define NDEV 4

static ruda_client_t *clients[NDEV];

/* The configuration is read on first use, so this runs before any other
 * ruda call of the program: four CPU devices, each stream's host memory
 * limited to 64 MiB (a buffer then fails on one participant only when that
 * participant's stream already holds most of it). */
#define CPU_LIMIT (64u << 20)
__attribute__((constructor)) static void four_cpu_devices(void) {
  setenv("RUDA_CPU_DEVICES", "4", 1);
  setenv("RUDA_CPU_MEMORY_LIMIT", "64MiB", 1);
}

static void open_clients(void) {
  for (uint16_t i = 0; i < NDEV; i++) {
    if (clients[i]) continue;
    ruda_device_id_t id = {RUDA_DEVICE_TYPE_CPU, i};
    ruda_status_t s = ruda_client_create(id, &clients[i]);
    if (s) {
      ruda_status_free(s);
      SKIP("cannot create 4 CPU devices");
    }
  }
}

static bool cpu_reduces(ruda_elem_type_t t) {
  return t != RUDA_ELEM_BOOL && (unsigned)t < RUDA_ELEM_COUNT_; /* every cc_types entry */
}

TEST(all_reduce_every_type_and_op) {
  open_clients();
  for (size_t ti = 0; ti < CC_NUM_TYPES; ti++) {
    ASSERT_TRUE(cpu_reduces(cc_types[ti]));
    for (size_t oi = 0; oi < 4; oi++) {
      cc_all_reduce(clients, 2, cc_types[ti], cc_ops[oi], 37, false);
      cc_all_reduce(clients, 3, cc_types[ti], cc_ops[oi], 5, oi == 1);
    }
  }
}

TEST(all_reduce_sizes) {
  open_clients();
  const size_t sizes[] = {0, 1, 2, 3, 1001, (1u << 20) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    cc_all_reduce(clients, 2, RUDA_ELEM_F32, RUDA_REDUCE_SUM, sizes[i], false);
    cc_all_reduce(clients, 4, RUDA_ELEM_I32, RUDA_REDUCE_MEAN, sizes[i], i % 2 == 0);
  }
  cc_all_reduce(clients, 1, RUDA_ELEM_F64, RUDA_REDUCE_MAX, 17, false);
}

TEST(reduce_scatter_every_type_and_op_and_sizes) {
  open_clients();
  for (size_t ti = 0; ti < CC_NUM_TYPES; ti++) {
    for (size_t oi = 0; oi < 4; oi++) cc_reduce_scatter(clients, 3, cc_types[ti], cc_ops[oi], 7);
  }
  const size_t sizes[] = {0, 1, 333, (1u << 18) + 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    cc_reduce_scatter(clients, 4, RUDA_ELEM_F32, RUDA_REDUCE_SUM, sizes[i]);
    cc_reduce_scatter(clients, 2, RUDA_ELEM_U16, RUDA_REDUCE_MAX, sizes[i]);
  }
}

TEST(broadcast_every_root_and_size) {
  open_clients();
  const size_t sizes[] = {0, 1, 13, (1u << 20) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (size_t root = 0; root < NDEV; root++) cc_broadcast(clients, NDEV, root, sizes[i]);
    cc_broadcast(clients + 1, 2, 1, sizes[i]);
  }
}

TEST(all_gather_sizes) {
  open_clients();
  const size_t sizes[] = {0, 1, 13, (1u << 20) + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    cc_all_gather(clients, NDEV, sizes[i]);
    cc_all_gather(clients, 3, sizes[i]);
  }
  cc_all_gather(clients, 1, 9);
}

/* The block of device i already sits in its dst (in place, as NCCL
 * allows): src[i] is a view of dst[i] at offset i x B. */
TEST(all_gather_in_place) {
  open_clients();
  enum { B = 100 };
  ruda_handle_t dst[3], src[3];
  for (size_t i = 0; i < 3; i++) {
    uint8_t host[3 * B];
    memset(host, 0xee, sizeof host);
    for (size_t e = 0; e < B; e++) host[i * B + e] = (uint8_t)cc_value(i, e);
    ASSERT_OK(ruda_client_create_buffer(clients[i], host, sizeof host, &dst[i]));
    src[i] = ruda_handle_clone(&dst[i]);
    ASSERT_OK(ruda_handle_offset_start(&src[i], i * B));
    ASSERT_OK(ruda_handle_offset_end(&src[i], (2 - i) * B));
  }
  ASSERT_OK(ruda_client_all_gather(clients, 3, src, dst));
  for (size_t i = 0; i < 3; i++) {
    uint8_t host[3 * B];
    ASSERT_OK(ruda_client_read(clients[i], &dst[i], host, sizeof host));
    for (size_t k = 0; k < 3; k++) {
      for (size_t e = 0; e < B; e++) ASSERT_EQ(host[k * B + e], (uint8_t)cc_value(k, e));
    }
    ruda_handle_release(&src[i]);
    ruda_handle_release(&dst[i]);
  }
}

TEST(send_recv_every_pair_and_size) {
  open_clients();
  const size_t sizes[] = {0, 1, 77, (1u << 20) + 1};
  /* large: half the pairs */
  cc_f32_round_trips(clients, NDEV, sizes, sizeof sizes / sizeof sizes[0], 1000);
  for (size_t ti = 0; ti < CC_NUM_TYPES; ti++) {
    cc_send_recv_round_trip(clients[1], 1, clients[3], cc_types[ti], 9);
  }
}

/* The sender describes a strided view (every other column of a 5 x 8
 * matrix of i32); the receiver gets it contiguous. */
TEST(send_recv_strided_view) {
  open_clients();
  int32_t m[5][8];
  for (int r = 0; r < 5; r++) {
    for (int c = 0; c < 8; c++) m[r][c] = r * 100 + c;
  }
  ruda_handle_t src, out;
  ASSERT_OK(ruda_client_create_buffer(clients[2], m, sizeof m, &src));
  ruda_shape_t shape = {.rank = 2, .dims = {5, 4}};
  ruda_strides_t strides = {.rank = 2, .values = {8, 2}};
  ASSERT_OK(ruda_client_send_recv(clients[2], &src, &shape, &strides, RUDA_ELEM_I32, clients[0],
                                  &out));
  ASSERT_UEQ(ruda_handle_size_in_used(&out), 5 * 4 * sizeof(int32_t));
  int32_t got[5][4];
  ASSERT_OK(ruda_client_read(clients[0], &out, got, sizeof got));
  for (int r = 0; r < 5; r++) {
    for (int c = 0; c < 4; c++) ASSERT_EQ(got[r][c], r * 100 + 2 * c);
  }
  ruda_handle_release(&src);
  ruda_handle_release(&out);
}

/* to_client: another CPU device (send/recv), the same device on another
 * stream (through the host). */
TEST(to_client_other_device_and_same_device) {
  open_clients();
  float v[1000];
  for (int i = 0; i < 1000; i++) v[i] = (float)i * 0.5f;
  ruda_handle_t src, a, b;
  ASSERT_OK(ruda_client_create_buffer(clients[0], v, sizeof v, &src));
  ASSERT_OK(ruda_client_to_client(clients[0], &src, clients[3], &a));
  ruda_client_t *other = NULL;
  ASSERT_OK(ruda_client_on_stream(clients[0], (ruda_stream_id_t){777}, &other));
  ASSERT_OK(ruda_client_to_client(clients[0], &src, other, &b));
  float got[1000];
  ASSERT_OK(ruda_client_read(clients[3], &a, got, sizeof got));
  ASSERT_MEM_EQ(got, v, sizeof v);
  memset(got, 0, sizeof got);
  ASSERT_OK(ruda_client_read(other, &b, got, sizeof got));
  ASSERT_MEM_EQ(got, v, sizeof v);
  ruda_handle_release(&src);
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda_client_release(other);
}

/* A collective's result is there for a kernel-free follow-up on the same
 * stream: all-reduce, then broadcast of the result from another root, then
 * an all-gather of it, all queued before anything is read. */
TEST(operations_chain_in_stream_order) {
  open_clients();
  ruda_handle_t h[3], g[3];
  for (size_t i = 0; i < 3; i++) {
    int64_t v[4] = {(int64_t)i, (int64_t)i * 10, 1, -1};
    ASSERT_OK(ruda_client_create_buffer(clients[i], v, sizeof v, &h[i]));
    ASSERT_OK(ruda_client_empty(clients[i], 3 * sizeof v, &g[i]));
  }
  ASSERT_OK(ruda_client_all_reduce(clients, 3, h, h, RUDA_ELEM_I64, RUDA_REDUCE_SUM));
  ASSERT_OK(ruda_client_all_gather(clients, 3, h, g));
  for (size_t i = 0; i < 3; i++) {
    int64_t got[12];
    ASSERT_OK(ruda_client_read(clients[i], &g[i], got, sizeof got));
    for (int k = 0; k < 3; k++) {
      ASSERT_EQ(got[4 * k + 0], 3);
      ASSERT_EQ(got[4 * k + 1], 30);
      ASSERT_EQ(got[4 * k + 2], 3);
      ASSERT_EQ(got[4 * k + 3], -3);
    }
    ruda_handle_release(&h[i]);
    ruda_handle_release(&g[i]);
  }
}

/* ---- Bad inputs ---- */

static void expect_invalid_naming(ruda_status_t s, const char *needle) {
  ASSERT_TRUE(s != NULL);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, needle);
  free(text);
  ruda_status_free(s);
}

TEST(bad_inputs_answered_at_once) {
  open_clients();
  ruda_handle_t a[2], b[2], big[2], odd[2], both0[2];
  for (int i = 0; i < 2; i++) {
    ASSERT_OK(ruda_client_empty(clients[i], 64, &b[i]));
    ASSERT_OK(ruda_client_empty(clients[i], 128, &big[i]));
    ASSERT_OK(ruda_client_empty(clients[i], 6, &odd[i]));
    ASSERT_OK(ruda_client_empty(clients[0], 64, &both0[i]));
  }
  ASSERT_OK(ruda_client_empty(clients[0], 64, &a[0]));
  ASSERT_OK(ruda_client_empty(clients[1], 32, &a[1]));
  /* sizes differ between devices, src vs dst, not whole elements */
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, a, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "device 1 has 32 bytes");
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, b, big, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "needs 64 and 64");
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, odd, odd, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "multiple of 4");
  /* all-gather and reduce-scatter want n x the block */
  expect_invalid_naming(ruda_client_all_gather(clients, 2, b, b), "needs 64 and 128");
  ASSERT_OK(ruda_client_all_gather(clients, 2, b, big));
  expect_invalid_naming(ruda_client_reduce_scatter(clients, 2, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "needs 128 and 64");
  ASSERT_OK(ruda_client_reduce_scatter(clients, 2, big, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  expect_invalid_naming(ruda_client_broadcast(clients, 2, 2, b), "root 2 of 2");
  /* element types the CPU backend cannot reduce, unknown ops */
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_E4M3, RUDA_REDUCE_SUM),
                        "cannot reduce e4m3");
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_BOOL, RUDA_REDUCE_MAX),
                        "it reduces f64, f32");
  expect_invalid_naming(
      ruda_client_reduce_scatter(clients, 2, big, b, (ruda_elem_type_t)99, RUDA_REDUCE_SUM),
      "unknown element type");
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_F32, (ruda_reduce_op_t)7),
                        "unknown reduce op");
  /* NULLs, n out of range, a device listed twice */
  ASSERT_ERR_KIND(ruda_client_all_reduce(NULL, 2, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_broadcast(clients, 2, 0, NULL), RUDA_ERR_INVALID_ARGUMENT);
  expect_invalid_naming(ruda_client_all_reduce(clients, 0, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "1 to 64");
  expect_invalid_naming(ruda_client_all_reduce(clients, 65, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "1 to 64");
  ruda_client_t *twice[2] = {clients[0], clients[0]};
  expect_invalid_naming(ruda_client_all_gather(twice, 2, both0, both0), "cpu:0 is listed twice");
  ruda_handle_t empty[2] = {{0}, {0}};
  expect_invalid_naming(ruda_client_all_reduce(clients, 2, empty, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "empty handle");
  ASSERT_ERR_KIND(ruda_client_sync_collective(NULL), RUDA_ERR_INVALID_ARGUMENT);
  /* send/recv: to itself, half a view description, a view past the end */
  ruda_handle_t out = {0};
  expect_invalid_naming(ruda_client_send_recv(clients[0], &b[0], NULL, NULL, RUDA_ELEM_U8,
                                              clients[0], &out),
                        "same device");
  ruda_shape_t shape = {.rank = 2, .dims = {4, 5}};
  ruda_strides_t strides = {.rank = 2, .values = {5, 1}};
  expect_invalid_naming(ruda_client_send_recv(clients[0], &b[0], &shape, NULL, RUDA_ELEM_F32,
                                              clients[1], &out),
                        "shape and strides");
  expect_invalid_naming(ruda_client_send_recv(clients[0], &b[0], &shape, &strides, RUDA_ELEM_F32,
                                              clients[1], &out),
                        "spans 80 bytes, the handle has 64");
  ruda_shape_t huge = {.rank = 2, .dims = {UINT64_MAX / 2, 4}};
  expect_invalid_naming(ruda_client_send_recv(clients[0], &b[0], &huge, &strides, RUDA_ELEM_F32,
                                              clients[1], &out),
                        "overflows");
  ASSERT_TRUE(ruda_handle_is_empty(&out));
  /* nothing was queued: the streams are healthy and the devices work */
  for (int i = 0; i < 2; i++) ASSERT_OK(ruda_client_sync(clients[i]));
  cc_all_reduce(clients, 2, RUDA_ELEM_F32, RUDA_REDUCE_SUM, 33, false);
  for (int i = 0; i < 2; i++) {
    ruda_handle_release(&a[i]);
    ruda_handle_release(&b[i]);
    ruda_handle_release(&big[i]);
    ruda_handle_release(&odd[i]);
    ruda_handle_release(&both0[i]);
  }
}

TEST(devices_of_different_types) {
  open_clients();
  ruda_client_t *gpu = NULL;
  ruda_status_t s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CUDA, 0}, &gpu);
  if (s) {
    ruda_status_free(s);
    SKIP("no CUDA device to mix with a CPU device");
  }
  ruda_client_t *mixed[2] = {clients[0], gpu};
  ruda_handle_t h[2];
  ASSERT_OK(ruda_client_empty(clients[0], 64, &h[0]));
  ASSERT_OK(ruda_client_empty(gpu, 64, &h[1]));
  expect_invalid_naming(ruda_client_all_reduce(mixed, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                        "different types");
  /* to_client between types goes through the host */
  ruda_handle_t copy;
  ASSERT_OK(ruda_client_to_client(clients[0], &h[0], gpu, &copy));
  ASSERT_OK(ruda_client_sync(gpu));
  ruda_handle_release(&copy);
  ruda_handle_release(&h[0]);
  ruda_handle_release(&h[1]);
  ruda_client_release(gpu);
}

/* A handle of cpu:0 given as cpu:1's buffer is refused before anything
 * is queued (InvalidHandle naming both devices). A buffer that cannot be
 * allocated on cpu:3 (its stream is near the memory limit) fails there
 * while running:
 * cpu:3 still takes part, the round fails on every participant's stream
 * naming cpu:3, and the devices and the communicator work afterwards. */
TEST(failed_participant_errors_on_every_stream) {
  open_clients();
  ruda_handle_t h0, foreign, out[2];
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_OK(ruda_client_create_buffer(clients[0], v, sizeof v, &h0));
  ASSERT_OK(ruda_client_create_buffer(clients[0], v, sizeof v, &foreign));
  ASSERT_OK(ruda_client_empty(clients[0], sizeof v, &out[0]));
  ASSERT_OK(ruda_client_empty(clients[1], sizeof v, &out[1]));
  ruda_handle_t src[2] = {h0, foreign};
  ruda_status_t e = ruda_client_all_reduce(clients, 2, src, out, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  ASSERT_EQ(ruda_status_kind(e), RUDA_ERR_INVALID_HANDLE);
  ASSERT_STR_CONTAINS(ruda_status_reason(e), "belongs to cpu:0, not cpu:1");
  ruda_status_free(e);
  ruda_handle_t got;
  e = ruda_client_send_recv(clients[1], &foreign, NULL, NULL, RUDA_ELEM_U8, clients[2], &got);
  ASSERT_EQ(ruda_status_kind(e), RUDA_ERR_INVALID_HANDLE);
  ruda_status_free(e);
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[1]));

  uint64_t big = 2u << 20;
  ruda_handle_t filler, b[2];
  ASSERT_OK(ruda_client_empty(clients[3], CPU_LIMIT - (1u << 20), &filler));
  ruda_client_t *pair[2] = {clients[0], clients[3]};
  ASSERT_OK(ruda_client_empty(clients[0], big, &b[0]));
  ASSERT_OK(ruda_client_empty(clients[3], big, &b[1])); /* fails on cpu:3's worker */
  ASSERT_OK(ruda_client_all_reduce(pair, 2, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ruda_status_t e0 = ruda_client_sync(clients[0]);
  ruda_status_t e3 = ruda_client_sync(clients[3]);
  ASSERT_TRUE(e0 != NULL);
  ASSERT_TRUE(e3 != NULL);
  char *m0 = ruda_status_to_string(e0);
  ASSERT_STR_CONTAINS(m0, "all-reduce: cpu:3 failed"); /* cpu:0 names its peer */
  free(m0);
  ruda_status_free(e0);
  ruda_status_free(e3);
  /* the same through send/recv: the sender's failure reaches the receiver */
  ASSERT_OK(ruda_client_send_recv(clients[3], &b[1], NULL, NULL, RUDA_ELEM_U8, clients[0], &got));
  ASSERT_TRUE((e0 = ruda_client_sync(clients[0])) != NULL);
  m0 = ruda_status_to_string(e0);
  ASSERT_STR_CONTAINS(m0, "send: cpu:3 failed");
  free(m0);
  ruda_status_free(e0);
  ASSERT_ERR_KIND(ruda_client_sync(clients[3]), RUDA_ERR_SERVER_UNHEALTHY);
  /* drained: healthy again, and the communicators still work */
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[3]));
  cc_all_reduce(pair, 2, RUDA_ELEM_F32, RUDA_REDUCE_SUM, 33, false);
  cc_send_recv_round_trip(clients[3], 3, clients[0], RUDA_ELEM_U8, 10);
  ruda_handle_release(&got);
  ruda_handle_release(&b[0]);
  ruda_handle_release(&b[1]);
  ruda_handle_release(&filler);
  ruda_handle_release(&h0);
  ruda_handle_release(&foreign);
  ruda_handle_release(&out[0]);
  ruda_handle_release(&out[1]);
}

/* ---- Concurrency ---- */

/* Threads issuing operations over overlapping device sets ({0,1}, {1,2},
 * {0,1,2}, {2,3}, pairs) at once: no deadlock, every result right. */
typedef struct worker_arg {
  size_t first, n, rounds;
  int failures;
} worker_arg_t;

static void *collective_thread(void *p) {
  worker_arg_t *w = p;
  ruda_client_t *cs[NDEV];
  ruda_handle_t h[NDEV];
  int32_t v[257];
  for (size_t i = 0; i < w->n; i++) cs[i] = clients[w->first + i];
  for (size_t i = 0; i < w->n; i++) {
    for (size_t e = 0; e < 257; e++) v[e] = (int32_t)(e + i);
    if (ruda_client_create_buffer(cs[i], v, sizeof v, &h[i])) w->failures++;
  }
  for (size_t r = 0; r < w->rounds; r++) {
    if (ruda_client_all_reduce(cs, w->n, h, h, RUDA_ELEM_I32, RUDA_REDUCE_MEAN)) w->failures++;
    /* a broadcast of identical data and a send/recv leave h unchanged */
    if (ruda_client_broadcast(cs, w->n, r % w->n, h)) w->failures++;
    ruda_handle_t moved;
    if (w->n > 1) {
      if (ruda_client_send_recv(cs[r % w->n], &h[r % w->n], NULL, NULL, RUDA_ELEM_U8,
                                cs[(r + 1) % w->n], &moved)) {
        w->failures++;
      } else {
        ruda_handle_release(&moved);
      }
    }
  }
  for (size_t i = 0; i < w->n; i++) {
    if (ruda_client_read(cs[i], &h[i], v, sizeof v)) w->failures++;
    /* the mean of (e + i) over i: e + (n-1)/2 truncated, then fixed */
    for (size_t e = 0; e < 257; e++) {
      if (v[e] != (int32_t)(e + (w->n - 1) / 2)) w->failures++;
    }
    ruda_handle_release(&h[i]);
  }
  return NULL;
}

TEST(concurrent_overlapping_operations) {
  open_clients();
  worker_arg_t args[5] = {{0, 2, 30, 0}, {1, 2, 30, 0}, {0, 3, 30, 0}, {2, 2, 30, 0},
                          {0, 4, 30, 0}};
  pthread_t t[5];
  for (int i = 0; i < 5; i++) ASSERT_EQ(pthread_create(&t[i], NULL, collective_thread, &args[i]), 0);
  for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 5; i++) ASSERT_EQ(args[i].failures, 0);
}

TEST(sync_collective_round_trips) {
  open_clients();
  for (int i = 0; i < NDEV; i++) ASSERT_OK(ruda_client_sync_collective(clients[i]));
}
