/* Conformance: create/read/write round trips, tensors, strides, memory
 * usage, cleanup and persistent mode. */
#include <stdlib.h>

#include "cts.h"

static void fill_pattern(uint8_t *p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + seed);
}

/* Writes the `n` bytes of `src` into h, reads them back and compares. */
static void write_reads_back(ruda_client_t *c, ruda_handle_t *h, const void *src, size_t n) {
  uint8_t *dst = malloc(n);
  ASSERT_NOT_NULL(dst);
  memset(dst, 0xEE, n);
  ASSERT_OK(ruda_client_write(c, h, src, n));
  ASSERT_OK(ruda_client_read(c, h, dst, n));
  bool same = memcmp(src, dst, n) == 0;
  free(dst);
  ASSERT_TRUE(same);
}

static void roundtrip(size_t n) {
  ruda_client_t *c = cts_client();
  uint8_t *src = malloc(n ? n : 1), *dst = malloc(n ? n : 1);
  fill_pattern(src, n, 7);
  memset(dst, 0xEE, n ? n : 1);
  ruda_handle_t h = cts_upload(c, src, n);
  ASSERT_UEQ(ruda_handle_size_in_used(&h), n);
  ASSERT_OK(ruda_client_read(c, &h, dst, n));
  ASSERT_MEM_EQ(src, dst, n);
  ruda_handle_release(&h);
  ASSERT_TRUE(ruda_handle_is_empty(&h));
  free(src);
  free(dst);
}

TEST(create_read_size_0) { roundtrip(0); }
TEST(create_read_size_1) { roundtrip(1); }
TEST(create_read_size_odd) { roundtrip(1237); }
TEST(create_read_size_large) { roundtrip(24u << 20); }

TEST(empty_then_write_then_read) {
  ruda_client_t *c = cts_client();
  ruda_handle_t h = cts_empty(c, 4096);
  uint32_t src[1024];
  for (int i = 0; i < 1024; i++) src[i] = (uint32_t)i * 3u;
  write_reads_back(c, &h, src, sizeof src);
  ruda_handle_release(&h);
}

TEST(write_after_create_overwrites) {
  ruda_client_t *c = cts_client();
  uint32_t a[256], b[256];
  for (int i = 0; i < 256; i++) {
    a[i] = 1;
    b[i] = (uint32_t)i;
  }
  ruda_handle_t h = cts_upload(c, a, sizeof a);
  write_reads_back(c, &h, b, sizeof b);
  ruda_handle_release(&h);
}

TEST(offset_views_read_their_slice) {
  ruda_client_t *c = cts_client();
  uint8_t src[1024], dst[1024];
  fill_pattern(src, sizeof src, 3);
  ruda_handle_t h = cts_upload(c, src, sizeof src);
  ruda_handle_t view = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_start(&view, 256));
  ASSERT_OK(ruda_handle_offset_end(&view, 512));
  ASSERT_UEQ(ruda_handle_size_in_used(&view), 256);
  ASSERT_OK(ruda_client_read(c, &view, dst, sizeof dst));
  ASSERT_MEM_EQ(src + 256, dst, 256);
  ASSERT_ERR_KIND(ruda_handle_offset_start(&view, 1000), RUDA_ERR_INVALID_ARGUMENT);
  ruda_handle_release(&view);
  ruda_handle_release(&h);
}

TEST(read_into_too_small_buffer_is_invalid) {
  ruda_client_t *c = cts_client();
  uint8_t src[64] = {0}, dst[16];
  ruda_handle_t h = cts_upload(c, src, sizeof src);
  ASSERT_ERR_KIND(ruda_client_read(c, &h, dst, sizeof dst), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_write(c, &h, src, 65), RUDA_ERR_INVALID_ARGUMENT);
  ruda_handle_t empty = {0};
  ASSERT_ERR_KIND(ruda_client_read(c, &empty, dst, sizeof dst), RUDA_ERR_INVALID_HANDLE);
  /* still usable */
  ASSERT_OK(ruda_client_read(c, &h, src, sizeof src));
  ruda_handle_release(&h);
}

TEST(tensor_roundtrip_honours_strides) {
  ruda_client_t *c = cts_client();
  float src[3 * 5], dst[3 * 5];
  for (int i = 0; i < 15; i++) src[i] = (float)i + 0.5f;
  ruda_shape_t shape = ruda_shape_2d(3, 5);
  ruda_memory_layout_t t;
  ASSERT_OK(ruda_client_create_tensor(c, src, &shape, sizeof(float), &t));
  ASSERT_EQ(t.strides.rank, 2);
  ASSERT_UEQ(t.strides.values[1], 1);
  ASSERT_UGE(t.strides.values[0], 5);
  ASSERT_OK(ruda_client_read_tensor(c, &t.memory, &shape, &t.strides, sizeof(float), dst));
  ASSERT_MEM_EQ(src, dst, sizeof src);
  ruda_handle_release(&t.memory);
}

TEST(empty_tensors_share_one_allocation) {
  ruda_client_t *c = cts_client();
  ruda_memory_layout_descriptor_t d[2] = {
      ruda_memory_layout_optimized(ruda_shape_2d(4, 7), 4),
      ruda_memory_layout_contiguous(ruda_shape_1d(10), 8),
  };
  ruda_memory_layout_t t[2];
  ASSERT_OK(ruda_client_empty_tensors(c, d, 2, t));
  ASSERT_UEQ(ruda_handle_memory_id(&t[0].memory), ruda_handle_memory_id(&t[1].memory));
  ASSERT_UGE(ruda_handle_size_in_used(&t[1].memory), 80);
  int32_t a[28], a2[28];
  double b[10], b2[10];
  for (int i = 0; i < 28; i++) a[i] = i - 9;
  for (int i = 0; i < 10; i++) b[i] = i * 1.25;
  ASSERT_OK(ruda_client_write_tensor(c, &t[0].memory, &d[0].shape, &t[0].strides, 4, a));
  ASSERT_OK(ruda_client_write_tensor(c, &t[1].memory, &d[1].shape, &t[1].strides, 8, b));
  ASSERT_OK(ruda_client_read_tensor(c, &t[0].memory, &d[0].shape, &t[0].strides, 4, a2));
  ASSERT_OK(ruda_client_read_tensor(c, &t[1].memory, &d[1].shape, &t[1].strides, 8, b2));
  ASSERT_MEM_EQ(a, a2, sizeof a);
  ASSERT_MEM_EQ(b, b2, sizeof b);
  ruda_handle_release(&t[0].memory);
  ruda_handle_release(&t[1].memory);
}

TEST(pitched_write_and_read) {
  ruda_client_t *c = cts_client();
  /* A [4, 3] u32 view inside rows of 8 elements. */
  ruda_handle_t h = cts_empty(c, 4 * 8 * 4);
  uint32_t zeros[32] = {0};
  ASSERT_OK(ruda_client_write(c, &h, zeros, sizeof zeros));
  ruda_shape_t shape = ruda_shape_2d(4, 3);
  ruda_strides_t strides = {2, {8, 1}};
  uint32_t src[12], dst[12], whole[32];
  for (int i = 0; i < 12; i++) src[i] = 100u + (uint32_t)i;
  ASSERT_OK(ruda_client_write_tensor(c, &h, &shape, &strides, 4, src));
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 4, dst));
  ASSERT_MEM_EQ(src, dst, sizeof src);
  ASSERT_OK(ruda_client_read(c, &h, whole, sizeof whole));
  ASSERT_UEQ(whole[8], 103);  /* row 1 starts at element 8 */
  ASSERT_UEQ(whole[3], 0);    /* padding untouched */
  ruda_handle_release(&h);
}

TEST(transposed_read) {
  cts_require("arbitrary_strides");
  ruda_client_t *c = cts_client();
  uint32_t src[6] = {0, 1, 2, 3, 4, 5}; /* [2,3] row-major */
  ruda_handle_t h = cts_upload(c, src, sizeof src);
  ruda_shape_t shape = ruda_shape_2d(3, 2);
  ruda_strides_t strides = {2, {1, 3}}; /* the transpose */
  uint32_t dst[6];
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 4, dst));
  uint32_t want[6] = {0, 3, 1, 4, 2, 5};
  ASSERT_MEM_EQ(want, dst, sizeof want);
  ruda_handle_release(&h);
}

TEST(read_async_completes) {
  ruda_client_t *c = cts_client();
  uint64_t src[512], dst[512];
  for (int i = 0; i < 512; i++) src[i] = (uint64_t)i << 33;
  ruda_handle_t h = cts_upload(c, src, sizeof src);
  ruda_future_t *f = NULL;
  ASSERT_OK(ruda_client_read_async(c, &h, dst, sizeof dst, &f));
  ruda_handle_release(&h); /* the read keeps the memory alive */
  ASSERT_OK(ruda_future_wait(f));
  ASSERT_MEM_EQ(src, dst, sizeof src);
}

TEST(memory_usage_after_release_and_cleanup) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 0);
  ASSERT_UEQ(u.bytes_in_use, 0);
  ruda_handle_t h = cts_empty(c, 1000);
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 1);
  ASSERT_UEQ(u.bytes_in_use, 1000);
  ASSERT_UGE(u.bytes_reserved, 1000);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 0);
  ASSERT_UEQ(u.bytes_in_use, 0);
  ASSERT_UGT(u.bytes_reserved, 0); /* pages stay pooled until cleanup */
  ASSERT_OK(ruda_client_memory_cleanup(c));
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.bytes_reserved, 0);
  char report[512];
  ruda_memory_usage_format(&u, report, sizeof report);
  ASSERT_STR_CONTAINS(report, "Memory Usage Report");
  ruda_client_release(c);
}

/* One definition of usage on every backend: bytes_in_use is what the
 * layout uses (rows x pitch, the last row's padding included), padding is
 * the pool's alignment padding after it, reserved covers both. A pitched
 * [3, 5] f32 tensor on a 512-byte-aligned device uses 96 bytes with 416 of
 * padding; contiguous it uses 60. */
static void check_layout_usage(ruda_memory_layout_descriptor_t d) {
  ruda_client_t *c = cts_fresh_stream_client();
  uint64_t align = ruda_client_properties(c)->memory.alignment;
  ruda_memory_usage_t u0, u1, u2;
  ASSERT_OK(ruda_client_memory_usage(c, &u0));
  ruda_memory_layout_t t;
  ASSERT_OK(ruda_client_empty_tensors(c, &d, 1, &t));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_memory_usage(c, &u1));
  uint64_t used = d.shape.dims[0] * t.strides.values[0] * d.elem_size;
  if (d.strategy == RUDA_LAYOUT_CONTIGUOUS) ASSERT_UEQ(used, 3 * 5 * 4);
  ASSERT_UEQ(ruda_handle_size_in_used(&t.memory), used);
  ASSERT_UEQ(u1.number_allocs - u0.number_allocs, 1);
  ASSERT_UEQ(u1.bytes_in_use - u0.bytes_in_use, used);
  ASSERT_UEQ(u1.bytes_padding - u0.bytes_padding, (align - used % align) % align);
  ASSERT_UGE(u1.bytes_reserved - u0.bytes_reserved, used + (align - used % align) % align);
  ruda_handle_release(&t.memory);
  ASSERT_OK(ruda_client_memory_usage(c, &u2));
  ASSERT_UEQ(u2.number_allocs, u0.number_allocs);
  ASSERT_UEQ(u2.bytes_in_use, u0.bytes_in_use);
  ASSERT_UEQ(u2.bytes_padding, u0.bytes_padding);
  ruda_client_release(c);
}

TEST(usage_of_an_optimized_possibly_pitched_tensor) {
  check_layout_usage(ruda_memory_layout_optimized(ruda_shape_2d(3, 5), sizeof(float)));
}

TEST(usage_of_a_contiguous_tensor) {
  check_layout_usage(ruda_memory_layout_contiguous(ruda_shape_2d(3, 5), sizeof(float)));
}

TEST(freed_memory_is_reused_on_the_same_stream) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t h = cts_empty(c, 4096);
  ruda_memory_usage_t before;
  ASSERT_OK(ruda_client_memory_usage(c, &before));
  ruda_handle_release(&h);
  for (int i = 0; i < 10; i++) {
    ASSERT_OK(ruda_client_empty(c, 4096, &h));
    ruda_handle_release(&h);
  }
  ruda_memory_usage_t after;
  ASSERT_OK(ruda_client_memory_usage(c, &after));
  ASSERT_UEQ(after.bytes_reserved, before.bytes_reserved);
  ruda_client_release(c);
}

/* A slice released on a stream comes back to the next reservation of its
 * exact size on that stream (the reuse cache, docs/design/memory.md): the same
 * slot with a later generation, bound at once, while a copy of the old
 * handle stays refused. Other sizes and other streams get other memory. */
TEST(released_memory_comes_back_for_its_size_on_its_stream) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t a, b, d;
  ASSERT_OK(ruda_client_empty(c, 4096, &a));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t id = ruda_handle_memory_id(&a);
  ruda_handle_t stale = a;
  ruda_handle_release(&a);
  ASSERT_OK(ruda_client_empty(c, 4096, &b));
  ASSERT_UEQ((uint32_t)ruda_handle_memory_id(&b), (uint32_t)id);
  ASSERT_UGT(ruda_handle_memory_id(&b) >> 32, id >> 32);
  ASSERT_TRUE(ruda_handle_is_bound(&b));
  uint32_t src[1024], dst[1024];
  for (int i = 0; i < 1024; i++) src[i] = (uint32_t)i * 7u + 1u;
  ASSERT_ERR_KIND(ruda_client_write(c, &stale, src, sizeof src), RUDA_ERR_INVALID_HANDLE);
  ASSERT_OK(ruda_client_write(c, &b, src, sizeof src));
  ASSERT_OK(ruda_client_read(c, &b, dst, sizeof dst));
  ASSERT_MEM_EQ(src, dst, sizeof src);
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 1);
  ASSERT_UEQ(u.bytes_in_use, 4096);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&b);
  /* Another size: other memory; the 4096-byte slice waits for its size. */
  ASSERT_OK(ruda_client_empty(c, 4000, &d));
  ASSERT_UNE((uint32_t)ruda_handle_memory_id(&d), (uint32_t)id);
  ASSERT_OK(ruda_client_empty(c, 4096, &b));
  ASSERT_UEQ((uint32_t)ruda_handle_memory_id(&b), (uint32_t)id);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&b);
  /* Another stream: other memory. */
  ruda_client_t *c2 = cts_fresh_stream_client();
  ruda_handle_t e = cts_empty(c2, 4096);
  ASSERT_UNE((uint32_t)ruda_handle_memory_id(&e), (uint32_t)id);
  ASSERT_OK(ruda_client_sync(c2));
  ruda_handle_release(&e);
  ruda_handle_release(&d);
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 0);
  ASSERT_UEQ(u.bytes_in_use, 0);
  ASSERT_OK(ruda_client_memory_usage(c2, &u));
  ASSERT_UEQ(u.number_allocs, 0);
  ruda_client_release(c2);
  ruda_client_release(c);
}

/* Every handle of `c`'s stream is released, and the stream reserves
 * `reserved` bytes: the loops before reserved no more than their first
 * round. */
static void assert_all_released_in(ruda_client_t *c, uint64_t reserved) {
  ruda_memory_usage_t after;
  ASSERT_OK(ruda_client_memory_usage(c, &after));
  ASSERT_UEQ(after.bytes_reserved, reserved);
  ASSERT_UEQ(after.number_allocs, 0);
  ASSERT_UEQ(after.bytes_in_use, 0);
}

/* A buffer created from host data comes back the same way: released, the
 * next ruda_client_create_buffer of its size on its stream gets the same
 * slot with a later generation and the new contents, and a loop of
 * create + release reserves no more memory than its first round (it does
 * not walk through fresh memory of its page). */
TEST(a_created_buffer_of_a_released_size_reuses_its_memory) {
  ruda_client_t *c = cts_fresh_stream_client();
  enum { WORDS = 65536 }; /* 256 KiB */
  uint32_t *src = malloc(WORDS * 4u), *dst = malloc(WORDS * 4u);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  ruda_handle_t h;
  for (uint32_t i = 0; i < WORDS; i++) src[i] = i ^ 0x5a5a5a5au;
  ASSERT_OK(ruda_client_create_buffer(c, src, WORDS * 4u, &h));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t id = ruda_handle_memory_id(&h);
  ruda_memory_usage_t first;
  ASSERT_OK(ruda_client_memory_usage(c, &first));
  ruda_handle_t stale = h;
  ruda_handle_release(&h);
  for (uint32_t round = 1; round <= 20; round++) {
    for (uint32_t i = 0; i < WORDS; i++) src[i] = i * 2654435761u + round;
    ASSERT_OK(ruda_client_create_buffer(c, src, WORDS * 4u, &h));
    ASSERT_UEQ((uint32_t)ruda_handle_memory_id(&h), (uint32_t)id);
    ASSERT_UEQ(ruda_handle_memory_id(&h) >> 32, (id >> 32) + round);
    ASSERT_OK(ruda_client_read(c, &h, dst, WORDS * 4u));
    ASSERT_MEM_EQ(src, dst, WORDS * 4u);
    ruda_handle_release(&h);
  }
  ASSERT_ERR_KIND(ruda_client_read(c, &stale, dst, 4), RUDA_ERR_INVALID_HANDLE);
  assert_all_released_in(c, first.bytes_reserved);
  free(src);
  free(dst);
  ruda_client_release(c);
}

/* Tensors come back the same way: released, the next tensors whose
 * layout needs the same total on the stream get the same slot with a
 * later generation, both views of it, their strides and the new contents;
 * an empty tensor of a released shape too. No round reserves more memory
 * than the first. */
TEST(tensors_of_a_released_size_reuse_their_memory) {
  ruda_client_t *c = cts_fresh_stream_client();
  enum { ROWS = 33, COLS = 77 };
  ruda_shape_t shape = ruda_shape_2d(ROWS, COLS);
  float *src = malloc(ROWS * COLS * sizeof(float)), *dst = malloc(ROWS * COLS * sizeof(float));
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  ruda_memory_layout_t t;
  for (int i = 0; i < ROWS * COLS; i++) src[i] = (float)i;
  ASSERT_OK(ruda_client_create_tensor(c, src, &shape, sizeof(float), &t));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t id = ruda_handle_memory_id(&t.memory);
  ruda_strides_t strides = t.strides;
  ruda_memory_usage_t first;
  ASSERT_OK(ruda_client_memory_usage(c, &first));
  ruda_handle_release(&t.memory);
  for (uint32_t round = 1; round <= 10; round++) {
    for (int i = 0; i < ROWS * COLS; i++) src[i] = (float)(i * 3 + (int)round);
    ASSERT_OK(ruda_client_create_tensor(c, src, &shape, sizeof(float), &t));
    ASSERT_UEQ((uint32_t)ruda_handle_memory_id(&t.memory), (uint32_t)id);
    ASSERT_UEQ(ruda_handle_memory_id(&t.memory) >> 32, (id >> 32) + round);
    ASSERT_UEQ(t.strides.values[0], strides.values[0]);
    ASSERT_OK(ruda_client_read_tensor(c, &t.memory, &shape, &t.strides, sizeof(float), dst));
    ASSERT_MEM_EQ(src, dst, ROWS * COLS * sizeof(float));
    ruda_handle_release(&t.memory);
  }
  /* Two tensors in one allocation: the views keep their offsets. */
  ruda_memory_layout_descriptor_t d[2] = {
      ruda_memory_layout_optimized(ruda_shape_2d(4, 7), 4),
      ruda_memory_layout_contiguous(ruda_shape_1d(10), 8),
  };
  ruda_memory_layout_t two[2], again[2];
  ASSERT_OK(ruda_client_empty_tensors(c, d, 2, two));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t id2 = ruda_handle_memory_id(&two[0].memory);
  uint64_t off1 = two[1].memory.offset_start;
  ruda_handle_release(&two[0].memory);
  ruda_handle_release(&two[1].memory);
  ASSERT_OK(ruda_client_empty_tensors(c, d, 2, again));
  ASSERT_UEQ((uint32_t)ruda_handle_memory_id(&again[0].memory), (uint32_t)id2);
  ASSERT_UEQ(ruda_handle_memory_id(&again[1].memory), ruda_handle_memory_id(&again[0].memory));
  ASSERT_UEQ(again[1].memory.offset_start, off1);
  double b[10], b2[10];
  for (int i = 0; i < 10; i++) b[i] = i * -0.75;
  ASSERT_OK(ruda_client_write_tensor(c, &again[1].memory, &d[1].shape, &again[1].strides, 8, b));
  ASSERT_OK(ruda_client_read_tensor(c, &again[1].memory, &d[1].shape, &again[1].strides, 8, b2));
  ASSERT_MEM_EQ(b, b2, sizeof b);
  ruda_handle_release(&again[0].memory);
  ruda_handle_release(&again[1].memory);
  assert_all_released_in(c, first.bytes_reserved);
  free(src);
  free(dst);
  ruda_client_release(c);
}

static ruda_status_t alloc_in_scope(ruda_client_t *c, void *ctx) {
  return ruda_client_empty(c, 3000, (ruda_handle_t *)ctx);
}

TEST(persistent_mode_allocates_exact_sizes) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t h;
  ASSERT_OK(ruda_client_persistent_scope(c, alloc_in_scope, &h));
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 1);
  ASSERT_UEQ(u.bytes_in_use, 3000);
  /* exact-size bucket: reserved is the size plus alignment padding only */
  ASSERT_ULT(u.bytes_reserved, 3000 + 1024);
  uint8_t buf[3000];
  memset(buf, 9, sizeof buf);
  ASSERT_OK(ruda_client_write(c, &h, buf, sizeof buf));
  uint8_t out[3000];
  ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
  ASSERT_MEM_EQ(buf, out, sizeof buf);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

TEST(get_resource_gives_an_address) {
  ruda_client_t *c = cts_client();
  uint32_t v[4] = {1, 2, 3, 4};
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ruda_resource_t r;
  ASSERT_OK(ruda_client_get_resource(c, &h, &r));
  ASSERT_UNE(r.address, 0);
  ASSERT_UGE(r.size, sizeof v);
  if (cts_is_cpu()) {
    ASSERT_MEM_EQ((const void *)(uintptr_t)r.address, v, sizeof v);
  }
  ruda_handle_release(&h);
  ruda_resource_release(&r); /* the binding kept it alive until here */
}

TEST(staging_buffers) {
  ruda_client_t *c = cts_client();
  uint64_t sizes[2] = {100, 1 << 20};
  ruda_bytes_t b[2];
  ruda_status_t s = ruda_client_staging(c, sizes, 2, b);
  if (cts_is_cpu()) {
    ASSERT_ERR_KIND(s, RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION);
    return;
  }
  cts_require("staging");
  ASSERT_OK(s);
  ASSERT_UEQ(b[0].size, 100);
  memset(b[1].data, 3, b[1].size);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer_from_bytes(c, &b[1], &h));
  uint8_t out[64];
  ruda_handle_t v = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_end(&v, (1 << 20) - 64));
  ASSERT_OK(ruda_client_read(c, &v, out, sizeof out));
  ASSERT_UEQ(out[63], 3);
  ruda_handle_release(&v);
  ruda_handle_release(&h);
  ruda_bytes_release(&b[0]);
}
