/* Internal interface of the OpenCL backend (src/backends/opencl/).
 *
 * The ICD loader (libOpenCL.so.1) is reached only through the table the
 * loader fills (opencl_loader.c); cl_int codes are translated only in
 * opencl_errors.c. Everything that needs CL/cl.h is compiled only when the
 * build found the OpenCL headers (RUDA_HAVE_OPENCL_HEADERS); without them
 * the backend reports itself unavailable.
 *
 *   opencl_loader.c   dlopen + symbol table, once per process
 *   opencl_errors.c   cl_int names, errors, log helpers
 *   opencl_device.c   platforms and devices (opencl:N), their properties;
 *                     the load probe and the loader's test hook
 *   opencl_compile.c  clBuildProgram, program cache in memory and on disk
 *   the compute server above them: its modules, bottom to top, are listed
 *   in opencl_types.h (opencl_fault.c ... opencl_server.c)
 *
 * Calls point one way: the loader and the errors call nothing above them;
 * devices call the loader; compilation calls both.
 */
#ifndef RUDA_OPENCL_INTERNAL_H
#define RUDA_OPENCL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dynlib.h"
#include "base/log_internal.h"
#include "ruda/status.h"
#include "ruda/types.h"
#include "server/compile_log.h"
#include "server/server.h"

/* ---- Always available ---------------------------------------------------- */

/* Test hook (opencl_device.c): the next load looks only for `lib` (NULL:
 * the default names, or $RUDA_OPENCL_LIBRARY), forgetting any earlier load
 * result and the device list. Tables loaded before stay mapped. Not
 * thread-safe with concurrent loads; tests only. */
void ruda__opencl_loader_test_override(const char *lib);
/* Test hook (opencl_fault.c): the next kernel launched on any OpenCL
 * device reports a fault that ends its context (as a kernel fault does on
 * NVIDIA's OpenCL), without running: the device is lost
 * (docs/errors.md, "Device loss") until ruda_device_recover. Thread-safe;
 * tests only. */
void ruda__opencl_test_inject_fault(void);
/* The loader's part of it (opencl_loader.c): the override and forgetting
 * the load result. */
void ruda__opencl_loader_forget(const char *lib);

/* The OpenCL load result without creating anything (opencl_device.c): NULL
 * when the loader and at least one device are there, else
 * RUDA_ERR_UNAVAILABLE naming what was looked for. Thread-safe. */
ruda_status_t ruda__opencl_probe(void);

/* The on-disk compilation cache root of this process's devices (the server
 * layer's settings: [compilation] cache, RUDA_CACHE_DIR, the user's cache
 * directory by default); snprintf semantics; false when the cache is off. */
bool ruda__opencl_cache_root(char *buf, size_t cap);

/* Program cache counters (process-wide), for tests and benchmarks. */
typedef struct ruda__opencl_compile_stats {
  uint64_t memory_hits, disk_hits, builds, disk_writes, disk_skips;
  /* Time spent by disk-cache hits, in total: the key, reading the file,
   * the program from its binary (clCreateProgramWithBinary +
   * clBuildProgram), the kernel and its queries (the queries alone in
   * hit_query_ns), and the whole hit. */
  uint64_t hit_key_ns, hit_read_ns, hit_build_ns, hit_kernel_ns, hit_total_ns, hit_query_ns;
} ruda__opencl_compile_stats_t;
ruda__opencl_compile_stats_t ruda__opencl_compile_stats(void);

/* Logging for the backend: through ruda_log on the channel's level
 * ("compilation", "memory", "streaming"); warnings (cache skips) always go
 * to stderr. */
void ruda__opencl_log(const char *channel, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define ruda__opencl_warn(...) ruda__warn("opencl", __VA_ARGS__)

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include "backends/opencl/opencl_symbols.h"

/* ---- Loader (opencl_loader.c) ---- */

typedef struct ruda__opencl_api {
  ruda__dynlib_head_t head; /* first: base/dynlib.h's loader fills it */
  RUDA__CL_SYMBOLS(RUDA__DYNLIB_FIELD)
} ruda__opencl_api_t;

/* The ICD loader's table, loaded once per process. Thread-safe.
 * RUDA_ERR_UNAVAILABLE naming the library names tried or the missing
 * symbol. The table lives until process exit. */
ruda_status_t ruda__opencl_api_get(const ruda__opencl_api_t **out);

/* ---- Errors (opencl_errors.c) ---- */

/* "CL_OUT_OF_RESOURCES" etc.; "CL_UNKNOWN_ERROR" for codes it does not
 * know (never NULL). */
const char *ruda__cl_error_name(cl_int code);
/* An error of `kind` for a failed OpenCL call: "{call} failed with {NAME}
 * ({code})[: {context}]", with the vendor fields set (call, name, code). */
ruda_status_t ruda__cl_error(ruda_error_kind_t kind, cl_int code, const char *call,
                             const char *context_fmt, ...)
    __attribute__((format(printf, 4, 5))) RUDA__COLD;
/* An allocation failure of `size` bytes: CL_MEM_OBJECT_ALLOCATION_FAILURE,
 * CL_OUT_OF_RESOURCES and CL_OUT_OF_HOST_MEMORY give IoError::OutOfMemory,
 * CL_INVALID_BUFFER_SIZE IoError::BufferTooBig, anything else
 * IoError::Unknown. Vendor fields set. */
ruda_status_t ruda__cl_alloc_error(cl_int code, const char *call, uint64_t size);

/* ---- Devices (opencl_device.c) ---- */

typedef struct ruda__opencl_device {
  cl_platform_id platform;
  cl_device_id device;
  cl_device_type type;
  char platform_name[128];
  char platform_version[128];
  char device_version[128]; /* "OpenCL 3.0 ..." */
  char c_version[128];      /* "OpenCL C 1.2 ..." */
  char driver_version[64];
  uint32_t c_major, c_minor; /* parsed from c_version */
  uint64_t base_align;       /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
  uint64_t max_alloc;        /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  uint64_t global_mem;       /* CL_DEVICE_GLOBAL_MEM_SIZE */
  uint64_t local_mem;        /* CL_DEVICE_LOCAL_MEM_SIZE */
  size_t max_param_size;     /* CL_DEVICE_MAX_PARAMETER_SIZE */
  bool fp64, fp16, int64_atomics, float_atomics, unified_memory;
  ruda_device_properties_t props;
  char info[256];
} ruda__opencl_device_t;

/* Every platform's devices, in a stable order: platforms sorted by name
 * (then version, then the loader's order), each platform's devices in the
 * order clGetDeviceIDs gives them. Enumerated once per process (again after
 * a test override); the array lives until process exit or the next
 * override. RUDA_ERR_UNAVAILABLE when the loader is missing, when there is
 * no platform, or when no platform has a device. Thread-safe. */
ruda_status_t ruda__opencl_devices(const ruda__opencl_device_t **out, size_t *count);
/* Forgets the enumeration (the loader's test override). */
void ruda__opencl_devices_forget(void);

/* Fills `d->props` and `d->info` from clGetDeviceInfo (d->device and
 * d->platform set). Errors: RUDA_ERR_UNAVAILABLE when a required query
 * fails. */
ruda_status_t ruda__opencl_device_query(const ruda__opencl_api_t *api, ruda__opencl_device_t *d);

/* ---- Compilation and program cache (opencl_compile.c) ---- */

/* Builds OpenCL C `source` (`len` bytes; 0: strlen) for `dev` with
 * `options` (NULL: none) into *out. `name` names the kernel in errors.
 * `portable` (NULL for OpenCL C) says that `source` is a portable kernel's
 * text behind the OpenCL prelude: its kernel, origin and compiler fields
 * name it in the error. On PoCL (`quiet_stderr`) the compiler's closing
 * count ("2 errors generated."), which PoCL's clang writes to the process's
 * stderr, is kept off it. Errors: LaunchError::CompilationError(Generic)
 * with the vendor fields of clBuildProgram, whose reason for a portable
 * kernel is the user's messages and hints (server/compile_log.h) and for
 * OpenCL C the build log (indented) and the source; other failing calls
 * likewise. */
ruda_status_t ruda__opencl_build_source(const ruda__opencl_api_t *api, cl_context ctx,
                                        cl_device_id dev, const char *name,
                                        const char *source, size_t len, const char *options,
                                        const ruda__compile_failure_t *portable,
                                        bool quiet_stderr, cl_program *out);

/* The backend's compile_portable hook (server.h): a portable kernel's
 * text built on opencl:<job->target> in a context of its own, as a launch
 * builds it (its options, PoCL's stderr kept quiet), without the program
 * cache; *out is the program binary (ruda__malloc'ed). Errors as
 * ruda__opencl_build_source's; RUDA_ERR_UNAVAILABLE without OpenCL or
 * that device. */
ruda_status_t ruda__opencl_compile_portable(const ruda__portable_compile_t *job, void **out,
                                            size_t *out_size);

/* The program binary of a built program for its only device (ruda__malloc'ed
 * into *out, *out_size bytes). */
ruda_status_t ruda__opencl_program_binary(const ruda__opencl_api_t *api, cl_program prog,
                                          void **out, size_t *out_size);

typedef struct ruda__opencl_program_cache ruda__opencl_program_cache_t;

/* A kernel ready to launch: its cl_kernel (arguments are set per launch on
 * the device thread) and what was learnt about it when it was built. */
typedef struct ruda__opencl_function {
  cl_kernel kernel;
  cl_program program;        /* the kernel's own; the program cache releases it */
  cl_uint num_args;
  uint64_t static_local_mem; /* CL_KERNEL_LOCAL_MEM_SIZE with no dynamic part */
  size_t max_work_group;     /* CL_KERNEL_WORK_GROUP_SIZE */
  bool from_disk;            /* its binary came from the disk cache */
} ruda__opencl_function_t;

/* A cache for one device of one context whose disk part lives under
 * `cache_dir`/opencl ("" or NULL: no disk cache). NULL when memory is
 * exhausted. `dev` is borrowed and must outlive the cache. */
ruda__opencl_program_cache_t *ruda__opencl_program_cache_create(
    const ruda__opencl_api_t *api, cl_context ctx, const ruda__opencl_device_t *dev,
    uint64_t properties_checksum, const char *cache_dir);
void ruda__opencl_program_cache_destroy(ruda__opencl_program_cache_t *c);

/* The built kernel for OpenCL C `source` with `options`, keyed in memory by
 * `key` (the kernel's id hash) and on disk by a hash of `key`, the options,
 * the device's properties checksum, the platform and driver versions:
 * from memory, else from a cached binary, else built (and its binary
 * written to the disk cache). Errors as ruda__opencl_build_source; a
 * missing entry point is CompilationError::Generic naming it. The pointer
 * stays valid until the cache is destroyed. Device thread only. */
/* Whether the in-memory cache already holds the program of `key` (so its
 * source need not be composed). Device thread only; never fails. */
bool ruda__opencl_program_cache_has(const ruda__opencl_program_cache_t *c, ruda_hash128_t key);
ruda_status_t ruda__opencl_program_cache_get(ruda__opencl_program_cache_t *c,
                                             ruda_hash128_t key, const char *entry,
                                             const char *source, size_t len,
                                             const char *const *options, size_t num_options,
                                             const ruda__compile_failure_t *portable,
                                             ruda__opencl_function_t **out);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_INTERNAL_H */
