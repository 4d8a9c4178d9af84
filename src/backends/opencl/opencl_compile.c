/* Kernel compilation and the program cache of the OpenCL backend.
 *
 *  - In memory: one table per device (server) from the kernel's stable id
 *    hash to its built program and cl_kernel.
 *  - On disk: program binaries (CL_PROGRAM_BINARIES) under
 *    {cache root}/opencl/{key}.clbin, where the key hashes the kernel's id
 *    hash, the build options, the device properties checksum, and the
 *    platform, device and driver versions. A file is a small header (magic,
 *    format version, payload size, payload hash) and the binary; it is
 *    written to a temporary name and renamed, so readers never see half a
 *    file. The folder and files follow the cache's policy
 *    (server/binary_cache.h: private, only the user's own whole files
 *    read). A corrupt, foreign, unreadable or unwritable cache is skipped
 *    with a log line and never fails a launch; a binary the driver refuses
 *    is rebuilt from source.
 *  - Ahead of time (ruda_kernel_compile_portable_with_options): a portable
 *    kernel built in a context of its own, without the caches.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/opencl/opencl_internal.h"
#include "base/alloc.h"
#include "server/kernel_cache.h"
#include "server/module_table.h"
#include "server/portable_kernel.h"
#include "server/binary_cache.h"
#include "server/device_settings.h"
#include "server/server.h"
#include "types/hasher.h"

bool ruda__opencl_cache_root(char *buf, size_t cap) {
  /* The server layer's settings: [compilation] cache, the user's cache
   * directory by default, "" for "none". */
  const char *dir = ruda__device_settings()->cache_dir;
  if (cap) buf[0] = '\0';
  return dir[0] != '\0' && (size_t)snprintf(buf, cap, "%s", dir) < cap;
}

static _Atomic uint64_t g_memory_hits, g_disk_hits, g_builds, g_disk_writes, g_disk_skips;
static _Atomic uint64_t g_hit_key_ns, g_hit_read_ns, g_hit_build_ns, g_hit_kernel_ns,
    g_hit_total_ns, g_hit_query_ns;

ruda__opencl_compile_stats_t ruda__opencl_compile_stats(void) {
  ruda__opencl_compile_stats_t s = {
      atomic_load(&g_memory_hits),  atomic_load(&g_disk_hits),    atomic_load(&g_builds),
      atomic_load(&g_disk_writes),  atomic_load(&g_disk_skips),   atomic_load(&g_hit_key_ns),
      atomic_load(&g_hit_read_ns),  atomic_load(&g_hit_build_ns), atomic_load(&g_hit_kernel_ns),
      atomic_load(&g_hit_total_ns), atomic_load(&g_hit_query_ns)};
  return s;
}

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#define CACHE_MAGIC "RUDACLB1"
#define CACHE_FORMAT 3u /* 2: the shared header (server/binary_cache.h); 3: binary key
                          * fields, ruda__checksum128 */
#define CACHE_SEED 0x6f70656e636c6263ull

/* ---- Building ---- */

/* "[Compilation Error] \n    <log lines>\n[Source]  \n<source>" (the same
 * shape as the CUDA backend's), ruda__malloc'ed; NULL without memory. */
static char *compile_text(const char *log, const char *src, size_t src_len) {
  size_t cap = (log ? strlen(log) * 2 : 0) + src_len + 256;
  char *text = ruda__malloc(cap);
  if (text == NULL) return NULL;
  size_t used = (size_t)snprintf(text, cap, "[Compilation Error] \n");
  const char *p = log ? log : "";
  while (*p != '\0' && used < cap) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len > 0) used += (size_t)snprintf(text + used, cap - used, "    %.*s\n", (int)len, p);
    p += len + (nl ? 1 : 0);
  }
  if (used < cap) snprintf(text + used, cap - used, "[Source]  \n%.*s", (int)src_len, src);
  return text;
}

static char *build_log(const ruda__opencl_api_t *api, cl_program prog, cl_device_id dev) {
  size_t n = 0;
  if (api->clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
    return NULL;
  char *log = ruda__malloc(n + 1);
  if (log == NULL) return NULL;
  if (n == 0 || api->clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
    n = 0;
  log[n] = '\0';
  return log;
}

static ruda_status_t compile_error(ruda_status_t cause) {
  return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION, cause);
}

/* ---- Keeping PoCL's closing count off stderr ----
 *
 * PoCL builds with clang, which writes "N errors generated." to the
 * process's stderr (fd 2) after the messages it puts in the build log, and
 * takes no option that stops it (its build options are a fixed list). So a
 * PoCL build runs with fd 2 pointed at a temporary file; afterwards what
 * was written there goes back to stderr, the closing counts left out. One
 * build at a time is redirected (g_quiet_lock): another thread's stderr
 * output during the build reaches stderr late, never lost. */
static pthread_mutex_t g_quiet_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct quiet {
  FILE *tmp;
  int saved; /* the real fd 2; -1: not redirected */
} quiet_t;

static void quiet_begin(quiet_t *q) {
  q->saved = -1;
  q->tmp = NULL;
  pthread_mutex_lock(&g_quiet_lock);
  fflush(stderr);
  q->tmp = tmpfile();
  if (q->tmp == NULL) return;
  q->saved = dup(2);
  if (q->saved < 0 || dup2(fileno(q->tmp), 2) < 0) {
    if (q->saved >= 0) close(q->saved);
    q->saved = -1;
  }
}

static void quiet_end(quiet_t *q) {
  if (q->saved >= 0) {
    fflush(stderr);
    dup2(q->saved, 2);
    close(q->saved);
    rewind(q->tmp);
    char line[1024];
    while (fgets(line, sizeof line, q->tmp) != NULL) {
      if (!ruda__compile_log_is_summary(line, strcspn(line, "\n"))) fputs(line, stderr);
    }
    fflush(stderr);
  }
  if (q->tmp != NULL) fclose(q->tmp);
  pthread_mutex_unlock(&g_quiet_lock);
}

ruda_status_t ruda__opencl_build_source(const ruda__opencl_api_t *api, cl_context ctx,
                                        cl_device_id dev, const char *name,
                                        const char *source, size_t len, const char *options,
                                        const ruda__compile_failure_t *portable,
                                        bool quiet_stderr, cl_program *out) {
  *out = NULL;
  if (len == 0) len = strlen(source);
  cl_int r = CL_SUCCESS;
  const char *srcs[1] = {source};
  size_t lens[1] = {len};
  cl_program prog = api->clCreateProgramWithSource(ctx, 1, srcs, lens, &r);
  if (r != CL_SUCCESS || prog == NULL)
    return compile_error(ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, r,
                                        "clCreateProgramWithSource", "kernel %s", name));
  quiet_t quiet;
  if (quiet_stderr) quiet_begin(&quiet);
  r = api->clBuildProgram(prog, 1, &dev, options ? options : "", NULL, NULL);
  if (quiet_stderr) quiet_end(&quiet);
  atomic_fetch_add(&g_builds, 1);
  if (r != CL_SUCCESS) {
    char *log = build_log(api, prog, dev);
    ruda_status_t ce;
    if (portable != NULL) {
      ruda__compile_failure_t f = *portable;
      f.log = log;
      f.source = source;
      f.source_len = len;
      ce = ruda__compile_failure_status(&f);
      ruda_status_set_vendor(ruda_status_find(ce, RUDA_ERR_COMPILATION_GENERIC), "clBuildProgram",
                             ruda__cl_error_name(r), (int64_t)r);
    } else {
      char *text = compile_text(log, source, len);
      ce = ruda_status_create(
          RUDA_ERR_COMPILATION_GENERIC, "kernel %s (options \"%s\"): %s", name,
          options ? options : "", text ? text : "[Compilation Error] (no memory for the log)");
      ruda_status_set_vendor(ce, "clBuildProgram", ruda__cl_error_name(r), (int64_t)r);
      ruda__free(text);
      ce = compile_error(ce);
    }
    ruda__free(log);
    api->clReleaseProgram(prog);
    return ce;
  }
  *out = prog;
  return NULL;
}

ruda_status_t ruda__opencl_program_binary(const ruda__opencl_api_t *api, cl_program prog,
                                          void **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  size_t size = 0;
  cl_int r = api->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, r, "clGetProgramInfo",
                          "CL_PROGRAM_BINARY_SIZES");
  if (size == 0)
    return ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "the driver gives no program binary");
  unsigned char *bin = ruda__malloc(size);
  if (bin == NULL) return ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "no memory for a binary");
  unsigned char *bins[1] = {bin};
  r = api->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL);
  if (r != CL_SUCCESS) {
    ruda__free(bin);
    return ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, r, "clGetProgramInfo",
                          "CL_PROGRAM_BINARIES");
  }
  *out = bin;
  *out_size = size;
  return NULL;
}

/* ---- The cache ---- */

struct ruda__opencl_program_cache {
  ruda__kernel_cache_t base; /* first; its table: kernel hash -> ruda__opencl_function_t */
  const ruda__opencl_api_t *api;
  cl_context ctx;
  const ruda__opencl_device_t *dev;
  ruda__hasher_t key_prefix; /* the disk key's state after its device part */
};

static void key_prefix_init(ruda__opencl_program_cache_t *c);

ruda__opencl_program_cache_t *ruda__opencl_program_cache_create(
    const ruda__opencl_api_t *api, cl_context ctx, const ruda__opencl_device_t *dev,
    uint64_t properties_checksum, const char *cache_dir) {
  ruda__opencl_program_cache_t *c =
      ruda__kernel_cache_create(sizeof *c, properties_checksum, cache_dir, "opencl");
  if (c == NULL) return NULL;
  c->api = api;
  c->ctx = ctx;
  c->dev = dev;
  key_prefix_init(c);
  return c;
}

static void release_function(void *value, void *ctx) {
  ruda__opencl_function_t *f = value;
  const ruda__opencl_api_t *api = ctx;
  if (f->kernel) api->clReleaseKernel(f->kernel);
  if (f->program) api->clReleaseProgram(f->program);
  ruda__free(f);
}

void ruda__opencl_program_cache_destroy(ruda__opencl_program_cache_t *c) {
  if (c == NULL) return;
  ruda__kernel_cache_destroy(c, release_function, (void *)c->api);
}

/* ---- Disk cache ---- */

/* The disk key: the format and the device (its properties' checksum, the
 * platform's and device's names and versions, the driver's), then the
 * kernel (its code's hash, entry point and options). The device part is
 * the same for every kernel: its hash state is made once per cache
 * (key_prefix, at creation). */
static void key_prefix_init(ruda__opencl_program_cache_t *c) {
  const ruda__opencl_device_t *d = c->dev;
  ruda__hasher_t *h = &c->key_prefix;
  ruda__hasher_init(h, CACHE_SEED);
  ruda__hasher_u32(h, CACHE_FORMAT);
  ruda__hasher_u64(h, c->base.props_checksum);
  const char *names[] = {d->platform_name, d->platform_version, d->props.name,
                         d->device_version, d->driver_version};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    ruda__hasher_bytes(h, names[i], strlen(names[i]));
}

static ruda_hash128_t disk_key(const ruda__opencl_program_cache_t *c, ruda_hash128_t kh,
                               const char *entry, const char *options) {
  ruda__hasher_t h = c->key_prefix;
  ruda__hasher_u64(&h, kh.hi);
  ruda__hasher_u64(&h, kh.lo);
  ruda__hasher_bytes(&h, entry, strlen(entry));
  ruda__hasher_bytes(&h, options, strlen(options));
  return ruda__hasher_final(&h);
}

static const ruda__binary_kind_t clbin_kind = {CACHE_MAGIC, CACHE_FORMAT, CACHE_SEED};

/* A cached binary; NULL (with a warning when the file exists but is
 * unusable) on any problem. */
static void *disk_read(const char *path, size_t *out_size) {
  uint64_t word = 0;
  return ruda__binary_cache_load(&clbin_kind, path, out_size, &word, "opencl", &g_disk_skips);
}

static void disk_write(ruda__opencl_program_cache_t *c, const char *path, const void *bin,
                       size_t size) {
  if (ruda__binary_cache_store(&clbin_kind, c->base.dir, path, 0, bin, size, "opencl",
                               &g_disk_writes, &c->base.disk_disabled))
    ruda__opencl_log("compilation", "cached %s (%zu bytes)", path, size);
}

/* A program from a cached binary; NULL (and a warning) when the driver
 * refuses it. */
static cl_program load_binary(ruda__opencl_program_cache_t *c, const char *path, const void *bin,
                              size_t size) {
  const ruda__opencl_api_t *api = c->api;
  cl_device_id dev = c->dev->device;
  const unsigned char *bins[1] = {bin};
  size_t sizes[1] = {size};
  cl_int status = CL_SUCCESS, r = CL_SUCCESS;
  cl_program prog = api->clCreateProgramWithBinary(c->ctx, 1, &dev, sizes, bins, &status, &r);
  if (r == CL_SUCCESS && status == CL_SUCCESS && prog != NULL)
    r = api->clBuildProgram(prog, 1, &dev, "", NULL, NULL);
  if (r != CL_SUCCESS || status != CL_SUCCESS || prog == NULL) {
    ruda__opencl_warn("cached program binary %s was refused (%s); rebuilding it", path,
                      ruda__cl_error_name(r != CL_SUCCESS ? r : status));
    if (prog) api->clReleaseProgram(prog);
    atomic_fetch_add(&g_disk_skips, 1);
    return NULL;
  }
  return prog;
}

/* The kernel `entry` of `prog`, and what the driver says about it. */
static ruda_status_t make_function(const ruda__opencl_api_t *api, cl_program prog,
                                   cl_device_id dev, const char *entry,
                                   ruda__opencl_function_t *out, uint64_t *query_ns) {
  cl_int r = CL_SUCCESS;
  cl_kernel k = api->clCreateKernel(prog, entry, &r);
  if (r != CL_SUCCESS || k == NULL) {
    char names[512] = "";
    if (api->clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL) != CL_SUCCESS)
      names[0] = '\0';
    names[sizeof names - 1] = '\0';
    return compile_error(ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, r, "clCreateKernel",
                                        "entry point \"%s\" not found (the program defines: %s)",
                                        entry, names[0] ? names : "no kernel"));
  }
  memset(out, 0, sizeof *out);
  out->kernel = k;
  uint64_t q0 = ruda__now_ns();
  api->clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof out->num_args, &out->num_args, NULL);
  cl_ulong lm = 0;
  if (api->clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL) == CL_SUCCESS)
    out->static_local_mem = (uint64_t)lm;
  size_t wg = 0;
  if (api->clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS)
    out->max_work_group = wg;
  *query_ns = ruda__now_ns() - q0;
  return NULL;
}

/* Options joined with spaces (ruda__malloc'ed; NULL without memory). */
static char *join_options(const char *const *options, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += (options[i] ? strlen(options[i]) : 0) + 1;
  char *s = ruda__malloc(len);
  if (s == NULL) return NULL;
  size_t used = 0;
  s[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (options[i] == NULL || options[i][0] == '\0') continue;
    used += (size_t)snprintf(s + used, len - used, "%s%s", used ? " " : "", options[i]);
  }
  return s;
}

/* PoCL, whose compiler writes its closing count to stderr. */
static bool is_pocl(const ruda__opencl_device_t *d) {
  return strstr(d->platform_name, "Portable Computing Language") != NULL;
}

bool ruda__opencl_program_cache_has(const ruda__opencl_program_cache_t *c, ruda_hash128_t key) {
  return ruda__module_table_find(&c->base.table, key) != NULL;
}

ruda_status_t ruda__opencl_program_cache_get(ruda__opencl_program_cache_t *c,
                                             ruda_hash128_t key, const char *entry,
                                             const char *source, size_t len,
                                             const char *const *options, size_t num_options,
                                             const ruda__compile_failure_t *portable,
                                             ruda__opencl_function_t **out) {
  ruda__opencl_function_t *f = ruda__module_table_find(&c->base.table, key);
  if (f != NULL) {
    atomic_fetch_add(&g_memory_hits, 1);
    *out = f;
    return NULL;
  }
  const ruda__opencl_api_t *api = c->api;
  cl_device_id dev = c->dev->device;
  uint64_t t0 = ruda__now_ns(), t1 = 0, t2 = 0, t3 = 0;
  if (len == 0) len = strlen(source);
  char *opts = join_options(options, num_options);
  if (opts == NULL) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "joining options");
  char path[sizeof c->base.dir + 48];
  bool use_disk = !c->base.disk_disabled &&
                  ruda__binary_cache_path(c->base.dir, disk_key(c, key, entry, opts), ".clbin",
                                          path, sizeof path);
  cl_program prog = NULL;
  bool from_disk = false;
  if (use_disk) {
    size_t size = 0;
    t1 = ruda__now_ns();
    void *bin = disk_read(path, &size);
    if (bin == NULL) {
      ruda__opencl_log("compilation", "kernel %s: nothing usable at %s", entry, path);
    } else {
      t2 = ruda__now_ns();
      prog = load_binary(c, path, bin, size);
      t3 = ruda__now_ns();
      ruda__free(bin);
      if (prog != NULL) {
        from_disk = true;
        atomic_fetch_add(&g_disk_hits, 1);
        ruda__opencl_log("compilation", "kernel %s loaded from %s", entry, path);
      }
    }
  }
  ruda_status_t s = NULL;
  if (prog == NULL) {
    s = ruda__opencl_build_source(api, c->ctx, dev, entry, source, len, opts, portable,
                                  is_pocl(c->dev), &prog);
    if (s) {
      ruda__free(opts);
      return s;
    }
    ruda__opencl_log("compilation", "[Compiling kernel] %s", entry);
    if (use_disk) {
      void *bin = NULL;
      size_t size = 0;
      ruda_status_t be = ruda__opencl_program_binary(api, prog, &bin, &size);
      if (be == NULL) disk_write(c, path, bin, size);
      else ruda__opencl_warn("no program binary for kernel %s; not cached", entry);
      ruda_status_free(be);
      ruda__free(bin);
    }
  }
  ruda__free(opts);
  f = ruda__calloc(1, sizeof *f);
  if (f == NULL) {
    api->clReleaseProgram(prog);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "caching kernel %s", entry);
  }
  uint64_t query_ns = 0;
  s = make_function(api, prog, dev, entry, f, &query_ns);
  if (s) {
    api->clReleaseProgram(prog);
    ruda__free(f);
    return s;
  }
  f->program = prog;
  f->from_disk = from_disk;
  if (!ruda__module_table_insert(&c->base.table, key, f)) {
    api->clReleaseKernel(f->kernel);
    api->clReleaseProgram(prog);
    ruda__free(f);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "caching kernel %s", entry);
  }
  if (from_disk) {
    uint64_t t4 = ruda__now_ns();
    atomic_fetch_add(&g_hit_key_ns, t1 - t0);
    atomic_fetch_add(&g_hit_read_ns, t2 - t1);
    atomic_fetch_add(&g_hit_build_ns, t3 - t2);
    atomic_fetch_add(&g_hit_kernel_ns, t4 - t3);
    atomic_fetch_add(&g_hit_total_ns, t4 - t0);
    atomic_fetch_add(&g_hit_query_ns, query_ns);
  }
  *out = f;
  return NULL;
}

/* ---- Ahead of time (ruda_kernel_compile_portable_with_options) ---- */

ruda_status_t ruda__opencl_compile_portable(const ruda__portable_compile_t *job, void **out,
                                            size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  const ruda__opencl_device_t *devs = NULL;
  size_t count = 0;
  const ruda__opencl_api_t *api = NULL;
  ruda_status_t s = ruda__opencl_devices(&devs, &count);
  if (s == NULL) s = ruda__opencl_api_get(&api);
  if (s) return s;
  if (job->target >= count)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "no OpenCL device opencl:%u (%zu found)",
                              (unsigned)job->target, count);
  const ruda__opencl_device_t *d = &devs[job->target];
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  cl_int r = CL_SUCCESS;
  cl_context ctx = api->clCreateContext(cprops, 1, &d->device, NULL, NULL, &r);
  if (r != CL_SUCCESS || ctx == NULL)
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clCreateContext", "device opencl:%u (%s)",
                          (unsigned)job->target, d->props.name);
  /* The options of a launch (opencl_launch.c): compilation.fp_contract,
   * the device kind, then the kernel's own for a GPU compiler. */
  const char *opts[2 + 64];
  opts[0] = ruda__fp_contract_opencl_option(ruda__device_settings()->fp_contract);
  opts[1] = (d->type & CL_DEVICE_TYPE_CPU) ? "-DRUDA__OPENCL_CPU_DEVICE" : "";
  size_t n = 2 + ruda__portable_gpu_options(job->options, job->num_options, opts + 2, 64);
  char *joined = join_options(opts, n);
  char *src = NULL;
  size_t src_len = 0;
  if (joined == NULL) s = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "joining options");
  if (s == NULL) s = ruda__portable_source(RUDA__PORTABLE_OPENCL, job->name, job->text, job->len,
                                           &src, &src_len);
  if (s == NULL) {
    char compiler[512];
    snprintf(compiler, sizeof compiler, "the OpenCL compiler of opencl:%u (%s, %s)",
             (unsigned)job->target, d->props.name, d->platform_name);
    ruda__compile_failure_t portable = {.kernel = job->name, .origin = job->origin,
                                        .compiler = compiler, .text = job->text,
                                        .text_len = job->len};
    cl_program prog = NULL;
    s = ruda__opencl_build_source(api, ctx, d->device, job->name, src, src_len, joined,
                                  &portable, is_pocl(d), &prog);
    if (s == NULL) {
      s = ruda__opencl_program_binary(api, prog, out, out_size);
      api->clReleaseProgram(prog);
    }
  }
  free(src);
  ruda__free(joined);
  api->clReleaseContext(ctx);
  return s;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
