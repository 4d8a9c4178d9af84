/* CUDA-only behaviour: properties, pitched layouts, pinned staging, large
 * pageable writes (the staging ring, and writes behind a running kernel),
 * dynamic counts, cross-stream use, compile errors, device profiling,
 * limits, running out of device memory, and launches made on their
 * caller's thread. */
#include <stdatomic.h>
#include <time.h>

#include "client/client_internal.h"
#include "cuda_test_util.h"

TEST(properties_follow_the_reference) {
  ruda_client_t *c = cuda_client();
  const ruda_device_properties_t *p = ruda_client_properties(c);
  ASSERT_UEQ(p->memory.alignment, 512);
  ASSERT_UEQ(p->memory.max_page_size, p->hardware.total_memory / 4);
  ASSERT_UEQ(p->hardware.load_width, 128);
  ASSERT_UEQ(p->hardware.plane_size_max, 32);
  ASSERT_UGE(p->hardware.max_units_per_ruda, 1024);
  ASSERT_UGT(p->hardware.num_streaming_multiprocessors, 0);
  ASSERT_EQ(p->timing_method, RUDA_TIMING_DEVICE);
  if (p->hardware.compute_capability >= 90) {
    ASSERT_TRUE(ruda_device_properties_has(p, RUDA_FEATURE_TMA));
    ASSERT_TRUE(ruda_device_properties_has(p, RUDA_FEATURE_CLUSTERS));
    ASSERT_UGT(p->hardware.max_shared_memory_size, 48 * 1024);
  }
  printf("  device: %s\n", ruda_client_info(c));
}

TEST(pitched_tensor_roundtrip) {
  ruda_client_t *c = cuda_client();
  /* Narrow rows: 12 bytes are pitched to next_pow2 = 16 (4 floats). */
  ruda_shape_t narrow = ruda_shape_2d(5, 3);
  float nd[15], nb[15];
  for (int i = 0; i < 15; i++) nd[i] = (float)i + 0.5f;
  ruda_memory_layout_t tn;
  ASSERT_OK(ruda_client_create_tensor(c, nd, &narrow, sizeof(float), &tn));
  ASSERT_UEQ(tn.strides.values[0], 4);
  ASSERT_UEQ(tn.strides.values[1], 1);
  ASSERT_OK(ruda_client_read_tensor(c, &tn.memory, &narrow, &tn.strides, sizeof(float), nb));
  ASSERT_MEM_EQ(nb, nd, sizeof nd);
  ruda_handle_release(&tn.memory);

  /* Wide rows: 800 bytes are pitched to 1024 (the 512-byte alignment). */
  enum { R = 4, C = 200 };
  ruda_shape_t shape = ruda_shape_2d(R, C);
  static float data[R * C];
  for (int i = 0; i < R * C; i++) data[i] = (float)i * 1.5f;
  ruda_memory_layout_t t;
  ASSERT_OK(ruda_client_create_tensor(c, data, &shape, sizeof(float), &t));
  ASSERT_UEQ(t.strides.rank, 2);
  ASSERT_UEQ(t.strides.values[0], 256);
  ASSERT_UEQ(t.strides.values[1], 1);
  ASSERT_UEQ(ruda_handle_size_in_used(&t.memory), R * 1024);
  static float back[R * C];
  memset(back, 0, sizeof back);
  ASSERT_OK(ruda_client_read_tensor(c, &t.memory, &shape, &t.strides, sizeof(float), back));
  ASSERT_MEM_EQ(back, data, sizeof data);
  ruda_resource_t r;
  ASSERT_OK(ruda_client_get_resource(c, &t.memory, &r));
  ASSERT_UEQ(r.address % 512, 0);
  ruda_resource_release(&r);

  /* Overwrite through write_tensor, read again. */
  for (int i = 0; i < R * C; i++) data[i] = -(float)i;
  ASSERT_OK(ruda_client_write_tensor(c, &t.memory, &shape, &t.strides, sizeof(float), data));
  ASSERT_OK(ruda_client_read_tensor(c, &t.memory, &shape, &t.strides, sizeof(float), back));
  ASSERT_MEM_EQ(back, data, sizeof data);

  /* Arbitrary (transposed) strides are not copyable. */
  ruda_strides_t bad = {2, {1, 5}};
  ASSERT_ERR_KIND(ruda_client_read_tensor(c, &t.memory, &shape, &bad, sizeof(float), back),
                  RUDA_ERR_IO_UNSUPPORTED_STRIDES);
  ruda_handle_release(&t.memory);
}

TEST(pitched_3d_tensors_in_one_allocation) {
  ruda_client_t *c = cuda_client();
  ruda_memory_layout_descriptor_t d[2];
  uint64_t dims[3] = {2, 3, 7};
  ruda_shape_t s3;
  ASSERT_OK(ruda_shape_init(&s3, 3, dims));
  d[0] = ruda_memory_layout_optimized(s3, 2);
  d[1] = ruda_memory_layout_optimized(ruda_shape_1d(1000), 4);
  ruda_memory_layout_t out[2];
  ASSERT_OK(ruda_client_empty_tensors(c, d, 2, out));
  ASSERT_UEQ(out[0].strides.values[1], 8); /* 14-byte rows pitched to 16 */
  ASSERT_UEQ(out[0].strides.values[0], 8 * 3);
  uint16_t src[42], back[42];
  for (int i = 0; i < 42; i++) src[i] = (uint16_t)(i * 7 + 1);
  ASSERT_OK(ruda_client_write_tensor(c, &out[0].memory, &s3, &out[0].strides, 2, src));
  ASSERT_OK(ruda_client_read_tensor(c, &out[0].memory, &s3, &out[0].strides, 2, back));
  ASSERT_MEM_EQ(back, src, sizeof src);
  ruda_handle_release(&out[0].memory);
  ruda_handle_release(&out[1].memory);
}

TEST(staging_buffers_are_pinned_and_roundtrip) {
  ruda_client_t *c = cuda_client();
  uint64_t sizes[2] = {1 << 20, 64};
  ruda_bytes_t st[2];
  ASSERT_OK(ruda_client_staging(c, sizes, 2, st));
  ASSERT_EQ(st[0].property, RUDA_BYTES_PINNED);
  ASSERT_UEQ(st[0].size, 1 << 20);
  uint32_t *p = st[0].data;
  for (uint32_t i = 0; i < (1 << 18); i++) p[i] = i * 3u;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer_from_bytes(c, &st[0], &h));
  /* Read back into the second (pinned) staging buffer: direct DMA path. */
  ruda_bytes_t rd;
  uint64_t rsize = 1 << 20;
  ASSERT_OK(ruda_client_staging(c, &rsize, 1, &rd));
  ASSERT_OK(ruda_client_read(c, &h, rd.data, rd.size));
  uint32_t *q = rd.data;
  for (uint32_t i = 0; i < (1 << 18); i += 4099) ASSERT_UEQ(q[i], i * 3u);
  ruda_bytes_release(&rd);
  ruda_bytes_release(&st[1]);
  ruda_handle_release(&h);
}

TEST(large_pageable_write_and_read) {
  ruda_client_t *c = cuda_client();
  size_t n = (64u << 20) / 4;
  uint32_t *src = malloc(n * 4), *back = malloc(n * 4);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(back);
  for (size_t i = 0; i < n; i++) src[i] = (uint32_t)(i ^ 0x5a5a5a5au);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, src, n * 4, &h));
  memset(back, 0, n * 4);
  ASSERT_OK(ruda_client_read(c, &h, back, n * 4));
  ASSERT_MEM_EQ(back, src, n * 4);
  free(src);
  free(back);
  ruda_handle_release(&h);
}

/* Through the staging ring (32 slots of 1 MiB): a size that is no
 * multiple of the chunk, whose 98 chunks take each slot three or four
 * times, written twice into the same buffer with a sync between (a write
 * to a stream with unfinished work is staged whole), the second one with
 * other bytes. */
TEST(pageable_write_through_the_staging_ring_arrives_whole) {
  ruda_client_t *c = cuda_client();
  size_t n = (97u << 20) + 4097;
  unsigned char *src = malloc(n), *back = malloc(n);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(back);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, n, &h));
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)((i >> 20) * 7 + i * 13 + round);
    ASSERT_OK(ruda_client_write(c, &h, src, n));
    ASSERT_OK(ruda_client_sync(c));
  }
  memset(back, 0, n);
  ASSERT_OK(ruda_client_read(c, &h, back, n));
  ASSERT_MEM_EQ(back, src, n);
  free(src);
  free(back);
  ruda_handle_release(&h);
}

/* A large pageable write behind a long kernel returns once its bytes are
 * staged, without waiting for the kernel (the staging ring, which waits
 * for its own DMA, is kept for idle streams): the kernel spins for about
 * two seconds and is still running when the write returns. The data
 * arrives after the kernel either way. */
static const char spin_src[] =
    "extern \"C\" __global__ void spin(unsigned long long *out, const unsigned long long *info) {\n"
    "  long long t0 = clock64();\n"
    "  while (clock64() - t0 < (long long)info[0]) {}\n"
    "  out[0] = 1;\n"
    "}\n";

TEST(pageable_write_behind_a_long_kernel_does_not_wait_for_it) {
  ruda_client_t *c = cuda_client();
  ruda_kernel_t *k = cuda_kernel("spin", spin_src, ruda_dim_new_1d(1), 0);
  size_t n = 96u << 20;
  unsigned char *src = malloc(n), *back = malloc(n);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(back);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 31 + (i >> 16));
  ruda_handle_t flag, h;
  uint64_t zero = 0;
  ASSERT_OK(ruda_client_create_buffer(c, &zero, sizeof zero, &flag));
  ASSERT_OK(ruda_client_empty(c, n, &h));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t info[1] = {4000000000ull}; /* cycles: about two seconds at 2 GHz */
  ruda_kernel_args_t args = {&flag, 1, NULL, 0, {info, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  ASSERT_OK(ruda_client_flush(c));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_OK(ruda_client_write(c, &h, src, n));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double write_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  uint64_t done = 7;
  ASSERT_OK(ruda_client_read(c, &flag, &done, sizeof done));
  ASSERT_UEQ(done, 1);
  memset(back, 0, n);
  ASSERT_OK(ruda_client_read(c, &h, back, n));
  ASSERT_MEM_EQ(back, src, n);
  /* 96 MiB stage in tens of milliseconds (a first pinned page of up to
   * 1 GiB adds a few hundred); waiting for the kernel would take about
   * two seconds. */
  ASSERT_TRUE(write_s < 1.0);
  free(src);
  free(back);
  ruda_handle_release(&flag);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(dynamic_count_is_read_from_the_buffer) {
  ruda_client_t *c = cuda_client();
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(32), 0);
  uint32_t count[3] = {3, 1, 1};
  ruda_handle_t ch, out;
  ASSERT_OK(ruda_client_create_buffer(c, count, sizeof count, &ch));
  uint32_t zeros[128] = {0};
  ASSERT_OK(ruda_client_create_buffer(c, zeros, sizeof zeros, &out));
  uint64_t info[2] = {128, 7};
  ruda_kernel_args_t args = {&out, 1, NULL, 0, {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_dynamic(&ch), &args));
  uint32_t back[128];
  ASSERT_OK(ruda_client_read(c, &out, back, sizeof back));
  for (int i = 0; i < 96; i++) ASSERT_UEQ(back[i], 7);
  for (int i = 96; i < 128; i++) ASSERT_UEQ(back[i], 0);
  ruda_handle_release(&ch);
  ruda_handle_release(&out);
  ruda_kernel_release(k);
}

TEST(cross_stream_consumer_waits_for_the_producer) {
  ruda_client_t *c = cuda_client();
  ruda_client_t *a = NULL, *b = NULL;
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &a));
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &b));
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(256), 0);
  size_t n = 1 << 22;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(a, n * 4, &h));
  uint64_t info[2] = {n, 42};
  ruda_kernel_args_t args = {&h, 1, NULL, 0, {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(a, k, ruda_count_static((uint32_t)(n / 256), 1, 1), &args));
  /* Read on stream b without syncing a: must see the fill. */
  uint32_t *back = malloc(n * 4);
  ASSERT_NOT_NULL(back);
  ASSERT_OK(ruda_client_read(b, &h, back, n * 4));
  for (size_t i = 0; i < n; i += 997) ASSERT_UEQ(back[i], 42);
  ASSERT_UEQ(back[n - 1], 42);
  free(back);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  ruda_client_release(a);
  ruda_client_release(b);
}

TEST(compile_error_carries_log_and_source) {
  ruda_client_t *s = cuda_stream_client();
  ruda_kernel_t *k = cuda_kernel(
      "broken", "extern \"C\" __global__ void broken(const unsigned long long *info) {\n"
                "  this_is_not_declared = 1;\n}\n",
      ruda_dim_new_1d(32), 0);
  ruda_kernel_args_t args = {0};
  ASSERT_OK(ruda_client_launch(s, k, ruda_count_static(1, 1, 1), &args));
  ruda_status_t e = ruda_client_sync(s);
  ASSERT_NOT_NULL(e);
  ruda_status_t ce = ruda_status_find(e, RUDA_ERR_COMPILATION_GENERIC);
  ASSERT_NOT_NULL(ce);
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "[Compilation Error]");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "this_is_not_declared");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "[Source]");
  ruda_status_free(e);
  /* The stream is healthy again. */
  ASSERT_OK(ruda_client_sync(s));
  ruda_kernel_release(k);
  ruda_client_release(s);
}

TEST(shared_memory_limit_is_a_resource_error) {
  ruda_client_t *s = cuda_stream_client();
  uint64_t max = ruda_client_properties(s)->hardware.max_shared_memory_size;
  ruda_kernel_t *k = cuda_kernel(
      "big_shared", "extern \"C\" __global__ void big_shared(const unsigned long long *i) {}\n",
      ruda_dim_new_1d(32), max + 4);
  ruda_kernel_args_t args = {0};
  /* Refused by the launch itself, naming the kernel; nothing queued. */
  ruda_status_t e = ruda_client_launch(s, k, ruda_count_static(1, 1, 1), &args);
  ruda_status_t lim = ruda_status_find(e, RUDA_ERR_RESOURCE_SHARED_MEMORY);
  ASSERT_NOT_NULL(lim);
  ASSERT_UEQ(ruda_status_requested(lim), max + 4);
  ASSERT_UEQ(ruda_status_max(lim), max);
  ASSERT_STR_EQ(ruda_status_kernel(e), "big_shared");
  ruda_status_free(e);
  ASSERT_OK(ruda_client_sync(s));
  ruda_kernel_release(k);
  /* Opt-in shared memory above 48 KiB works. */
  if (max > 64 * 1024) {
    ruda_kernel_t *k2 = cuda_kernel(
        "opt_in_shared",
        "extern \"C\" __global__ void opt_in_shared(unsigned int *o, const unsigned long long *i) {\n"
        "  extern __shared__ unsigned int sh[];\n"
        "  sh[threadIdx.x + 16000] = threadIdx.x; __syncthreads();\n"
        "  o[threadIdx.x] = sh[threadIdx.x + 16000];\n}\n",
        ruda_dim_new_1d(32), 64 * 1024 + 512);
    ruda_handle_t h;
    ASSERT_OK(ruda_client_empty(s, 128, &h));
    ruda_kernel_args_t a2 = {&h, 1, NULL, 0, {NULL, 0, 0}};
    ASSERT_OK(ruda_client_launch(s, k2, ruda_count_static(1, 1, 1), &a2));
    uint32_t back[32];
    ASSERT_OK(ruda_client_read(s, &h, back, sizeof back));
    for (uint32_t i = 0; i < 32; i++) ASSERT_UEQ(back[i], i);
    ruda_handle_release(&h);
    ruda_kernel_release(k2);
  }
  ruda_client_release(s);
}

typedef struct prof_ctx {
  ruda_kernel_t *k;
  ruda_handle_t *h;
} prof_ctx_t;

static ruda_status_t prof_body(ruda_client_t *c, void *p) {
  prof_ctx_t *x = p;
  uint64_t info[2] = {1u << 24, 3};
  ruda_kernel_args_t args = {x->h, 1, NULL, 0, {info, 2, 2}};
  for (int i = 0; i < 4; i++) {
    ruda_status_t s = ruda_client_launch(c, x->k, ruda_count_static((1u << 24) / 256, 1, 1), &args);
    if (s) return s;
  }
  return NULL;
}

TEST(profile_uses_device_timestamps) {
  ruda_client_t *c = cuda_client();
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(256), 0);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, (1u << 24) * 4, &h));
  prof_ctx_t x = {k, &h};
  ruda_profile_duration_t d;
  ASSERT_OK(ruda_client_profile(c, "fill", prof_body, &x, &d));
  ASSERT_EQ(d.method, RUDA_TIMING_DEVICE);
  ASSERT_UGT(ruda_profile_duration_ns(d), 1000);       /* 4 x 64 MiB writes */
  ASSERT_ULT(ruda_profile_duration_ns(d), 1000000000); /* < 1 s */
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(out_of_memory_then_a_working_allocation) {
  ruda_client_t *s = cuda_stream_client();
  uint64_t total = ruda_client_properties(s)->hardware.total_memory;
  uint64_t chunk = ruda_client_properties(s)->memory.max_page_size - (1ull << 20);
  ruda_handle_t hs[16];
  size_t n = 0;
  ruda_status_t err = NULL;
  /* Chunks of just under a page each, until the device is full. */
  while (n < 16 && (uint64_t)n * chunk <= total + chunk) {
    ASSERT_OK(ruda_client_empty(s, chunk, &hs[n++]));
    err = ruda_client_flush(s);
    if (err) break;
  }
  ASSERT_NOT_NULL(err);
  char *text = status_text(err);
  printf("  after %zu chunks of %llu bytes: %s\n", n, (unsigned long long)chunk, text);
  free(text);
  ASSERT_NOT_NULL(ruda_status_find(err, RUDA_ERR_IO_OUT_OF_MEMORY));
  ruda_status_free(err);
  for (size_t i = 0; i < n; i++) ruda_handle_release(&hs[i]);
  ASSERT_OK(ruda_client_memory_cleanup(s));
  ASSERT_OK(ruda_client_sync(s));
  /* The device works again. */
  client_round_trips(s);
  ruda_client_release(s);
}

/* x[0] = 3 * x[0] + info[0]: a launch lost, repeated or out of order
 * leaves another value. */
static const char triple_add_src[] =
    "extern \"C\" __global__ void triple_add(unsigned int *x, const unsigned long long *info) {\n"
    "  if (blockIdx.x == 0 && threadIdx.x == 0) x[0] = 3u * x[0] + (unsigned int)info[0];\n"
    "}\n";

/* A thread that syncs after every launch has its launches made on its own
 * thread (src/client/client_launch.c); bursts of launches stay queued;
 * the stream's order holds across both. */
TEST(round_trips_launch_on_the_caller_and_bursts_queue) {
  ruda_client_t *c = cuda_client();
  ruda_kernel_t *k = cuda_kernel("triple_add", triple_add_src, ruda_dim_new_1d(1), 0);
  ASSERT_NOT_NULL(k);
  uint32_t zero = 0, got = 0, expect = 0, add = 1;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, &zero, sizeof zero, &h));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t info[1];
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 1, 0}};
  uint64_t before = atomic_load(&c->dev->ops_here);
  for (int i = 0; i < 40; i++, add++) {
    info[0] = add;
    ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
    expect = 3u * expect + add;
    ASSERT_OK(ruda_client_sync(c));
  }
  uint64_t here = atomic_load(&c->dev->ops_here) - before;
  ASSERT_UGE(here, 35);
  for (int b = 0; b < 5; b++) {
    for (int i = 0; i < 6; i++, add++) {
      info[0] = add;
      ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
      expect = 3u * expect + add;
    }
    ASSERT_OK(ruda_client_sync(c));
  }
  /* Only the first launch of the first burst may be made here. */
  ASSERT_ULE(atomic_load(&c->dev->ops_here) - before - here, 1);
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_UEQ(got, expect);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}
