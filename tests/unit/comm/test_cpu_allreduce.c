/* All-reduce between in-process CPU devices (RUDA_CPU_DEVICES=3): sums and
 * means of every supported element type and several sizes, read back from
 * every device; in place; argument errors; a failing participant; ordering
 * under concurrent callers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

#define NDEV 3

static ruda_client_t *clients[NDEV];

/* The CPU device count is read on first use, so this runs before any other
 * ruda call of the program. */
__attribute__((constructor)) static void three_cpu_devices(void) {
  setenv("RUDA_CPU_DEVICES", "3", 1);
}

static void open_clients(void) {
  for (uint16_t i = 0; i < NDEV; i++) {
    if (clients[i]) continue;
    ruda_device_id_t id = {RUDA_DEVICE_TYPE_CPU, i};
    ruda_status_t s = ruda_client_create(id, &clients[i]);
    if (s) {
      ruda_status_free(s);
      SKIP("cannot create 3 CPU devices");
    }
  }
}

/* Reduces n buffers of `bytes` (src[i] filled by fill(i, e)) and checks
 * every dst against expect(e). Element values are exact in every type. */
typedef double (*value_fn)(size_t dev, size_t e);

static double val_small(size_t dev, size_t e) { return (double)((e * 7 + dev * 3) % 13); }

static void store(ruda_elem_type_t t, void *p, size_t e, double v) {
  switch (t) {
    case RUDA_ELEM_F64: ((double *)p)[e] = v; break;
    case RUDA_ELEM_F32: ((float *)p)[e] = (float)v; break;
    case RUDA_ELEM_F16: { /* small integers: exact */
      uint16_t h = 0;
      if (v != 0) {
        int ex = 0;
        double m = v;
        while (m >= 2) { m /= 2; ex++; }
        h = (uint16_t)(((ex + 15) << 10) | (uint16_t)((m - 1) * 1024));
      }
      ((uint16_t *)p)[e] = h;
      break;
    }
    case RUDA_ELEM_BF16: {
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, sizeof b);
      ((uint16_t *)p)[e] = (uint16_t)(b >> 16);
      break;
    }
    case RUDA_ELEM_I8: ((int8_t *)p)[e] = (int8_t)v; break;
    case RUDA_ELEM_I32: ((int32_t *)p)[e] = (int32_t)v; break;
    case RUDA_ELEM_I64: ((int64_t *)p)[e] = (int64_t)v; break;
    case RUDA_ELEM_U8: ((uint8_t *)p)[e] = (uint8_t)v; break;
    case RUDA_ELEM_U32: ((uint32_t *)p)[e] = (uint32_t)v; break;
    case RUDA_ELEM_U64: ((uint64_t *)p)[e] = (uint64_t)v; break;
    default: break;
  }
}

static double load(ruda_elem_type_t t, const void *p, size_t e) {
  switch (t) {
    case RUDA_ELEM_F64: return ((const double *)p)[e];
    case RUDA_ELEM_F32: return ((const float *)p)[e];
    case RUDA_ELEM_F16: {
      uint16_t h = ((const uint16_t *)p)[e];
      int ex = (h >> 10) & 0x1f;
      if (ex == 0) return (h & 0x3ff) / 16777216.0;
      double m = 1 + (h & 0x3ff) / 1024.0;
      return ex >= 15 ? m * (double)(1u << (ex - 15)) : m / (double)(1u << (15 - ex));
    }
    case RUDA_ELEM_BF16: {
      uint32_t b = (uint32_t)((const uint16_t *)p)[e] << 16;
      float f;
      memcpy(&f, &b, sizeof f);
      return f;
    }
    case RUDA_ELEM_I8: return ((const int8_t *)p)[e];
    case RUDA_ELEM_I32: return ((const int32_t *)p)[e];
    case RUDA_ELEM_I64: return (double)((const int64_t *)p)[e];
    case RUDA_ELEM_U8: return ((const uint8_t *)p)[e];
    case RUDA_ELEM_U32: return ((const uint32_t *)p)[e];
    case RUDA_ELEM_U64: return (double)((const uint64_t *)p)[e];
    default: return -1;
  }
}

static bool is_float(ruda_elem_type_t t) {
  return t == RUDA_ELEM_F64 || t == RUDA_ELEM_F32 || t == RUDA_ELEM_F16 || t == RUDA_ELEM_BF16;
}

static void check_reduce(size_t n, ruda_elem_type_t t, size_t count, ruda_reduce_op_t op,
                         bool in_place) {
  open_clients();
  size_t esize = ruda_elem_type_size(t);
  size_t bytes = count * esize;
  ruda_handle_t src[NDEV], dst[NDEV];
  uint8_t *host = malloc(bytes ? bytes : 1);
  ASSERT_TRUE(host != NULL);
  for (size_t i = 0; i < n; i++) {
    for (size_t e = 0; e < count; e++) store(t, host, e, val_small(i, e));
    ASSERT_OK(ruda_client_create_buffer(clients[i], host, bytes, &src[i]));
    if (in_place) dst[i] = ruda_handle_clone(&src[i]);
    else ASSERT_OK(ruda_client_empty(clients[i], bytes, &dst[i]));
  }
  ASSERT_OK(ruda_client_all_reduce(clients, n, src, dst, t, op));
  for (size_t i = 0; i < n; i++) {
    ASSERT_OK(ruda_client_sync_collective(clients[i]));
    memset(host, 0xab, bytes ? bytes : 1);
    ASSERT_OK(ruda_client_read(clients[i], &dst[i], host, bytes));
    for (size_t e = 0; e < count; e++) {
      double sum = 0;
      for (size_t k = 0; k < n; k++) sum += val_small(k, e);
      double want = sum;
      if (op == RUDA_REDUCE_MEAN) want = is_float(t) ? sum / (double)n : (double)((int64_t)sum / (int64_t)n);
      double got = load(t, host, e);
      double tol = is_float(t) ? (t == RUDA_ELEM_F16 || t == RUDA_ELEM_BF16 ? 0.02 * want + 1e-3 : 1e-5) : 0;
      if (got < want - tol || got > want + tol) {
        rt_fail_msg(__FILE__, __LINE__, "%s %s n=%zu count=%zu: device %zu element %zu is %g, want %g",
                    ruda_elem_type_name(t), op == RUDA_REDUCE_SUM ? "sum" : "mean", n, count, i,
                    e, got, want);
        rt_fail();
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    ruda_handle_release(&src[i]);
    ruda_handle_release(&dst[i]);
  }
  free(host);
}

TEST(sum_and_mean_f32_sizes) {
  const size_t sizes[] = {0, 1, 2, 3, 1001, (1u << 20) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    check_reduce(2, RUDA_ELEM_F32, sizes[i], RUDA_REDUCE_SUM, false);
    check_reduce(2, RUDA_ELEM_F32, sizes[i], RUDA_REDUCE_MEAN, false);
  }
}

TEST(every_dtype_sum_and_mean) {
  const ruda_elem_type_t types[] = {RUDA_ELEM_F64, RUDA_ELEM_F32, RUDA_ELEM_F16, RUDA_ELEM_BF16,
                                    RUDA_ELEM_I8,  RUDA_ELEM_I32, RUDA_ELEM_I64, RUDA_ELEM_U8,
                                    RUDA_ELEM_U32, RUDA_ELEM_U64};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    check_reduce(2, types[i], 777, RUDA_REDUCE_SUM, false);
    check_reduce(2, types[i], 777, RUDA_REDUCE_MEAN, false);
    check_reduce(3, types[i], 5, RUDA_REDUCE_SUM, false);
  }
}

TEST(three_devices_one_device_and_in_place) {
  check_reduce(3, RUDA_ELEM_F32, 4099, RUDA_REDUCE_SUM, false);
  check_reduce(3, RUDA_ELEM_I32, 4099, RUDA_REDUCE_MEAN, true);
  check_reduce(1, RUDA_ELEM_F64, 17, RUDA_REDUCE_SUM, false);
  check_reduce(2, RUDA_ELEM_F32, 100000, RUDA_REDUCE_MEAN, true);
}

TEST(argument_errors_at_once) {
  open_clients();
  ruda_handle_t a[2], b[2];
  ASSERT_OK(ruda_client_empty(clients[0], 64, &a[0]));
  ASSERT_OK(ruda_client_empty(clients[1], 32, &a[1]));
  ASSERT_OK(ruda_client_empty(clients[0], 64, &b[0]));
  ASSERT_OK(ruda_client_empty(clients[1], 64, &b[1]));
  /* sizes differ between devices, and between src and dst */
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, a, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* not a whole number of elements */
  ruda_handle_t odd[2];
  ASSERT_OK(ruda_client_empty(clients[0], 6, &odd[0]));
  ASSERT_OK(ruda_client_empty(clients[1], 6, &odd[1]));
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, odd, odd, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* unsupported element types and ops */
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_E4M3, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_BOOL, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, b, b, (ruda_elem_type_t)99, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 2, b, b, RUDA_ELEM_F32, (ruda_reduce_op_t)7),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* NULLs, n out of range, a device listed twice */
  ASSERT_ERR_KIND(ruda_client_all_reduce(NULL, 2, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 0, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_all_reduce(clients, 65, b, b, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_client_t *twice[2] = {clients[0], clients[0]};
  ruda_handle_t both0[2];
  ASSERT_OK(ruda_client_empty(clients[0], 64, &both0[0]));
  ASSERT_OK(ruda_client_empty(clients[0], 64, &both0[1]));
  ASSERT_ERR_KIND(ruda_client_all_reduce(twice, 2, both0, both0, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_sync_collective(NULL), RUDA_ERR_INVALID_ARGUMENT);
  /* the streams stayed healthy */
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[1]));
  for (int i = 0; i < 2; i++) {
    ruda_handle_release(&a[i]);
    ruda_handle_release(&b[i]);
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
  ASSERT_ERR_KIND(ruda_client_all_reduce(mixed, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_handle_release(&h[0]);
  ruda_handle_release(&h[1]);
  ruda_client_release(gpu);
}

/* A handle of cpu:0 passed as cpu:1's buffer is refused by the client
 * before anything is queued (InvalidHandle naming both devices): no
 * participant waits for a peer that never comes, both streams stay
 * healthy and the communicator still works. */
TEST(foreign_handle_is_refused_before_any_participant_runs) {
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
  ASSERT_TRUE(strstr(ruda_status_reason(e), "belongs to cpu:0, not cpu:1") != NULL);
  ruda_status_free(e);
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[1]));
  check_reduce(2, RUDA_ELEM_F32, 33, RUDA_REDUCE_SUM, false);
  ruda_handle_release(&h0);
  ruda_handle_release(&foreign);
  ruda_handle_release(&out[0]);
  ruda_handle_release(&out[1]);
}

/* Threads issuing collectives over overlapping device sets ({0,1}, {1,2},
 * {0,1,2}) at once: no deadlock, every result right. */
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
  }
  for (size_t i = 0; i < w->n; i++) {
    if (ruda_client_read(cs[i], &h[i], v, sizeof v)) w->failures++;
    /* the mean of (e + i) over i, repeated: e + (n-1)/2 truncated, then fixed */
    for (size_t e = 0; e < 257; e++) {
      if (v[e] != (int32_t)(e + (w->n - 1) / 2)) w->failures++;
    }
    ruda_handle_release(&h[i]);
  }
  return NULL;
}

TEST(concurrent_overlapping_collectives) {
  open_clients();
  worker_arg_t args[3] = {{0, 2, 40, 0}, {1, 2, 40, 0}, {0, 3, 40, 0}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) ASSERT_EQ(pthread_create(&t[i], NULL, collective_thread, &args[i]), 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) ASSERT_EQ(args[i].failures, 0);
}

TEST(sync_collective_round_trips) {
  open_clients();
  for (int i = 0; i < NDEV; i++) ASSERT_OK(ruda_client_sync_collective(clients[i]));
}
