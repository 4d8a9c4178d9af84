/* Conformance: bad handles and bad input never touch memory they should
 * not, fail with the documented error, and leave the runtime usable.
 *
 * Stale copies of released handles, handles of another device, handles
 * whose recorded size exceeds their allocation, strides whose extent
 * overflows 64 bits, NULL data with a non-zero size, and the persistent
 * pool's key wrap. Every case ends by checking that the client still
 * reads back what it writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "memory/memory_handle.h"
#include "ruda/dlpack.h"

/* A second CPU device, so that cpu:0 has a foreign device to refuse. Only
 * this program's environment; a variable already set wins. */
__attribute__((constructor)) static void two_cpu_devices(void) {
  setenv("RUDA_CPU_DEVICES", "2", 0);
}

#define expect_invalid_handle(expr, needle)                       \
  do {                                                            \
    ruda_status_t s_ = (expr);                                    \
    ASSERT_EQ(ruda_status_kind(s_), RUDA_ERR_INVALID_HANDLE);     \
    const char *n_ = (needle);                                    \
    if (n_) ASSERT_STR_CONTAINS(ruda_status_reason(s_), n_);      \
    ruda_status_free(s_);                                         \
  } while (0)

/* A read, a write, a resource and a launch of `h` are each refused as an
 * invalid handle whose reason contains `want` (`buf`: `len` bytes). */
static void expect_refused_everywhere(ruda_client_t *c, const ruda_handle_t *h, void *buf,
                                      size_t len, const char *want) {
  expect_invalid_handle(ruda_client_read(c, h, buf, len), want);
  expect_invalid_handle(ruda_client_write(c, h, buf, len), want);
  ruda_resource_t r;
  expect_invalid_handle(ruda_client_get_resource(c, h, &r), want);
  ruda_kernel_t *k = cts_kernel_fill_u32();
  uint64_t info[2] = {16, 9};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 2, 0}};
  expect_invalid_handle(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args), want);
  ruda_kernel_release(k);
}

TEST(stale_handle_copy_is_refused_everywhere) {
  ruda_client_t *c = cts_fresh_stream_client();
  uint32_t v[16] = {1, 2, 3};
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ruda_handle_t copy = h; /* a copy kept past the release */
  ruda_handle_release(&h);
  char released[64];
  snprintf(released, sizeof released, "handle #%u.%u was released", (unsigned)copy.id,
           (unsigned)(copy.id >> 32));
  uint32_t out[16];
  ruda_shape_t shape = ruda_shape_1d(16);
  ruda_strides_t strides = ruda_strides_contiguous(&shape);
  expect_refused_everywhere(c, &copy, out, sizeof out, released);
  expect_invalid_handle(ruda_client_write_tensor(c, &copy, &shape, &strides, 4, v), released);
  expect_invalid_handle(ruda_client_read_tensor(c, &copy, &shape, &strides, 4, out), released);
  ruda_handle_t clone = ruda_handle_clone(&copy);
  ASSERT_TRUE(ruda_handle_is_empty(&clone));
  ASSERT_FALSE(ruda_handle_can_mut(&copy));
  ASSERT_FALSE(ruda_handle_is_bound(&copy));
  /* The next allocations reuse the memory and, in the handle table, the
   * slot: the copy still names the old generation only. */
  ruda_handle_t fresh[4];
  for (int i = 0; i < 4; i++) ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &fresh[i]));
  expect_invalid_handle(ruda_client_read(c, &copy, out, sizeof out), released);
  expect_invalid_handle(ruda_client_write(c, &copy, v, sizeof v), released);
  ruda_handle_release(&copy); /* a no-op: nothing of the new owners is dropped */
  for (int i = 0; i < 4; i++) {
    memset(out, 0, sizeof out);
    ASSERT_OK(ruda_client_read(c, &fresh[i], out, sizeof out));
    ASSERT_MEM_EQ(out, v, sizeof v);
    ASSERT_TRUE(ruda_handle_can_mut(&fresh[i]));
    ruda_handle_release(&fresh[i]);
  }
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(handle_of_another_device_is_refused) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_device_id_t self = ruda_client_device(c), other = {RUDA_DEVICE_TYPE_CPU, 0};
  if (self.type_id == RUDA_DEVICE_TYPE_CPU) other.index_id = self.index_id == 0 ? 1 : 0;
  ruda_client_t *oc = NULL;
  ruda_status_t s = ruda_client_create(other, &oc);
  if (s) {
    ruda_status_free(s);
    SKIP("no second device to take a foreign handle from");
  }
  uint32_t v[16] = {5, 6, 7};
  ruda_handle_t foreign = cts_upload(oc, v, sizeof v);
  char a[32], b[32], want[96];
  ruda_device_id_format(other, a, sizeof a);
  ruda_device_id_format(self, b, sizeof b);
  snprintf(want, sizeof want, "belongs to %s, not %s", a, b);
  uint32_t out[16];
  expect_refused_everywhere(c, &foreign, out, sizeof out, want);
  /* Editing the struct's device field does not make it ours. */
  ruda_handle_t edited = foreign;
  edited.device = self;
  expect_invalid_handle(ruda_client_read(c, &edited, out, sizeof out), want);
  /* Its own device still reads it. */
  ASSERT_OK(ruda_client_read(oc, &foreign, out, sizeof out));
  ASSERT_MEM_EQ(out, v, sizeof v);
  ruda_handle_release(&foreign);
  cts_still_usable(c);
  ruda_client_release(oc);
  ruda_client_release(c);
}

TEST(handle_claiming_more_than_its_allocation_is_refused) {
  ruda_client_t *c = cts_fresh_stream_client();
  uint8_t v[64];
  for (int i = 0; i < 64; i++) v[i] = (uint8_t)i;
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ruda_handle_t big = h;
  big.size = 1ull << 30;
  static uint8_t out[1 << 16];
  const char *want = "says its allocation holds 1073741824 bytes; it holds 64";
  expect_refused_everywhere(c, &big, out, sizeof out, want);
  /* Offsets past the allocation, and offsets that wrap. */
  ruda_handle_t off = h;
  off.offset_start = 60;
  off.offset_end = 10;
  expect_invalid_handle(ruda_client_read(c, &off, out, sizeof out), "views [+60, -10]");
  off.offset_start = UINT64_MAX - 3;
  off.offset_end = 8;
  expect_invalid_handle(ruda_client_write(c, &off, v, 4), NULL);
  /* The real handle is untouched and exact. */
  ruda_resource_t r;
  ASSERT_OK(ruda_client_get_resource(c, &h, &r));
  ASSERT_UEQ(r.size, 64);
  ruda_resource_release(&r);
  memset(out, 0, 64);
  ASSERT_OK(ruda_client_read(c, &h, out, 64));
  ASSERT_MEM_EQ(out, v, 64);
  ruda_handle_release(&h);
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(stride_extent_overflow_is_refused) {
  /* shape [2, 2] with strides {2^30, 2^64 - 1 - 2^30} on 64 bytes: the
   * extent wraps to a small number without overflow checks, and the copy
   * lands a GiB away. */
  ruda_client_t *c = cts_fresh_stream_client();
  uint8_t v[64] = {1, 2, 3, 4};
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ruda_shape_t shape = ruda_shape_2d(2, 2);
  ruda_strides_t strides = {2, {1ull << 30, UINT64_MAX - (1ull << 30)}};
  uint8_t data[4] = {9, 9, 9, 9}, out[4];
  ASSERT_ERR_KIND(ruda_client_write_tensor(c, &h, &shape, &strides, 1, data),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_read_tensor(c, &h, &shape, &strides, 1, out),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* A shape whose byte count overflows, with zero strides that keep the
   * extent small. */
  ruda_shape_t huge = ruda_shape_1d(1ull << 62);
  ruda_strides_t zero = {1, {0}};
  ASSERT_ERR_KIND(ruda_client_write_tensor(c, &h, &huge, &zero, 8, data),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_read_tensor(c, &h, &huge, &zero, 8, out),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_memory_layout_t t;
  ASSERT_ERR_KIND(ruda_client_create_tensor(c, data, &huge, 8, &t), RUDA_ERR_IO_BUFFER_TOO_BIG);
  /* The bytes are untouched. */
  uint8_t back[64];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  ASSERT_MEM_EQ(back, v, sizeof v);
  ruda_handle_release(&h);
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(null_bytes_with_a_size_are_refused) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_bytes_t b;
  memset(&b, 0, sizeof b);
  b.size = 64;
  ruda_handle_t h;
  ASSERT_ERR_KIND(ruda_client_create_buffer_from_bytes(c, &b, &h), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(ruda_handle_is_empty(&h));
  ASSERT_ERR_KIND(ruda_client_create_buffer(c, NULL, 64, &h), RUDA_ERR_INVALID_ARGUMENT);
  /* Empty bytes are fine. */
  memset(&b, 0, sizeof b);
  ASSERT_OK(ruda_client_create_buffer_from_bytes(c, &b, &h));
  ASSERT_UEQ(ruda_handle_size_in_used(&h), 0);
  ruda_handle_release(&h);
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(persistent_reservation_of_2_pow_64_minus_1_fails_cleanly) {
  /* Reserve 0, release, reserve UINT64_MAX: the effective size used to
   * wrap to the 0-byte bucket, the huge handle got the 0-byte slice and a
   * 64-byte write crashed. */
  ruda_client_t *c = cts_fresh_stream_client();
  ASSERT_OK(ruda_client_allocation_mode(c, RUDA_ALLOCATION_PERSISTENT));
  ruda_handle_t z, huge;
  ASSERT_OK(ruda_client_empty(c, 0, &z));
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&z);
  ASSERT_OK(ruda_client_empty(c, UINT64_MAX, &huge));
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ASSERT_TRUE(ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG) != NULL ||
              ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY) != NULL);
  ruda_status_free(s);
  ASSERT_FALSE(ruda_handle_is_bound(&huge));
  uint8_t v[64] = {1};
  ASSERT_OK(ruda_client_write(c, &huge, v, sizeof v)); /* queued; fails on the device */
  s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s); /* NotFound: the handle was never bound */
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_IO_NOT_FOUND));
  ruda_status_free(s);
  ruda_handle_release(&huge);
  /* The pool is consistent: a 0-byte and a 64-byte reservation work. */
  ASSERT_OK(ruda_client_empty(c, 0, &z));
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  uint8_t back[64];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  ASSERT_MEM_EQ(back, v, sizeof v);
  ASSERT_TRUE(ruda_handle_is_bound(&h));
  ruda_handle_release(&h);
  ruda_handle_release(&z);
  ASSERT_OK(ruda_client_allocation_mode(c, RUDA_ALLOCATION_AUTO));
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(small_dynamic_count_buffer_is_a_launch_error) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = cts_kernel_empty();
  uint32_t xy[2] = {1, 1};
  ruda_handle_t h = cts_upload(c, xy, sizeof xy);
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_dynamic(&h), NULL);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "needs 12 bytes");
  ruda_status_free(s);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(is_bound_reflects_the_last_sync) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t ok, bad;
  ASSERT_OK(ruda_client_empty(c, 256, &ok));
  cts_empty_unallocatable(c, &bad);
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ruda_status_free(s);
  ASSERT_TRUE(ruda_handle_is_bound(&ok));
  ASSERT_FALSE(ruda_handle_is_bound(&bad));
  ruda_handle_release(&bad);
  ruda_handle_release(&ok);
  cts_still_usable(c);
  ruda_client_release(c);
}

TEST(launch_sizes_that_wrap_are_refused) {
  /* An info length whose byte count wraps the launch block's size. */
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = cts_kernel_empty();
  uint64_t info[2] = {1, 2};
  ruda_kernel_args_t args = {.info = {info, SIZE_MAX / 8 + 2, 0}};
  ASSERT_ERR_KIND(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_kernel_release(k);
  cts_still_usable(c);
  ruda_client_release(c);
}

/* Read-only memory (a DLPack import the producer marked read-only) binds
 * to a buffer its kernel declares const, and to no other: a launch that
 * would let the kernel write into it fails at once, naming the kernel, the
 * parameter and why, the memory keeps its bytes, and the stream goes on.
 * On cpu:N the memory is a real read-only import; other backends import
 * no host tensors, so the flag is set on an allocation of the device (the
 * check is the same client code on every backend). */
static void producer_free(struct DLManagedTensorVersioned *t) { free(t->dl_tensor.data); }

TEST(read_only_memory_binds_only_to_buffers_declared_const) {
  ruda_client_t *c = cts_fresh_stream_client();
  enum { N = 64 };
  float av[N], bv[N];
  for (int i = 0; i < N; i++) {
    av[i] = (float)i;
    bv[i] = 100.0f;
  }
  ruda_handle_t ro, b, out;
  struct DLManagedTensorVersioned t;
  int64_t shape[1] = {N};
  if (cts_is_cpu()) {
    memset(&t, 0, sizeof t);
    float *data = malloc(sizeof av);
    ASSERT_NOT_NULL(data);
    memcpy(data, av, sizeof av);
    t.version.major = DLPACK_MAJOR_VERSION;
    t.version.minor = DLPACK_MINOR_VERSION;
    t.deleter = producer_free;
    t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    t.dl_tensor.data = data;
    t.dl_tensor.device.device_type = kDLCPU;
    t.dl_tensor.ndim = 1;
    t.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
    t.dl_tensor.shape = shape;
    ruda_dlpack_tensor_t rt;
    ASSERT_OK(ruda_dlpack_import(c, &t, &rt));
    ASSERT_TRUE(rt.read_only);
    ro = rt.handle;
  } else {
    ASSERT_OK(ruda_client_create_buffer(c, av, sizeof av, &ro));
    ASSERT_OK(ruda_client_sync(c));
    ruda__memory_set_read_only(ruda__handle_memory(&ro));
  }
  ASSERT_OK(ruda_client_create_buffer(c, bv, sizeof bv, &b));
  ASSERT_OK(ruda_client_create_buffer(c, bv, sizeof bv, &out));
  ruda_kernel_t *k = cts_kernel_add_f32();
  uint64_t info[1] = {N};
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.num_buffers = 3;
  args.info.data = info;
  args.info.len = 1;

  /* add_f32(const float *a, const float *b, float *c): as `a` it is read. */
  ruda_handle_t reads[3] = {ro, b, out};
  args.buffers = reads;
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(N, 1, 1), &args));
  float got[N];
  ASSERT_OK(ruda_client_read(c, &out, got, sizeof got));
  for (int i = 0; i < N; i++) ASSERT_DBL_NEAR(got[i], (double)i + 100.0, 0);

  /* As `c`, the kernel would write into it: refused before it runs. */
  ruda_handle_t writes[3] = {b, b, ro};
  args.buffers = writes;
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(N, 1, 1), &args);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "launch of 'add_f32': buffer 'c' (buffer 2) is a "
                                             "read-only DLPack import");
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "RUDA_BUFFER(float *restrict, c), not const");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_read(c, &ro, got, sizeof got));
  ASSERT_MEM_EQ(got, av, sizeof av);

  /* inc_u32(uint32_t *x) writes its one buffer: refused too. */
  ruda_kernel_t *inc = cts_kernel_inc_u32();
  uint64_t n_info[1] = {N};
  ruda_kernel_args_t inc_args;
  memset(&inc_args, 0, sizeof inc_args);
  inc_args.buffers = &ro;
  inc_args.num_buffers = 1;
  inc_args.info.data = n_info;
  inc_args.info.len = 1;
  s = ruda_client_launch(c, inc, ruda_count_static(N, 1, 1), &inc_args);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "'x' (buffer 0) is a read-only DLPack import");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_read(c, &ro, got, sizeof got));
  ASSERT_MEM_EQ(got, av, sizeof av);
  ruda_kernel_release(inc);

  cts_still_usable(c);
  ruda_kernel_release(k);
  ruda_handle_release(&ro);
  ruda_handle_release(&b);
  ruda_handle_release(&out);
  ruda_client_release(c);
}
