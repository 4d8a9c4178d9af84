/* A stand-in for the CUDA driver (libcuda.so.1) that runs on the host, so
 * that the CUDA server's own code (streams, staging, futures, the memory
 * layer's pages, error paths) runs in CI, under the sanitizers, where no
 * GPU is. test_cuda_stand_in.c points the loader at this library.
 *
 * What it models: one device ("ruda stand-in GPU", 9.0, 132 SMs) whose
 * memory is host memory (mmap, reserved lazily); copies and fills are done
 * at once on the calling thread, so streams and events are always
 * complete; modules load and kernels launch without running anything.
 * It reports STAND_IN_MEMORY bytes of memory, and maps at most
 * STAND_IN_MAX_MAP at once: a larger allocation fails with
 * CUDA_ERROR_OUT_OF_MEMORY.
 * cuPointerGetAttribute knows no pointer, so every host buffer counts as
 * pageable. Every entry point the loader requires is here; the optional
 * ones (graphs, tensor maps, cuLaunchKernelEx) are absent, as on an old
 * driver. Not a model of timing or of asynchrony: it checks bookkeeping,
 * not ordering. It counts the calls that move data, wait, allocate or free
 * (ruda_stand_in_calls), so that a test can check which driver calls a
 * fast path makes. ruda_stand_in_fault() makes the next launch fault as a
 * kernel with an illegal address does: from then on nearly every call
 * returns that sticky error, and cuDevicePrimaryCtxReset either clears it
 * (an older driver) or returns it too (580.x: the device is lost for the
 * process). */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STAND_IN_MEMORY (8ull << 30)
#define STAND_IN_MAX_MAP (1ull << 30)
#define HEADER 4096u /* before each allocation: its mapped length */

/* ---- Call counts ---- */

#define STAND_IN_COUNTED(X)                                                          \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)          \
  X(cuStreamSynchronize) X(cuStreamQuery) X(cuEventRecord) X(cuEventQuery)           \
  X(cuEventSynchronize) X(cuMemAlloc) X(cuMemAllocAsync) X(cuMemAllocHost)           \
  X(cuMemFree) X(cuMemFreeAsync) X(cuLaunchKernel) X(cuStreamWaitEvent)

#define STAND_IN_ENUM(name) CALL_##name,
enum { STAND_IN_COUNTED(STAND_IN_ENUM) CALL_KINDS };
static _Atomic unsigned long calls[CALL_KINDS];
#define COUNT(name) atomic_fetch_add_explicit(&calls[CALL_##name], 1, memory_order_relaxed)

/* How many times the entry point `name` (its name without the _v2 suffix)
 * was called in this process; ULONG_MAX for a name that is not counted. */
unsigned long ruda_stand_in_calls(const char *name);
unsigned long ruda_stand_in_calls(const char *name) {
#define STAND_IN_LOOKUP(n) \
  if (strcmp(name, #n) == 0) return atomic_load(&calls[CALL_##n]);
  STAND_IN_COUNTED(STAND_IN_LOOKUP)
#undef STAND_IN_LOOKUP
  return (unsigned long)-1;
}

static int context_object;
static _Thread_local CUcontext current;

/* ---- Fault injection ---- */

static _Atomic int pending_fault, sticky_fault, reset_recovers;

/* The next cuLaunchKernel succeeds and then poisons the context with
 * `code` (a sticky CUresult); `recovers`: whether cuDevicePrimaryCtxReset
 * clears it. */
void ruda_stand_in_fault(int code, int recovers);
void ruda_stand_in_fault(int code, int recovers) {
  atomic_store(&reset_recovers, recovers);
  atomic_store(&pending_fault, code);
}

/* Loaded modules, in a list: a context reset frees them (as the driver's
 * does), and those of a context that could not be reset stay reachable
 * until exit (as the driver's do). */
typedef struct module {
  struct module *prev, *next;
} module_t;
static module_t modules = {&modules, &modules};
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

static void module_free_locked(module_t *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  free(n);
}

/* Success, or the sticky error of a poisoned context. */
static CUresult ok(void) { return (CUresult)atomic_load_explicit(&sticky_fault, memory_order_relaxed); }
/* Streams and events are complete when enqueued: only the handle can be
 * wrong. */
static CUresult live(const void *handle) { return handle ? ok() : CUDA_ERROR_INVALID_HANDLE; }

/* ---- Memory: host mappings with their length in front ---- */

static CUresult map_bytes(size_t n, void **out) {
  if (n > STAND_IN_MAX_MAP) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t len = n + HEADER;
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(p, &len, sizeof len);
  *out = p + HEADER;
  return CUDA_SUCCESS;
}

static CUresult unmap_bytes(void *p) {
  if (p == NULL) return CUDA_SUCCESS;
  char *base = (char *)p - HEADER;
  size_t len;
  memcpy(&len, base, sizeof len);
  return munmap(base, len) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult map_device(CUdeviceptr *out, size_t n) {
  void *p = NULL;
  CUresult r = map_bytes(n, &p);
  *out = (CUdeviceptr)(uintptr_t)p;
  return r;
}

static void *at(CUdeviceptr d) { return (void *)(uintptr_t)d; }

/* ---- Library, device, context ---- */

CUresult cuInit(unsigned int flags) { return flags == 0 ? ok() : CUDA_ERROR_INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) {
  *v = 12080;
  return ok();
}
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_STAND_IN";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "stand-in driver error";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return ok();
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return ok();
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  if (len > 0) {
    strncpy(name, "ruda stand-in GPU", (size_t)len - 1);
    name[len - 1] = '\0';
  }
  return ok();
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    default: *v = 1; break; /* capabilities: supported */
  }
  return ok();
}
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  (void)d;
  *bytes = STAND_IN_MEMORY;
  return ok();
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)(void *)&context_object;
  return ok();
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return d == 0 ? ok() : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxReset(CUdevice d) {
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (atomic_load(&reset_recovers)) atomic_store(&sticky_fault, 0);
  if (ok() != CUDA_SUCCESS) return ok();
  pthread_mutex_lock(&modules_lock); /* the context took its modules */
  while (modules.next != &modules) module_free_locked(modules.next);
  pthread_mutex_unlock(&modules_lock);
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) {
  current = c;
  return ok();
}
CUresult cuCtxGetCurrent(CUcontext *c) {
  *c = current;
  return ok();
}
CUresult cuCtxSynchronize(void) { return ok(); }
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return ok();
}

/* ---- Streams and events: everything is complete when enqueued ---- */

CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority) {
  (void)flags;
  (void)priority;
  *s = malloc(16);
  return *s ? ok() : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamDestroy(CUstream s) {
  free(s);
  return ok();
}
CUresult cuStreamSynchronize(CUstream s) { return COUNT(cuStreamSynchronize), live(s); }
CUresult cuStreamQuery(CUstream s) { return COUNT(cuStreamQuery), live(s); }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  (void)flags;
  COUNT(cuStreamWaitEvent);
  return s && e ? ok() : CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  (void)flags;
  *e = malloc(16);
  return *e ? ok() : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuEventDestroy(CUevent e) {
  free(e);
  return ok();
}
CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  return COUNT(cuEventRecord), live(e);
}
CUresult cuEventQuery(CUevent e) { return COUNT(cuEventQuery), live(e); }
CUresult cuEventSynchronize(CUevent e) { return COUNT(cuEventSynchronize), live(e); }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
  *ms = 0.001f;
  return ok();
}

/* ---- Memory and copies ---- */

CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  COUNT(cuMemAlloc);
  return map_device(p, n);
}
CUresult cuMemFree(CUdeviceptr p) { return COUNT(cuMemFree), unmap_bytes(at(p)); }
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) {
  (void)s;
  COUNT(cuMemAllocAsync);
  return map_device(p, n);
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  (void)s;
  return COUNT(cuMemFreeAsync), unmap_bytes(at(p));
}
CUresult cuMemAllocHost(void **p, size_t n) {
  COUNT(cuMemAllocHost);
  return map_bytes(n, p);
}
CUresult cuMemFreeHost(void *p) { return unmap_bytes(p); }
CUresult cuMemGetInfo(size_t *free_bytes, size_t *total) {
  *free_bytes = STAND_IN_MEMORY;
  *total = STAND_IN_MEMORY;
  return ok();
}
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) {
  COUNT(cuMemcpyHtoD);
  memcpy(at(d), h, n);
  return ok();
}
CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) {
  COUNT(cuMemcpyDtoH);
  memcpy(h, at(d), n);
  return ok();
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  (void)s;
  COUNT(cuMemcpyHtoDAsync);
  memcpy(at(d), h, n);
  return ok();
}
CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
  (void)s;
  COUNT(cuMemcpyDtoHAsync);
  memcpy(h, at(d), n);
  return ok();
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream s) {
  (void)s;
  memmove(at(to), at(from), n);
  return ok();
}
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s) {
  (void)s;
  const char *src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (const char *)c->srcHost
                                                            : (const char *)at(c->srcDevice);
  char *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (char *)c->dstHost : (char *)at(c->dstDevice);
  src += c->srcY * c->srcPitch + c->srcXInBytes;
  dst += c->dstY * c->dstPitch + c->dstXInBytes;
  for (size_t row = 0; row < c->Height; row++)
    memcpy(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes);
  return ok();
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)s;
  memset(at(d), v, n);
  return ok();
}
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
  (void)data;
  (void)a;
  (void)p;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- Modules and kernels: loaded, never run ---- */

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  if (image == NULL) return CUDA_ERROR_INVALID_IMAGE;
  module_t *n = malloc(sizeof *n);
  *m = (CUmodule)(void *)n;
  if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&modules_lock);
  n->next = modules.next;
  n->prev = &modules;
  modules.next->prev = n;
  modules.next = n;
  pthread_mutex_unlock(&modules_lock);
  return ok();
}
CUresult cuModuleUnload(CUmodule m) {
  pthread_mutex_lock(&modules_lock);
  if (m) module_free_locked((module_t *)(void *)m);
  pthread_mutex_unlock(&modules_lock);
  return ok();
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  (void)name;
  /* Freed by nobody: a function lives as long as its module, which the
   * stand-in does not track. */
  static int function_object;
  *f = (CUfunction)(void *)&function_object;
  return ok();
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)a;
  (void)v;
  return f ? ok() : CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  (void)f;
  *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return ok();
}
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream s, void **params, void **extra) {
  (void)s;
  (void)params;
  (void)extra;
  (void)shared;
  COUNT(cuLaunchKernel);
  if (!f || !gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = ok();
  int fault = atomic_exchange(&pending_fault, 0);
  if (fault && r == CUDA_SUCCESS) atomic_store(&sticky_fault, fault); /* seen at the next wait */
  return r;
}
