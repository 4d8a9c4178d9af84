/* All-reduce between two CUDA devices through NCCL. Skips unless two CUDA
 * devices and libnccl.so.2 are present. Keep NCCL_NVLS_ENABLE=0 (NVLink
 * multicast off) when running it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

static ruda_client_t *gpus[2];

/* Opens cuda:0 and cuda:1 and runs one tiny all-reduce, so a missing NCCL
 * shows up as a skip with its reason. */
static void open_gpus(void) {
  static char why[1024];
  if (gpus[1]) return;
  uint32_t n = 0;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
  if (!s && n < 2) {
    snprintf(why, sizeof why, "needs 2 CUDA devices, found %u", n);
    SKIP(why);
  }
  for (uint16_t i = 0; i < 2 && !s; i++) {
    s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CUDA, i}, &gpus[i]);
  }
  ruda_handle_t h[2] = {{0}, {0}};
  for (int i = 0; i < 2 && !s; i++) s = ruda_client_empty(gpus[i], 16, &h[i]);
  if (!s) s = ruda_client_all_reduce(gpus, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  ruda_handle_release(&h[0]);
  ruda_handle_release(&h[1]);
  if (s) {
    bool unsupported = ruda_status_kind(s) == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION ||
                       ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE;
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    gpus[0] = gpus[1] = NULL;
    if (unsupported) SKIP(why);
    rt_fail_msg(__FILE__, __LINE__, "%s", why);
    rt_fail();
  }
}

static void check(ruda_elem_type_t t, size_t count, ruda_reduce_op_t op, bool in_place) {
  open_gpus();
  size_t es = ruda_elem_type_size(t);
  size_t bytes = count * es;
  uint8_t *host = malloc(bytes ? bytes : 1);
  ASSERT_TRUE(host != NULL);
  ruda_handle_t src[2], dst[2];
  for (int d = 0; d < 2; d++) {
    for (size_t e = 0; e < count; e++) {
      uint32_t v = (uint32_t)((e * 5 + (size_t)d * 2) % 11);
      if (t == RUDA_ELEM_F32) ((float *)(void *)host)[e] = (float)v;
      else if (t == RUDA_ELEM_I32) ((int32_t *)(void *)host)[e] = (int32_t)v;
      else if (t == RUDA_ELEM_F64) ((double *)(void *)host)[e] = v;
      else if (t == RUDA_ELEM_BF16) { float f = (float)v; uint32_t b; memcpy(&b, &f, 4); ((uint16_t *)(void *)host)[e] = (uint16_t)(b >> 16); }
    }
    ASSERT_OK(ruda_client_create_buffer(gpus[d], host, bytes, &src[d]));
    if (in_place) dst[d] = ruda_handle_clone(&src[d]);
    else ASSERT_OK(ruda_client_empty(gpus[d], bytes, &dst[d]));
  }
  ASSERT_OK(ruda_client_all_reduce(gpus, 2, src, dst, t, op));
  for (int d = 0; d < 2; d++) {
    ASSERT_OK(ruda_client_sync_collective(gpus[d]));
    ASSERT_OK(ruda_client_read(gpus[d], &dst[d], host, bytes));
    for (size_t e = 0; e < count; e++) {
      double want = (double)((e * 5) % 11) + (double)((e * 5 + 2) % 11);
      if (op == RUDA_REDUCE_MEAN) want = t == RUDA_ELEM_I32 ? (double)((int)want / 2) : want / 2;
      double got = -1;
      if (t == RUDA_ELEM_F32) got = ((float *)(void *)host)[e];
      else if (t == RUDA_ELEM_I32) got = ((int32_t *)(void *)host)[e];
      else if (t == RUDA_ELEM_F64) got = ((double *)(void *)host)[e];
      else if (t == RUDA_ELEM_BF16) { uint32_t b = (uint32_t)((uint16_t *)(void *)host)[e] << 16; float f; memcpy(&f, &b, 4); got = f; }
      if (got != want) {
        rt_fail_msg(__FILE__, __LINE__, "%s count %zu: cuda:%d element %zu is %g, want %g",
                    ruda_elem_type_name(t), count, d, e, got, want);
        rt_fail();
      }
    }
  }
  for (int d = 0; d < 2; d++) {
    ruda_handle_release(&src[d]);
    ruda_handle_release(&dst[d]);
  }
  free(host);
}

TEST(sum_and_mean_f32) {
  const size_t sizes[] = {0, 1, 1001, (1u << 22) + 7};
  for (size_t i = 0; i < 4; i++) {
    check(RUDA_ELEM_F32, sizes[i], RUDA_REDUCE_SUM, false);
    check(RUDA_ELEM_F32, sizes[i], RUDA_REDUCE_MEAN, false);
  }
}

TEST(other_dtypes_and_in_place) {
  check(RUDA_ELEM_F64, 777, RUDA_REDUCE_SUM, false);
  check(RUDA_ELEM_I32, 777, RUDA_REDUCE_SUM, true);
  check(RUDA_ELEM_BF16, 777, RUDA_REDUCE_SUM, false);
  check(RUDA_ELEM_F32, 12345, RUDA_REDUCE_MEAN, true);
}

TEST(many_back_to_back) {
  open_gpus();
  ruda_handle_t h[2];
  float v[64];
  for (int i = 0; i < 64; i++) v[i] = 1.0f;
  for (int d = 0; d < 2; d++) ASSERT_OK(ruda_client_create_buffer(gpus[d], v, sizeof v, &h[d]));
  for (int r = 0; r < 10; r++) ASSERT_OK(ruda_client_all_reduce(gpus, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  for (int d = 0; d < 2; d++) {
    ASSERT_OK(ruda_client_read(gpus[d], &h[d], v, sizeof v));
    ASSERT_DBL_NEAR(v[0], 1024.0, 0);
    ASSERT_DBL_NEAR(v[63], 1024.0, 0);
    ruda_handle_release(&h[d]);
  }
}
