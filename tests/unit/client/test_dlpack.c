/* DLPack export and import on cpu:0 (ruda/dlpack.h): no copy either way,
 * the deleter called exactly once when the last view goes, read-only
 * imports, streams, and every kind of bad input. */
#include <stdlib.h>
#include <string.h>

#include "ruda/dlpack.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static ruda_client_t *client(void) {
  static ruda_client_t *c;
  if (!c) ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  return c;
}

/* A producer's tensor: malloc'ed floats, a deleter that counts. */
typedef struct producer {
  struct DLManagedTensorVersioned t;
  int64_t shape[2];
  int64_t strides[2];
  float *data;
  int deleted;
} producer_t;

static void producer_delete(struct DLManagedTensorVersioned *t) {
  producer_t *p = t->manager_ctx;
  p->deleted++;
  free(p->data);
  p->data = NULL;
}

static void producer_init(producer_t *p, int64_t rows, int64_t cols) {
  memset(p, 0, sizeof *p);
  p->data = malloc((size_t)(rows * cols) * sizeof(float));
  for (int64_t i = 0; i < rows * cols; i++) p->data[i] = (float)i * 0.5f;
  p->shape[0] = rows;
  p->shape[1] = cols;
  p->t = (struct DLManagedTensorVersioned){
      .version = {.major = DLPACK_MAJOR_VERSION, .minor = DLPACK_MINOR_VERSION},
      .manager_ctx = p,
      .deleter = producer_delete,
      .dl_tensor = {.data = p->data,
                    .device = {.device_type = kDLCPU},
                    .ndim = 2,
                    .dtype = {.code = kDLFloat, .bits = 32, .lanes = 1},
                    .shape = p->shape,
                    .strides = NULL},
  };
}

/* Imports a read-only 2 x 2 producer's tensor `p` into `rt` on `c`. */
static void import_read_only(ruda_client_t *c, producer_t *p, ruda_dlpack_tensor_t *rt) {
  producer_init(p, 2, 2);
  p->t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  ASSERT_OK(ruda_dlpack_import(c, &p->t, rt));
}

static const DLDataType k_f32 = {kDLFloat, 32, 1};

static void doubler(const ruda_cpu_kernel_ctx_t *ctx) {
  float *x = ctx->buffers[0];
  uint64_t n = ctx->buffer_sizes[0] / sizeof(float);
  for (uint64_t i = 0; i < n; i++) x[i] *= 2.0f;
}

static ruda_kernel_t *doubler_kernel(void) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(doubler);
  ruda_kernel_desc_t d = test_kernel_desc("doubler", ruda_dim_new_1d(1), &code);
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  return k;
}

TEST(export_gives_the_handles_own_memory) {
  ruda_client_t *c = client();
  float v[12];
  for (int i = 0; i < 12; i++) v[i] = (float)i;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  int64_t shape[2] = {3, 4};
  struct DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(ruda_dlpack_export(c, &h, k_f32, 2, shape, NULL, RUDA_DLPACK_NO_STREAM, &t));
  ASSERT_EQ(t->version.major, DLPACK_MAJOR_VERSION);
  ASSERT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  ASSERT_EQ(t->dl_tensor.ndim, 2);
  ASSERT_EQ(t->dl_tensor.shape[0], 3);
  ASSERT_EQ(t->dl_tensor.shape[1], 4);
  ASSERT_EQ(t->dl_tensor.strides[0], 4);
  ASSERT_EQ(t->dl_tensor.strides[1], 1);
  ASSERT_UEQ(t->flags, 0);
  ruda_resource_t r;
  ASSERT_OK(ruda_client_get_resource(c, &h, &r));
  ASSERT_PTR_EQ(t->dl_tensor.data, (void *)(uintptr_t)r.address);
  ruda_resource_release(&r);
  const float *seen = t->dl_tensor.data;
  for (int i = 0; i < 12; i++) ASSERT_DBL_NEAR(seen[i], (double)i, 0);
  /* The tensor keeps the memory alive after the handle is gone. */
  ruda_handle_release(&h);
  ASSERT_DBL_NEAR(((const float *)t->dl_tensor.data)[11], 11.0, 0);
  t->deleter(t);
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 0);
}

TEST(import_is_zero_copy_and_the_deleter_runs_once_at_the_last_release) {
  ruda_client_t *c = client();
  producer_t p;
  producer_init(&p, 4, 8);
  float *data = p.data;
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(c, &p.t, &rt));
  ASSERT_EQ(rt.ndim, 2);
  ASSERT_EQ(rt.strides[0], 8);
  ASSERT_FALSE(rt.read_only);
  ASSERT_UEQ(ruda_handle_size_in_used(&rt.handle), 32 * sizeof(float));
  /* ruda sees the producer's bytes... */
  float back[32];
  ASSERT_OK(ruda_client_read(c, &rt.handle, back, sizeof back));
  ASSERT_DBL_NEAR(back[31], 15.5, 0);
  /* ...and a kernel writes into them, in place. */
  ruda_kernel_t *k = doubler_kernel();
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = &rt.handle;
  args.num_buffers = 1;
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_DBL_NEAR(data[31], 31.0, 0);
  /* Exported again: the very same address. */
  struct DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(ruda_dlpack_export(c, &rt.handle, rt.dtype, rt.ndim, rt.shape, rt.strides,
                               RUDA_DLPACK_NO_STREAM, &t));
  ASSERT_PTR_EQ(t->dl_tensor.data, (void *)data);
  /* A clone and the export hold it too: only the last one frees it. */
  ruda_handle_t clone = ruda_handle_clone(&rt.handle);
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 0);
  t->deleter(t);
  ASSERT_EQ(p.deleted, 0);
  ruda_handle_release(&clone);
  ASSERT_EQ(p.deleted, 1);
  /* Nothing of ruda's pools took or freed it; later work does not call it again. */
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.number_allocs, 0);
  ruda_client_memory_cleanup(c);
  ruda_handle_t other;
  ASSERT_OK(ruda_client_empty(c, 128, &other));
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&other);
  ASSERT_EQ(p.deleted, 1);
  ruda_kernel_release(k);
}

TEST(read_only_imports_refuse_writes_and_export_read_only) {
  ruda_client_t *c = client();
  producer_t p;
  ruda_dlpack_tensor_t rt;
  import_read_only(c, &p, &rt);
  ASSERT_TRUE(rt.read_only);
  float four[4] = {1, 2, 3, 4};
  ASSERT_ERR_KIND(ruda_client_write(c, &rt.handle, four, sizeof four), RUDA_ERR_INVALID_ARGUMENT);
  ruda_shape_t shape = ruda_shape_1d(4);
  ruda_strides_t strides = ruda_strides_contiguous(&shape);
  ASSERT_ERR_KIND(ruda_client_write_tensor(c, &rt.handle, &shape, &strides, sizeof(float), four),
                  RUDA_ERR_INVALID_ARGUMENT);
  float back[4];
  ASSERT_OK(ruda_client_read(c, &rt.handle, back, sizeof back));
  ASSERT_DBL_NEAR(back[3], 1.5, 0);
  struct DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(ruda_dlpack_export(c, &rt.handle, k_f32, rt.ndim, rt.shape, NULL,
                               RUDA_DLPACK_NO_STREAM, &t));
  ASSERT_UEQ(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
  t->deleter(t);
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 1);
}

/* A raw CPU function declares nothing ruda can read: it may write any
 * buffer, so a read-only import is refused to it, before it runs. */
TEST(read_only_imports_are_refused_to_kernels_without_a_declaration) {
  ruda_client_t *c = client();
  producer_t p;
  ruda_dlpack_tensor_t rt;
  import_read_only(c, &p, &rt);
  ruda_kernel_t *k = doubler_kernel();
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = &rt.handle;
  args.num_buffers = 1;
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s),
                      "launch of 'doubler': buffer 0 is a read-only DLPack import, and ruda "
                      "cannot read the kernel's declaration");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_DBL_NEAR(p.data[3], 1.5, 0);
  ruda_kernel_release(k);
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 1);
}

/* Imports `p`, expecting `kind`, and checks that the deleter ran once and
 * nothing was handed out. */
static void expect_refused(producer_t *p, ruda_error_kind_t kind, const char *text) {
  ruda_dlpack_tensor_t rt;
  ruda_status_t s = ruda_dlpack_import(client(), &p->t, &rt);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), kind);
  char *msg = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(msg, text);
  free(msg);
  ruda_status_free(s);
  ASSERT_TRUE(ruda_handle_is_empty(&rt.handle));
  ASSERT_EQ(p->deleted, 1);
}

TEST(bad_tensors_are_refused_and_deleted_once) {
  producer_t p;
  producer_init(&p, 2, 3);
  p.t.version.major = DLPACK_MAJOR_VERSION + 1;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "DLPack version 2.");

  producer_init(&p, 2, 3);
  p.t.dl_tensor.dtype.code = kDLComplex;
  p.t.dl_tensor.dtype.bits = 64;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "dtype complex64");

  producer_init(&p, 2, 3);
  p.t.dl_tensor.dtype.lanes = 4;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "4 lanes");

  producer_init(&p, 2, 3);
  p.strides[0] = -3;
  p.strides[1] = 1;
  p.t.dl_tensor.strides = p.strides;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "strides[0] is negative");

  producer_init(&p, 2, 3);
  p.shape[0] = INT64_C(1) << 40;
  p.strides[0] = INT64_C(1) << 40;
  p.strides[1] = 1;
  p.t.dl_tensor.strides = p.strides;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "reach past 2^64 elements");

  producer_init(&p, 2, 3);
  p.shape[1] = -1;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "shape[1] is negative");

  producer_init(&p, 2, 3);
  free(p.data);
  p.data = NULL;
  p.t.dl_tensor.data = NULL;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "NULL data for 24 bytes");

  producer_init(&p, 2, 3);
  p.t.dl_tensor.device.device_type = kDLVulkan;
  expect_refused(&p, RUDA_ERR_UNAVAILABLE, "kDLVulkan");

  producer_init(&p, 2, 3);
  p.t.dl_tensor.device.device_type = kDLOpenCL;
  expect_refused(&p, RUDA_ERR_UNAVAILABLE, "kDLOpenCL");

  producer_init(&p, 2, 3);
  p.t.dl_tensor.device.device_type = kDLCUDA;
  p.t.dl_tensor.device.device_id = 1;
  expect_refused(&p, RUDA_ERR_INVALID_ARGUMENT, "kDLCUDA device 1; the client is cpu:0");

  ruda_dlpack_tensor_t rt;
  ASSERT_ERR_KIND(ruda_dlpack_import(client(), NULL, &rt), RUDA_ERR_INVALID_ARGUMENT);
  producer_init(&p, 2, 3);
  ASSERT_ERR_KIND(ruda_dlpack_import(NULL, &p.t, &rt), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(p.deleted, 1);
}

TEST(byte_offset_and_strides_set_the_view) {
  producer_t p;
  producer_init(&p, 3, 4); /* 0.0, 0.5, 1.0, ... */
  /* Column 1 of rows 1..2: byte_offset to row 1, column 1; row stride 4. */
  p.shape[0] = 2;
  p.shape[1] = 1;
  p.strides[0] = 4;
  p.strides[1] = 1;
  p.t.dl_tensor.strides = p.strides;
  p.t.dl_tensor.byte_offset = 5 * sizeof(float);
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(client(), &p.t, &rt));
  /* From element 5 to element 9, inclusive. */
  ASSERT_UEQ(ruda_handle_size_in_used(&rt.handle), 5 * sizeof(float));
  float back[5];
  ASSERT_OK(ruda_client_read(client(), &rt.handle, back, sizeof back));
  ASSERT_DBL_NEAR(back[0], 2.5, 0);
  ASSERT_DBL_NEAR(back[4], 4.5, 0);
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 1);
}

TEST(an_empty_tensor_without_data_imports) {
  producer_t p;
  producer_init(&p, 0, 5);
  free(p.data);
  p.data = NULL;
  p.t.dl_tensor.data = NULL;
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(client(), &p.t, &rt));
  ASSERT_UEQ(ruda_handle_size_in_used(&rt.handle), 0);
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 1);
}

TEST(export_checks_its_arguments) {
  ruda_client_t *c = client();
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 64, &h));
  struct DLManagedTensorVersioned *t = NULL;
  int64_t big[1] = {17}, ok[1] = {16}, neg[1] = {-1}, stride2[1] = {2};
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 1, big, NULL, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 1, ok, stride2, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 1, neg, NULL, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 1, ok, neg, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 33, ok, NULL, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  DLDataType c64 = {kDLComplex, 64, 1};
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, c64, 1, ok, NULL, -1, &t), RUDA_ERR_INVALID_ARGUMENT);
  /* A CPU device has no stream to order. */
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &h, k_f32, 1, ok, NULL, 7, &t), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(t);
  ruda_handle_t gone = h;
  ruda_handle_release(&h);
  ASSERT_ERR_KIND(ruda_dlpack_export(c, &gone, k_f32, 1, ok, NULL, -1, &t), RUDA_ERR_INVALID_HANDLE);
  int64_t s = 0;
  ASSERT_OK(ruda_dlpack_stream(c, &s));
  ASSERT_EQ(s, RUDA_DLPACK_NO_STREAM);
  ASSERT_STR_EQ(ruda_dlpack_dtype_name(k_f32), "float32");
  ASSERT_NULL(ruda_dlpack_dtype_name(c64));
}

TEST(export_on_opencl_gives_the_cl_mem) {
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_OPENCL, 0}, &c);
  if (s) {
    char why[512];
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    SKIP_UNAVAILABLE("opencl", why);
  }
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  int64_t shape[1] = {8};
  struct DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(ruda_dlpack_export(c, &h, k_f32, 1, shape, NULL, RUDA_DLPACK_NO_STREAM, &t));
  ASSERT_EQ(t->dl_tensor.device.device_type, kDLOpenCL);
  ASSERT_EQ(t->dl_tensor.device.device_id, 0);
  ASSERT_NOT_NULL(t->dl_tensor.data);
  t->deleter(t);
  /* Its own export comes back refused: a cl_mem is one context's. */
  ASSERT_OK(ruda_dlpack_export(c, &h, k_f32, 1, shape, NULL, RUDA_DLPACK_NO_STREAM, &t));
  ruda_dlpack_tensor_t rt;
  ASSERT_ERR_KIND(ruda_dlpack_import(c, t, &rt), RUDA_ERR_UNAVAILABLE);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

/* Last in this file: shuts ruda down. */
TEST(shutdown_hands_live_imports_back_once) {
  ruda_client_t *c = client();
  producer_t p;
  producer_init(&p, 2, 2);
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(c, &p.t, &rt));
  ASSERT_EQ(p.deleted, 0);
  ASSERT_OK(ruda_shutdown());
  ASSERT_EQ(p.deleted, 1);
  /* The handle outlived its device: releasing it does nothing more. */
  ruda_handle_release(&rt.handle);
  ASSERT_EQ(p.deleted, 1);
}
