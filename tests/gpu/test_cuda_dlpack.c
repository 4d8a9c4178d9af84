/* DLPack with a CUDA producer and consumer written in C (ruda/dlpack.h):
 * a buffer from cuMemAlloc is imported without a copy, a ruda kernel writes
 * it, the result is exported back and read by the consumer on its own
 * stream, which waits for ruda's work through an event. The driver API is
 * reached with dlopen (libcuda.so.1), as ruda itself does. */
#include <dlfcn.h>

#include "cuda_test_util.h"
#include "ruda/dlpack.h"

typedef int CUresult_t;
typedef unsigned long long CUdeviceptr_t;
typedef struct cu_api {
  CUresult_t (*cuInit)(unsigned);
  CUresult_t (*cuDeviceGet)(int *, int);
  CUresult_t (*cuDevicePrimaryCtxRetain)(void **, int);
  CUresult_t (*cuCtxSetCurrent)(void *);
  CUresult_t (*cuMemAlloc)(CUdeviceptr_t *, size_t);
  CUresult_t (*cuMemFree)(CUdeviceptr_t);
  CUresult_t (*cuMemcpyHtoD)(CUdeviceptr_t, const void *, size_t);
  CUresult_t (*cuMemcpyDtoH)(void *, CUdeviceptr_t, size_t);
  CUresult_t (*cuStreamCreate)(void **, unsigned);
  CUresult_t (*cuStreamSynchronize)(void *);
  CUresult_t (*cuStreamDestroy)(void *);
} cu_api_t;

static cu_api_t cu;
static int g_deleted;

static void load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) SKIP("libcuda.so.1 is not there");
#define CU_SYM(field, name)                                   \
  *(void **)(&cu.field) = dlsym(lib, name);                   \
  if (!cu.field) SKIP("libcuda.so.1 lacks " name);
  CU_SYM(cuInit, "cuInit");
  CU_SYM(cuDeviceGet, "cuDeviceGet");
  CU_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  CU_SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  CU_SYM(cuMemAlloc, "cuMemAlloc_v2");
  CU_SYM(cuMemFree, "cuMemFree_v2");
  CU_SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  CU_SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  CU_SYM(cuStreamCreate, "cuStreamCreate");
  CU_SYM(cuStreamSynchronize, "cuStreamSynchronize");
  CU_SYM(cuStreamDestroy, "cuStreamDestroy_v2");
#undef CU_SYM
  int dev = 0;
  void *ctx = NULL;
  ASSERT_EQ(cu.cuInit(0), 0);
  ASSERT_EQ(cu.cuDeviceGet(&dev, 0), 0);
  ASSERT_EQ(cu.cuDevicePrimaryCtxRetain(&ctx, dev), 0);
  ASSERT_EQ(cu.cuCtxSetCurrent(ctx), 0);
}

typedef struct cuda_producer {
  struct DLManagedTensorVersioned t;
  int64_t shape[1];
  CUdeviceptr_t ptr;
} cuda_producer_t;

static void cuda_producer_delete(struct DLManagedTensorVersioned *t) {
  cuda_producer_t *p = t->manager_ctx;
  cu.cuMemFree(p->ptr);
  g_deleted++;
}

static void fill(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *h, uint64_t n,
                 uint64_t value) {
  uint64_t info[2] = {n, value};
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = h;
  args.num_buffers = 1;
  args.info.data = info;
  args.info.len = 2;
  args.info.dynamic_metadata_offset = 2;
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static((uint32_t)((n + 255) / 256), 1, 1), &args));
}

TEST(cumemalloc_buffer_imported_written_by_ruda_exported_to_a_consumer_stream) {
  ruda_client_t *c = cuda_client();
  load_driver();
  enum { N = 1 << 20 };
  cuda_producer_t p;
  memset(&p, 0, sizeof p);
  ASSERT_EQ(cu.cuMemAlloc(&p.ptr, N * sizeof(uint32_t)), 0);
  uint32_t *host = malloc(N * sizeof(uint32_t));
  for (uint32_t i = 0; i < N; i++) host[i] = 7;
  ASSERT_EQ(cu.cuMemcpyHtoD(p.ptr, host, N * sizeof(uint32_t)), 0);
  p.shape[0] = N;
  p.t.version.major = DLPACK_MAJOR_VERSION;
  p.t.manager_ctx = &p;
  p.t.deleter = cuda_producer_delete;
  p.t.dl_tensor.data = (void *)(uintptr_t)p.ptr;
  p.t.dl_tensor.device.device_type = kDLCUDA;
  p.t.dl_tensor.device.device_id = 0;
  p.t.dl_tensor.ndim = 1;
  p.t.dl_tensor.dtype.code = kDLUInt;
  p.t.dl_tensor.dtype.bits = 32;
  p.t.dl_tensor.dtype.lanes = 1;
  p.t.dl_tensor.shape = p.shape;

  /* Import: ruda reads the producer's 7s, no copy. */
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(c, &p.t, &rt));
  uint32_t probe[4];
  ruda_handle_t head = ruda_handle_clone(&rt.handle); /* its first 16 bytes */
  ASSERT_OK(ruda_handle_offset_end(&head, N * sizeof(uint32_t) - sizeof probe));
  ASSERT_OK(ruda_client_read(c, &head, probe, sizeof probe));
  ruda_handle_release(&head);
  ASSERT_UEQ(probe[0], 7);
  ASSERT_UEQ(probe[3], 7);

  /* A ruda kernel writes the producer's memory in place. */
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(256), 0);
  fill(c, k, &rt.handle, N, 42);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_EQ(cu.cuMemcpyDtoH(host, p.ptr, N * sizeof(uint32_t)), 0);
  for (uint32_t i = 0; i < N; i += 4099) ASSERT_UEQ(host[i], 42);

  /* Export back to a consumer on its own stream: ruda's next write is
   * ordered before the consumer's stream by an event, not a host wait. */
  void *consumer = NULL;
  ASSERT_EQ(cu.cuStreamCreate(&consumer, 1 /* non-blocking */), 0);
  fill(c, k, &rt.handle, N, 9);
  struct DLManagedTensorVersioned *t = NULL;
  ASSERT_OK(ruda_dlpack_export(c, &rt.handle, rt.dtype, rt.ndim, rt.shape, NULL,
                               (int64_t)(uintptr_t)consumer, &t));
  ASSERT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  ASSERT_EQ(t->dl_tensor.device.device_id, 0);
  ASSERT_PTR_EQ(t->dl_tensor.data, (void *)(uintptr_t)p.ptr);
  ASSERT_EQ(cu.cuStreamSynchronize(consumer), 0);
  ASSERT_EQ(cu.cuMemcpyDtoH(host, p.ptr, N * sizeof(uint32_t)), 0);
  for (uint32_t i = 0; i < N; i += 4099) ASSERT_UEQ(host[i], 9);
  int64_t own = 0;
  ASSERT_OK(ruda_dlpack_stream(c, &own));
  ASSERT_NE(own, RUDA_DLPACK_NO_STREAM);

  /* The producer's deleter runs once, after the export and the handle. */
  t->deleter(t);
  ASSERT_EQ(g_deleted, 0);
  ruda_handle_release(&rt.handle);
  /* Launches hold bindings until the device says they are done: by the
   * end of a sync and a cleanup nothing does. */
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_memory_cleanup(c);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_EQ(g_deleted, 1);
  cu.cuStreamDestroy(consumer);
  ruda_kernel_release(k);
  free(host);
}

/* A read-only import on cuda:0 is refused to a CUDA C kernel (ruda cannot
 * read its declaration, so cannot tell it only reads), at once and before
 * the device sees it: the producer's bytes stay, the stream goes on. */
TEST(read_only_cuda_import_is_refused_to_a_cuda_c_kernel) {
  ruda_client_t *c = cuda_client();
  load_driver();
  enum { N = 1024 };
  cuda_producer_t p;
  memset(&p, 0, sizeof p);
  ASSERT_EQ(cu.cuMemAlloc(&p.ptr, N * sizeof(uint32_t)), 0);
  uint32_t host[N];
  for (uint32_t i = 0; i < N; i++) host[i] = 7;
  ASSERT_EQ(cu.cuMemcpyHtoD(p.ptr, host, sizeof host), 0);
  p.shape[0] = N;
  p.t.version.major = DLPACK_MAJOR_VERSION;
  p.t.manager_ctx = &p;
  p.t.deleter = cuda_producer_delete;
  p.t.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  p.t.dl_tensor.data = (void *)(uintptr_t)p.ptr;
  p.t.dl_tensor.device.device_type = kDLCUDA;
  p.t.dl_tensor.ndim = 1;
  p.t.dl_tensor.dtype = (DLDataType){kDLUInt, 32, 1};
  p.t.dl_tensor.shape = p.shape;
  int deleted_before = g_deleted;
  ruda_dlpack_tensor_t rt;
  ASSERT_OK(ruda_dlpack_import(c, &p.t, &rt));
  ASSERT_TRUE(rt.read_only);
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(256), 0);
  uint64_t info[2] = {N, 42};
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = &rt.handle;
  args.num_buffers = 1;
  args.info.data = info;
  args.info.len = 2;
  args.info.dynamic_metadata_offset = 2;
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(N / 256, 1, 1), &args);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "launch of 'fill': buffer 0 is a read-only DLPack "
                                             "import, and ruda cannot read the kernel's declaration");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_EQ(cu.cuMemcpyDtoH(host, p.ptr, sizeof host), 0);
  for (uint32_t i = 0; i < N; i += 97) ASSERT_UEQ(host[i], 7);
  ruda_handle_release(&rt.handle);
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_memory_cleanup(c);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_EQ(g_deleted, deleted_before + 1);
  ruda_kernel_release(k);
}
