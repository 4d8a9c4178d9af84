/* Internal interface of the CUDA backend (src/backends/cuda/).
 *
 * The driver API and NVRTC are reached only through the tables the loader
 * fills (cuda_loader.c); their error codes are translated only in
 * cuda_errors.c. Everything that needs cuda.h is compiled only when the
 * build found the CUDA headers (RUDA_HAVE_CUDA_HEADERS); the tensor-map
 * validation is plain C and always available, so it is unit-tested on
 * machines without a GPU.
 */
#ifndef RUDA_CUDA_INTERNAL_H
#define RUDA_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dynlib.h"
#include "base/log_internal.h"
#include "ruda/status.h"
#include "ruda/types.h"

/* ---- Always available ---------------------------------------------------- */

/* Test hook: the next load looks only for `libcuda` (and `libnvrtc`) by
 * these names (NULL: the default lists), forgetting any earlier load
 * result. Not thread-safe with concurrent loads; tests only. */
void ruda__cuda_loader_test_override(const char *libcuda, const char *libnvrtc);

/* The rules a tensor map must follow to be encoded (the limits of
 * cuTensorMapEncodeTiled / Im2col / Im2colWide, checked in plain C): NULL
 * when `meta` may be encoded for a tensor at `address`, otherwise
 * LaunchError::Unknown whose reason names the violated rule and the
 * offending values. `cuda_version` is the driver's version (12080 for
 * 12.8): swizzle atoms and Im2colWide need >= 12080. */
ruda_status_t ruda__cuda_tensor_map_check(const ruda_tensor_map_meta_t *meta,
                                          uint64_t address, int cuda_version);

/* The on-disk compilation cache root of this process's devices (the server
 * layer's settings: [compilation] cache, by default the user's cache
 * directory). Writes into buf; false when the disk cache is off ("none") or
 * the path does not fit. */
bool ruda__cuda_cache_root(char *buf, size_t cap);

/* Test hooks that work with or without the CUDA headers. */
/* The NVRTC load result (RUDA_ERR_UNAVAILABLE when absent or not built). */
ruda_status_t ruda__cuda_nvrtc_probe(void);
/* The error the backend makes for CUresult `code` from allocation `call`;
 * NULL when built without the CUDA headers. */
ruda_status_t ruda__cuda_test_alloc_error(int code, const char *call, uint64_t size);

/* Compilation counters (process-wide), for tests and benchmarks. */
typedef struct ruda__cuda_compile_stats {
  uint64_t memory_hits, disk_hits, compiles, disk_writes, disk_skips;
  /* Time spent by disk-cache hits, in total: computing the key, reading
   * the file, loading the module (cuModuleLoadData + GetFunction), and the
   * whole hit from the key to the cached entry. */
  uint64_t hit_key_ns, hit_read_ns, hit_load_ns, hit_total_ns;
} ruda__cuda_compile_stats_t;
ruda__cuda_compile_stats_t ruda__cuda_compile_stats(void);

#if defined(RUDA_HAVE_CUDA_HEADERS)
#include <cuda.h>
#include <nvrtc.h>

#include "backends/cuda/cuda_symbols.h"

/* ---- Loader (cuda_loader.c) ---- */

typedef struct ruda__cuda_api {
  ruda__dynlib_head_t head; /* first: base/dynlib.h's loader fills it */
  int driver_version;   /* 13000 for 13.0 */
  RUDA__CU_SYMBOLS(RUDA__DYNLIB_FIELD)
} ruda__cuda_api_t;

typedef struct ruda__nvrtc_api {
  ruda__dynlib_head_t head; /* first: base/dynlib.h's loader fills it */
  int major, minor;
  RUDA__NVRTC_SYMBOLS(RUDA__DYNLIB_FIELD)
} ruda__nvrtc_api_t;

/* The driver API, loaded and cuInit()ed once per process. Thread-safe.
 * RUDA_ERR_UNAVAILABLE naming the library names tried, or the cuInit error.
 * The table lives until process exit. */
ruda_status_t ruda__cuda_api_get(const ruda__cuda_api_t **out);
/* NVRTC, loaded on first use. Thread-safe. RUDA_ERR_UNAVAILABLE as above. */
ruda_status_t ruda__nvrtc_api_get(const ruda__nvrtc_api_t **out);
/* NVRTC when it is already loaded, else NULL (never loads it). */
const ruda__nvrtc_api_t *ruda__nvrtc_api_loaded(void);

/* ---- Error translation (cuda_errors.c) ---- */

/* "CUDA_ERROR_OUT_OF_MEMORY" etc. (never NULL). */
const char *ruda__cu_result_name(CUresult r);
/* An error of `kind` for a failed driver call: "{call} failed with {NAME}
 * ({code}): {description}[: {context}]", with the vendor fields set. */
ruda_status_t ruda__cu_error(ruda_error_kind_t kind, CUresult r, const char *call,
                             const char *context_fmt, ...)
    __attribute__((format(printf, 4, 5))) RUDA__COLD;
/* An allocation failure: CUDA_ERROR_OUT_OF_MEMORY -> IoError::OutOfMemory
 * {size}; anything else IoError::Unknown. Vendor fields set. */
ruda_status_t ruda__cu_alloc_error(CUresult r, const char *call, uint64_t size) RUDA__COLD;
/* A failed NVRTC call (not a compile error: see cuda_compile.c). */
ruda_status_t ruda__nvrtc_error(ruda_error_kind_t kind, nvrtcResult r, const char *call,
                                const char *context_fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* True for errors after which the context can no longer be used
 * (illegal address, launch failure, ...). */
bool ruda__cu_result_is_sticky(CUresult r);

/* ---- Devices (cuda_device.c) ---- */

/* Properties of `dev` as ruda reports them (docs/design/cuda.md: alignment 512,
 * max_page_size = memory / 4, load width 128, features by architecture);
 * `info` receives "NVIDIA H200, sm_90, CUDA driver 13.0" (snprintf
 * semantics). */
ruda_status_t ruda__cuda_device_properties(const ruda__cuda_api_t *api, CUdevice dev,
                                           ruda_device_properties_t *out, char *info,
                                           size_t info_cap);

/* ---- Tensor maps (cuda_tensor_map.c) ---- */

/* Encodes `meta` for the tensor at `address`; on failure runs the checks
 * above to give a precise LaunchError::Unknown. */
ruda_status_t ruda__cuda_tensor_map_encode(const ruda__cuda_api_t *api,
                                           const ruda_tensor_map_meta_t *meta,
                                           uint64_t address, CUtensorMap *out);

/* ---- Compilation and module cache (cuda_compile.c) ---- */

typedef struct ruda__cuda_module_cache ruda__cuda_module_cache_t;

typedef struct ruda__cuda_function {
  CUfunction fn;
  CUmodule module;         /* fn's own; the module cache unloads it */
  uint64_t shared_mem_set; /* MAX_DYNAMIC_SHARED_SIZE_BYTES already set */
  bool from_disk;          /* the CUBIN came from the disk cache */
} ruda__cuda_function_t;

/* A cache for one device (compute capability `cc`, properties checksum)
 * whose disk part lives under `cache_dir` ("" or NULL: no disk cache;
 * copied). NULL when memory is exhausted. */
ruda__cuda_module_cache_t *ruda__cuda_module_cache_create(const ruda__cuda_api_t *api,
                                                          uint32_t cc,
                                                          uint64_t properties_checksum,
                                                          const char *cache_dir);
/* Unloads every module (skip_unload: the context is gone). */
void ruda__cuda_module_cache_destroy(ruda__cuda_module_cache_t *c, bool skip_unload);
/* The function of `kernel`: from memory, else from the disk cache, else
 * compiled (CUDA C with NVRTC) or loaded (PTX, CUBIN). Errors:
 * LaunchError::CompilationError(Generic with the log and the source,
 * UnsupportedInstruction when the kernel has no CUDA code),
 * RUDA_ERR_UNAVAILABLE when NVRTC is missing. The pointer stays valid
 * until the cache is destroyed. Device thread only. */
struct ruda_kernel;
ruda_status_t ruda__cuda_module_cache_get(ruda__cuda_module_cache_t *c,
                                          const struct ruda_kernel *kernel,
                                          ruda__cuda_function_t **out);

/* Compiles CUDA C `source` for compute capability `cc` into a CUBIN with
 * the backend's NVRTC options (benchmark baseline and compile path).
 * *out_cubin is ruda__malloc'ed. */
ruda_status_t ruda__cuda_nvrtc_compile(const char *name, const char *source,
                                       size_t source_len, uint32_t cc,
                                       const char *const *extra_opts, size_t num_extra,
                                       void **out_cubin, size_t *out_size);
/* The same for a portable kernel: its prelude (src/server/portable_kernel.h)
 * followed by `text`; a failure's message names the kernel and `origin`
 * (the kernel file) and holds NVRTC's log, whose lines point into the
 * user's file. Errors also: CompilationError::Validation for a NULL text. */
ruda_status_t ruda__cuda_nvrtc_compile_portable(const char *name, const char *text,
                                                size_t text_len, const char *origin, uint32_t cc,
                                                const char *const *extra_opts, size_t num_extra,
                                                void **out_cubin, size_t *out_size);

#endif /* RUDA_HAVE_CUDA_HEADERS */

/* Logging for the CUDA backend: one line on stderr, prefixed "ruda[cuda]".
 * `channel` is "compilation", "memory", "stream"; lines are printed when
 * RUDA_LOG is set (to "1", "all" or a list containing the channel), and
 * warnings (cache skips) always, once per distinct message site. */
void ruda__cuda_log(const char *channel, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define ruda__cuda_warn(...) ruda__warn("cuda", __VA_ARGS__)

#endif /* RUDA_CUDA_INTERNAL_H */
