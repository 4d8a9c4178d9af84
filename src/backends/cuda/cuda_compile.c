/* Kernel compilation and module caches for the CUDA backend.
 *
 *  - In memory: one table per device (server) from the kernel's stable id
 *    hash to its loaded CUfunction.
 *  - On disk: CUBINs under {cache root}/cuda/{key}.cubin, where the key
 *    hashes the CUDA code entry (ruda__kernel_code_hash), the NVRTC
 *    options, the device properties checksum and the driver version. A
 *    file is a small header (magic, format version, payload size, payload
 *    checksum, the NVRTC version that compiled it) and the CUBIN; it is
 *    written to a temporary name and renamed, so readers never see half a
 *    file. A corrupt, unreadable or unwritable cache is
 *    skipped with a log line and never fails a launch.
 *
 * CUDA C goes through NVRTC with --gpu-architecture=sm_XY (sm_XYa from
 * sm_90), the toolkit's include path and -lineinfo; PTX and CUBIN sources
 * are handed to cuModuleLoadData directly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backends/cuda/cuda_internal.h"
#include "base/alloc.h"
#include "server/kernel_object.h"
#include "server/kernel_cache.h"
#include "server/module_table.h"
#include "ruda/config.h"
#include "ruda/kernel.h"
#include "server/device_settings.h"
#include "server/server.h"
#include "server/binary_cache.h"
#include "server/compile_log.h"
#include "server/portable_kernel.h"
#include "types/hasher.h"

bool ruda__cuda_cache_root(char *buf, size_t cap) {
  /* The server layer's settings: [compilation] cache, the user's cache
   * directory by default, "" for "none". */
  const char *dir = ruda__device_settings()->cache_dir;
  if (cap) buf[0] = '\0';
  return dir[0] != '\0' && (size_t)snprintf(buf, cap, "%s", dir) < cap;
}

#if !defined(RUDA_HAVE_CUDA_HEADERS)

ruda__cuda_compile_stats_t ruda__cuda_compile_stats(void) {
  ruda__cuda_compile_stats_t s = {0};
  return s;
}

#else

static _Atomic uint64_t g_memory_hits, g_disk_hits, g_compiles, g_disk_writes, g_disk_skips;
static _Atomic uint64_t g_hit_key_ns, g_hit_read_ns, g_hit_load_ns, g_hit_total_ns;

ruda__cuda_compile_stats_t ruda__cuda_compile_stats(void) {
  ruda__cuda_compile_stats_t s = {atomic_load(&g_memory_hits), atomic_load(&g_disk_hits),
                                  atomic_load(&g_compiles),    atomic_load(&g_disk_writes),
                                  atomic_load(&g_disk_skips),  atomic_load(&g_hit_key_ns),
                                  atomic_load(&g_hit_read_ns), atomic_load(&g_hit_load_ns),
                                  atomic_load(&g_hit_total_ns)};
  return s;
}

#define CACHE_MAGIC "RUDACUB1"
#define CACHE_FORMAT 3u /* 3: binary key fields, ruda__checksum128 */
#define CACHE_SEED 0x6375626e63616368ull

struct ruda__cuda_module_cache {
  ruda__kernel_cache_t base; /* first; its table: kernel hash -> ruda__cuda_function_t */
  const ruda__cuda_api_t *api;
  uint32_t cc;
  /* The disk key's hash state after what every key of this cache shares
   * (format, device, driver, the NVRTC options), made on first use
   * (key_state). */
  ruda__hasher_t key_prefix;
  bool key_prefix_set;
};

static const char *cuda_root(void) {
  const char *p = getenv("CUDA_PATH");
  if (p != NULL && p[0] != '\0') return p;
  return "/usr/local/cuda";
}

ruda__cuda_module_cache_t *ruda__cuda_module_cache_create(const ruda__cuda_api_t *api,
                                                          uint32_t cc,
                                                          uint64_t properties_checksum,
                                                          const char *cache_dir) {
  ruda__cuda_module_cache_t *c =
      ruda__kernel_cache_create(sizeof *c, properties_checksum, cache_dir, "cuda");
  if (c == NULL) return NULL;
  c->api = api;
  c->cc = cc;
  return c;
}

typedef struct release_ctx {
  const ruda__cuda_api_t *api;
  bool skip_unload;
} release_ctx_t;

static void release_function(void *value, void *ctx) {
  ruda__cuda_function_t *f = value;
  const release_ctx_t *r = ctx;
  if (!r->skip_unload && f->module != NULL) r->api->cuModuleUnload(f->module);
  ruda__free(f);
}

void ruda__cuda_module_cache_destroy(ruda__cuda_module_cache_t *c, bool skip_unload) {
  if (c == NULL) return;
  release_ctx_t r = {c->api, skip_unload};
  ruda__kernel_cache_destroy(c, release_function, &r);
}

/* ---- NVRTC ---- */

static size_t build_options(uint32_t cc, char *arch, size_t arch_cap, char *inc, size_t inc_cap,
                            char *inc2, size_t inc2_cap, const char **opts) {
  size_t n = 0;
  snprintf(arch, arch_cap, "--gpu-architecture=sm_%u%s", cc, cc >= 90 ? "a" : "");
  opts[n++] = arch;
  snprintf(inc, inc_cap, "--include-path=%s/include", cuda_root());
  opts[n++] = inc;
  char cccl[600];
  snprintf(cccl, sizeof cccl, "%s/include/cccl", cuda_root());
  struct stat st;
  if (stat(cccl, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(inc2, inc2_cap, "--include-path=%s", cccl);
    opts[n++] = inc2;
  }
  opts[n++] = "-lineinfo";
  return n;
}

/* `origin` non-NULL: a portable kernel (prelude + its file's text), whose
 * log already names the user's file and line; the error says so instead of
 * dumping the source (the prelude is not the user's). */
static ruda_status_t nvrtc_compile(const char *name, const char *source, size_t source_len,
                                   uint32_t cc, const char *const *extra, size_t num_extra,
                                   const char *origin, void **out_cubin, size_t *out_size) {
  *out_cubin = NULL;
  *out_size = 0;
  const ruda__nvrtc_api_t *nv = NULL;
  ruda_status_t s = ruda__nvrtc_api_get(&nv);
  if (s != NULL) return s;
  char *src = ruda__strndup(source, source_len);
  if (src == NULL) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "copying kernel source");
  char prog_name[160];
  snprintf(prog_name, sizeof prog_name, "%s.cu", name);
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, src, prog_name, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    ruda__free(src);
    return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                            ruda__nvrtc_error(RUDA_ERR_COMPILATION_GENERIC, r,
                                              "nvrtcCreateProgram", "kernel %s", name));
  }
  char arch[64], inc[600], inc2[640];
  const char *opts[8 + 64];
  size_t nopt = build_options(cc, arch, sizeof arch, inc, sizeof inc, inc2, sizeof inc2, opts);
  for (size_t i = 0; i < num_extra && nopt < sizeof opts / sizeof opts[0]; i++)
    opts[nopt++] = extra[i];
  r = nv->nvrtcCompileProgram(prog, (int)nopt, opts);
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    char *log = NULL;
    if (nv->nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 0) {
      log = ruda__malloc(log_size + 1);
      if (log != NULL && nv->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
      if (log != NULL) log[log_size] = '\0';
    }
    if (origin) {
      /* A portable kernel: the user's messages and hints, the prelude's
       * only in the log (server/compile_log.h). */
      size_t plen = 0;
      ruda__portable_prelude(RUDA__PORTABLE_CUDA, &plen);
      char compiler[64];
      snprintf(compiler, sizeof compiler, "NVRTC for sm_%u", cc);
      size_t slen = strlen(src);
      ruda__compile_failure_t f = {.kernel = name, .origin = origin, .compiler = compiler,
                                   .log = log, .text = slen > plen ? src + plen + 1 : NULL,
                                   .text_len = slen > plen ? slen - plen - 1 : 0, .source = src,
                                   .source_len = slen};
      ruda_status_t e = ruda__compile_failure_status(&f);
      ruda_status_set_vendor(ruda_status_find(e, RUDA_ERR_COMPILATION_GENERIC),
                             "nvrtcCompileProgram", nv->nvrtcGetErrorString(r), (int64_t)r);
      ruda__free(log);
      nv->nvrtcDestroyProgram(&prog);
      ruda__free(src);
      return e;
    }
    /* The message (docs/cuda.md, Kernels): the log lines indented, then the
     * source. */
    size_t cap = (log ? strlen(log) * 2 : 0) + (origin ? strlen(origin) : strlen(src)) + 512;
    char *text = ruda__malloc(cap);
    if (text != NULL) {
      size_t used = origin ? (size_t)snprintf(text, cap,
                                              "[Compilation Error] portable kernel '%s' (%s), "
                                              "compiled by NVRTC for sm_%u:\n",
                                              name, origin, cc)
                           : (size_t)snprintf(text, cap, "[Compilation Error] \n");
      const char *p = log ? log : "";
      while (*p != '\0' && used < cap) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0)
          used += (size_t)snprintf(text + used, cap - used, "    %.*s\n", (int)len, p);
        p += len + (nl ? 1 : 0);
      }
      if (used < cap && !origin) snprintf(text + used, cap - used, "[Source]  \n%s", src);
    }
    ruda_status_t ce = ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "%s",
                                          text ? text : "[Compilation Error] (no memory for the log)");
    ruda_status_set_vendor(ce, "nvrtcCompileProgram", nv->nvrtcGetErrorString(r), (int64_t)r);
    ruda__free(text);
    ruda__free(log);
    nv->nvrtcDestroyProgram(&prog);
    ruda__free(src);
    return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION, ce);
  }
  ruda__free(src);
  size_t size = 0;
  void *bin = NULL;
  const char *call = "nvrtcGetCUBIN";
  if (nv->nvrtcGetCUBINSize != NULL && nv->nvrtcGetCUBIN != NULL) {
    r = nv->nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS && size > 0) {
      bin = ruda__malloc(size);
      if (bin != NULL) r = nv->nvrtcGetCUBIN(prog, bin);
    }
  } else {
    call = "nvrtcGetPTX";
    r = nv->nvrtcGetPTXSize(prog, &size);
    if (r == NVRTC_SUCCESS && size > 0) {
      bin = ruda__malloc(size);
      if (bin != NULL) r = nv->nvrtcGetPTX(prog, bin);
    }
  }
  nv->nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS) {
    ruda__free(bin);
    return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                            ruda__nvrtc_error(RUDA_ERR_COMPILATION_GENERIC, r, call,
                                              "kernel %s", name));
  }
  if (bin == NULL)
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "holding the CUBIN of %s", name);
  atomic_fetch_add(&g_compiles, 1);
  *out_cubin = bin;
  *out_size = size;
  return NULL;
}

ruda_status_t ruda__cuda_nvrtc_compile(const char *name, const char *source, size_t source_len,
                                       uint32_t cc, const char *const *extra, size_t num_extra,
                                       void **out_cubin, size_t *out_size) {
  return nvrtc_compile(name, source, source_len, cc, extra, num_extra, NULL, out_cubin, out_size);
}

ruda_status_t ruda__cuda_nvrtc_compile_portable(const char *name, const char *text,
                                                size_t text_len, const char *origin, uint32_t cc,
                                                const char *const *extra, size_t num_extra,
                                                void **out_cubin, size_t *out_size) {
  *out_cubin = NULL;
  *out_size = 0;
  char *src = NULL;
  size_t len = 0;
  ruda_status_t s = ruda__portable_source(RUDA__PORTABLE_CUDA, name, text, text_len, &src, &len);
  if (s != NULL) return s;
  /* compilation.fp_contract, then the kernel's own options (a later --fmad
   * of the kernel's wins). */
  const char *opts[1 + 63];
  size_t nopt = 0;
  opts[nopt++] = ruda__fp_contract_nvrtc_option(ruda__device_settings()->fp_contract);
  for (size_t i = 0; i < num_extra && nopt < sizeof opts / sizeof opts[0]; i++)
    opts[nopt++] = extra[i];
  s = nvrtc_compile(name, src, len, cc, opts, nopt,
                    origin && origin[0] ? origin : "its embedded text", out_cubin, out_size);
  free(src);
  return s;
}

/* ---- Disk cache ---- */

/* The disk key: everything the CUBIN depends on but the NVRTC version,
 * which the file's header records instead, so that a hit never has to
 * load NVRTC just to name its file (a new process's first launch should
 * cost a file read and cuModuleLoadData, not a dlopen of the compiler). A
 * hit made by another NVRTC than the one loaded is recompiled (disk_read). */
/* The NVRTC options as key text, per compute capability, built once per
 * process: build_options looks at the file system (the CCCL folder). */
static pthread_mutex_t g_opts_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_opts_cc;
static char g_opts_text[1024];

/* Feeds the options for `cc` to `h`, making their text first when the
 * memo holds another compute capability's. */
static void hash_options(ruda__hasher_t *h, uint32_t cc) {
  pthread_mutex_lock(&g_opts_lock);
  if (g_opts_cc != cc) {
    char arch[64], inc[600], inc2[640];
    const char *opts[8];
    size_t nopt = build_options(cc, arch, sizeof arch, inc, sizeof inc, inc2, sizeof inc2, opts);
    size_t used = 0;
    g_opts_text[0] = '\0';
    for (size_t i = 0; i < nopt && used < sizeof g_opts_text; i++)
      used += (size_t)snprintf(g_opts_text + used, sizeof g_opts_text - used, "opt=%s;", opts[i]);
    g_opts_cc = cc;
  }
  ruda__hasher_bytes(h, g_opts_text, strlen(g_opts_text));
  pthread_mutex_unlock(&g_opts_lock);
}

/* The hash state after the key's prefix (format, the device's properties
 * checksum, the driver's version, the compute capability, the options),
 * the same for every kernel of the cache's device: made at the cache's
 * first disk key. The fields are fed as binary words, not formatted: a
 * warm load in a new process makes this prefix once and should not pay
 * for printf. */
static void key_state(ruda__cuda_module_cache_t *c) {
  ruda__hasher_init(&c->key_prefix, CACHE_SEED);
  ruda__hasher_u32(&c->key_prefix, CACHE_FORMAT);
  ruda__hasher_u64(&c->key_prefix, c->base.props_checksum);
  ruda__hasher_u32(&c->key_prefix, (uint32_t)c->api->driver_version);
  ruda__hasher_u32(&c->key_prefix, c->cc);
  hash_options(&c->key_prefix, c->cc);
  c->key_prefix_set = true;
}

static ruda_hash128_t disk_key(ruda__cuda_module_cache_t *c, const ruda_kernel_t *k,
                               const ruda_kernel_code_t *code) {
  if (!c->key_prefix_set) key_state(c);
  /* A portable kernel is compiled behind the prelude, which changes with
   * ruda: its hash is part of the key (computed once per process). */
  static _Atomic uint64_t prelude_hash;
  uint64_t ph = 0;
  if (code->format == RUDA_KERNEL_FORMAT_PORTABLE) {
    ph = atomic_load_explicit(&prelude_hash, memory_order_relaxed);
    if (ph == 0) {
      size_t len = 0;
      const char *text = ruda__portable_prelude(RUDA__PORTABLE_CUDA, &len);
      ph = text ? ruda_hash128(text, len, CACHE_SEED).lo | 1u : 1u;
      atomic_store_explicit(&prelude_hash, ph, memory_order_relaxed);
    }
    /* ... and compiled with compilation.fp_contract's --fmad. */
    ph ^= (uint64_t)ruda__device_settings()->fp_contract << 1;
  }
  ruda_hash128_t kh = ruda__kernel_code_hash(k, code);
  ruda__hasher_t h = c->key_prefix;
  ruda__hasher_u64(&h, kh.hi);
  ruda__hasher_u64(&h, kh.lo);
  ruda__hasher_u64(&h, ph);
  return ruda__hasher_final(&h);
}

/* The NVRTC version as the cache header stores it; 0 when not loaded. */
static uint64_t nvrtc_version_word(void) {
  const ruda__nvrtc_api_t *nv = ruda__nvrtc_api_loaded();
  return nv ? ((uint64_t)(uint32_t)nv->major << 32) | (uint32_t)nv->minor : 0;
}

static const ruda__binary_kind_t cubin_kind = {CACHE_MAGIC, CACHE_FORMAT, CACHE_SEED};

/* Reads a cached CUBIN; NULL (with a log line when the file exists but is
 * unusable or stale) on any problem. */
static void *disk_read(const char *path, size_t *out_size) {
  uint64_t made_by = 0;
  void *bin = ruda__binary_cache_load(&cubin_kind, path, out_size, &made_by, "cuda", &g_disk_skips);
  if (bin == NULL) return NULL;
  /* Compiled by another NVRTC than the one this process loaded: stale (not
   * an error: it is compiled again and replaced). */
  uint64_t loaded = nvrtc_version_word();
  if (loaded != 0 && made_by != loaded) {
    ruda__free(bin);
    ruda__cuda_log("compilation", "cached %s was compiled by another NVRTC; recompiling", path);
    return NULL;
  }
  return bin;
}

static void disk_write(ruda__cuda_module_cache_t *c, const char *path, const void *bin,
                       size_t size) {
  if (ruda__binary_cache_store(&cubin_kind, c->base.dir, path, nvrtc_version_word(), bin, size,
                               "cuda", &g_disk_writes, &c->base.disk_disabled))
    ruda__cuda_log("compilation", "cached %s (%zu bytes)", path, size);
}

/* ---- Lookup ---- */

static ruda_status_t load_module(const ruda__cuda_api_t *api, const void *image,
                                 const char *name, CUmodule *mod, CUfunction *fn) {
  CUresult r = api->cuModuleLoadData(mod, image);
  if (r != CUDA_SUCCESS)
    return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                            ruda__cu_error(RUDA_ERR_COMPILATION_GENERIC, r, "cuModuleLoadData",
                                           "loading kernel %s", name));
  r = api->cuModuleGetFunction(fn, *mod, name);
  if (r != CUDA_SUCCESS) {
    api->cuModuleUnload(*mod);
    *mod = NULL;
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda__cu_error(RUDA_ERR_COMPILATION_GENERIC, r, "cuModuleGetFunction",
                       "entry point \"%s\" not found (declare it extern \"C\" __global__)",
                       name));
  }
  return NULL;
}

RUDA__HOT
ruda_status_t ruda__cuda_module_cache_get(ruda__cuda_module_cache_t *c,
                                          const ruda_kernel_t *kernel,
                                          ruda__cuda_function_t **out) {
  ruda_hash128_t key = ruda_kernel_hash(kernel);
  ruda__cuda_function_t *f = ruda__module_table_find(&c->base.table, key);
  if (f != NULL) {
    atomic_fetch_add(&g_memory_hits, 1);
    *out = f;
    return NULL;
  }
  const ruda_kernel_desc_t *d = ruda_kernel_desc(kernel);
  /* Binaries first: they need no compiler. */
  static const ruda_kernel_format_t formats[] = {RUDA_KERNEL_FORMAT_CUBIN, RUDA_KERNEL_FORMAT_PTX,
                                                 RUDA_KERNEL_FORMAT_CUDA_C,
                                                 RUDA_KERNEL_FORMAT_PORTABLE};
  const ruda_kernel_code_t *code = ruda__kernel_code_pick(kernel, formats, 4);
  if (code == NULL) goto unsupported;
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  bool from_disk = false;
  uint64_t hit_start = 0; /* a disk hit's start, for the counters */
  ruda_status_t s = NULL;
  switch (code->format) {
    case RUDA_KERNEL_FORMAT_CUBIN:
    case RUDA_KERNEL_FORMAT_PTX:
      /* Text entries are stored NUL-terminated, as cuModuleLoadData wants
       * for PTX. */
      s = load_module(c->api, code->data, code->entry, &mod, &fn);
      break;
    default: {
      char path[sizeof c->base.dir + 48];
      uint64_t t0 = ruda__now_ns();
      bool use_disk = !c->base.disk_disabled &&
                      ruda__binary_cache_path(c->base.dir, disk_key(c, kernel, code), ".cubin",
                                              path, sizeof path);
      if (use_disk) {
        size_t size = 0;
        uint64_t t1 = ruda__now_ns();
        void *bin = disk_read(path, &size);
        if (bin != NULL) {
          uint64_t t2 = ruda__now_ns();
          s = load_module(c->api, bin, code->entry, &mod, &fn);
          uint64_t t3 = ruda__now_ns();
          ruda__free(bin);
          if (s == NULL) {
            from_disk = true;
            hit_start = t0;
            atomic_fetch_add(&g_hit_key_ns, t1 - t0);
            atomic_fetch_add(&g_hit_read_ns, t2 - t1);
            atomic_fetch_add(&g_hit_load_ns, t3 - t2);
            atomic_fetch_add(&g_disk_hits, 1);
            ruda__cuda_log("compilation", "kernel %s loaded from %s", d->name, path);
            break;
          }
          ruda__cuda_warn("cached CUBIN %s did not load; recompiling", path);
          ruda_status_free(s);
          s = NULL;
        }
      }
      void *bin = NULL;
      size_t size = 0;
      if (code->format == RUDA_KERNEL_FORMAT_PORTABLE) {
        /* -O, -f and -m options are the CPU compiler's. */
        const char *gpu_opts[64];
        size_t ngo = 0;
        for (size_t i = 0; i < code->num_options && ngo < 64; i++)
          if (ruda__portable_option_for_gpu(code->options[i])) gpu_opts[ngo++] = code->options[i];
        s = ruda__cuda_nvrtc_compile_portable(code->entry, code->data, code->size, code->origin,
                                              c->cc, gpu_opts, ngo, &bin, &size);
      } else {
        s = ruda__cuda_nvrtc_compile(d->name, code->data, code->size, c->cc, code->options,
                                     code->num_options, &bin, &size);
      }
      if (s != NULL) return s;
      ruda__cuda_log("compilation", "[Compiling kernel] %s (%zu bytes)", d->name, size);
      s = load_module(c->api, bin, code->entry, &mod, &fn);
      if (s == NULL && use_disk) disk_write(c, path, bin, size);
      ruda__free(bin);
      break;
    }
  }
  if (s != NULL) return s;
  f = ruda__calloc(1, sizeof *f);
  if (f != NULL) {
    f->fn = fn;
    f->module = mod;
    f->shared_mem_set = 0;
    f->from_disk = from_disk;
  }
  if (f == NULL || !ruda__module_table_insert(&c->base.table, key, f)) {
    ruda__free(f);
    c->api->cuModuleUnload(mod);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "caching kernel %s", d->name);
  }
  if (from_disk) atomic_fetch_add(&g_hit_total_ns, ruda__now_ns() - hit_start);
  *out = f;
  return NULL;
unsupported:
  return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                          ruda_status_create(RUDA_ERR_COMPILATION_NO_CODE,
                                             "kernel %s has no CUDA code (CUDA C, PTX, CUBIN "
                                             "or a portable kernel's text)",
                                             d->name));
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
