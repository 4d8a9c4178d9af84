/* Run-time compilation of portable kernel text for cpu:N (cpu_compile.h). */
#include "backends/cpu/cpu_compile.h"
#include "backends/cpu/cpu_toolchain.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log_internal.h"
#include "ruda/config.h"
#include "ruda/log.h"
#include "server/binary_cache.h"
#include "server/compile_log.h"
#include "server/device_settings.h"
#include "server/module_table.h"
#include "server/portable_kernel.h"
#include "types/hasher.h"


/* Generated at build time (backend.cmake). */
extern const char ruda__prelude_cpu[];
extern const size_t ruda__prelude_cpu_size;

#define CACHE_MAGIC "RUDACPU1"
#define CACHE_FORMAT 2u /* 2: -Werror=implicit-function-declaration */
#define CACHE_SEED 0x6370756b726e6c31ull

static const ruda__binary_kind_t so_kind = {CACHE_MAGIC, CACHE_FORMAT, CACHE_SEED};

static _Atomic uint64_t g_compiles, g_disk_hits, g_disk_skips, g_memory_hits;

const char *ruda__cpu_prelude(size_t *len) {
  *len = ruda__prelude_cpu_size;
  return ruda__prelude_cpu;
}

ruda__cpu_compile_stats_t ruda__cpu_compile_stats(void) {
  ruda__cpu_compile_stats_t s = {atomic_load(&g_compiles), atomic_load(&g_disk_hits),
                                 atomic_load(&g_disk_skips), atomic_load(&g_memory_hits)};
  return s;
}

#define log_basic(...) \
  ruda__log_tagged(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC, "cpu", __VA_ARGS__)

/* ---- The compiler and the machine, found once per process ---- */

typedef ruda__cpu_toolchain_t toolchain_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static toolchain_t g_tc;

/* Fills g_tc once (under g_lock): the toolchain, then the disk key's
 * prefix over the prelude and everything found. */
static void toolchain_init(void) {
  if (g_tc.ready) return;
  toolchain_t *t = &g_tc;
  ruda__cpu_toolchain_find(t, CACHE_SEED);
  ruda__hasher_t *h = &t->key_prefix;
  ruda__hasher_init(h, CACHE_SEED);
  ruda__hasher_u32(h, CACHE_FORMAT);
  ruda__hasher_bytes(h, ruda__prelude_cpu, ruda__prelude_cpu_size);
  ruda__hasher_bytes(h, t->path, strlen(t->path));
  ruda__hasher_bytes(h, t->version, strlen(t->version));
  ruda__hasher_bytes(h, t->flags, strlen(t->flags));
  ruda__hasher_u64(h, t->cpu_flags.hi);
  ruda__hasher_u64(h, t->cpu_flags.lo);
  t->ready = true;
}

/* ---- The in-memory table: kernel id -> function, for the process ---- */

typedef struct fn_entry {
  ruda_cpu_kernel_fn fn;
  struct fn_entry *next; /* the retired list */
} fn_entry_t;

/* Under g_lock. The CPU backend's compiled code is the process's (its
 * objects stay loaded), so one table serves every cpu:N. */
static ruda__module_table_t g_table; /* kernel hash -> fn_entry_t */
static fn_entry_t *g_retired; /* entries of forgotten tables: reachable, never reused */

static ruda_cpu_kernel_fn table_find(ruda_hash128_t k) {
  const fn_entry_t *e = ruda__module_table_find(&g_table, k);
  return e ? e->fn : NULL;
}

static void retire(void *value, void *ctx) {
  fn_entry_t *e = value;
  (void)ctx;
  e->next = g_retired;
  g_retired = e;
}

void ruda__cpu_compile_forget(void) {
  pthread_mutex_lock(&g_lock);
  ruda__module_table_destroy(&g_table, retire, NULL);
  pthread_mutex_unlock(&g_lock);
}

/* ---- Loading ---- */

ruda_status_t ruda__cpu_load_object(const void *bytes, size_t size, void **handle, int *fd_out) {
  *handle = NULL;
  *fd_out = -1;
  int fd = memfd_create("ruda-cpu-kernel", MFD_CLOEXEC);
  if (fd < 0) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "memfd_create for a CPU kernel: %s",
                              strerror(errno));
  }
  const char *p = bytes;
  size_t left = size;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                                "writing a CPU kernel object (%zu bytes): %s", size, strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    close(fd);
    const char *e = dlerror();
    return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                            ruda_status_create(RUDA_ERR_COMPILATION_GENERIC,
                                               "loading a compiled CPU kernel: %s",
                                               e ? e : "dlopen failed"));
  }
  *handle = h;
  *fd_out = fd;
  return NULL;
}

/* The kernel function `entry` of a loaded object, its failure hook set. */
static ruda_status_t bind_entry(void *h, const char *kernel, const char *entry,
                                ruda_cpu_kernel_fn *out) {
  char sym[300];
  snprintf(sym, sizeof sym, "ruda_cpu__%s", entry);
  void *fn = dlsym(h, sym);
  void **fail = dlsym(h, "ruda__cpu_kernel_fail");
  if (!fn || !fail) {
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda_status_create(RUDA_ERR_COMPILATION_GENERIC,
                           "kernel '%s': the text declares no RUDA_KERNEL(%s, ...)", kernel,
                           entry));
  }
  void (*hook)(const ruda_cpu_kernel_ctx_t *, const char *, ...) = ruda_cpu_kernel_fail;
  memcpy(fail, &hook, sizeof hook);
  memcpy(out, &fn, sizeof *out);
  return NULL;
}

/* A cache file, read only when it is the user's, writable by no one else,
 * and whole (binary_cache.h's policy). */
static void *disk_read(const char *path, size_t *size) {
  uint64_t word = 0;
  return ruda__binary_cache_load(&so_kind, path, size, &word, "cpu", &g_disk_skips);
}

/* ---- Compiling ---- */

/* Splits the flags setting on blanks into argv entries (no quoting: no
 * shell ever reads it). */
static size_t split_flags(char *flags, char **argv, size_t cap) {
  size_t n = 0;
  for (char *tok = strtok(flags, " \t\n"); tok && n < cap; tok = strtok(NULL, " \t\n"))
    argv[n++] = tok;
  return n;
}

static ruda_status_t compile_object(const toolchain_t *t, const char *kernel,
                                    const ruda_kernel_code_t *code, const char *text,
                                    size_t text_len, void **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  char work[RUDA_CONFIG_PATH_MAX + 64];
  const char *tmpdir = getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  snprintf(work, sizeof work, "%s/ruda-cpu-XXXXXX", tmpdir);
  if (!mkdtemp(work)) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "kernel '%s': no folder for the compiler's files under %s: %s",
                              kernel, tmpdir, strerror(errno));
  }
  char src[sizeof work + 16], obj[sizeof work + 16];
  snprintf(src, sizeof src, "%s/kernel.c", work);
  snprintf(obj, sizeof obj, "%s/kernel.so", work);
  ruda_status_t err = NULL;
  FILE *f = fopen(src, "we");
  if (!f) {
    err = ruda_status_create(RUDA_ERR_UNAVAILABLE, "kernel '%s': cannot write %s: %s", kernel,
                             src, strerror(errno));
  } else {
    fwrite(ruda__prelude_cpu, 1, ruda__prelude_cpu_size, f);
    fputc('\n', f);
    fwrite(text, 1, text_len, f);
    fputc('\n', f);
    if (fclose(f) != 0)
      err = ruda_status_create(RUDA_ERR_UNAVAILABLE, "kernel '%s': cannot write %s", kernel, src);
  }
  char flags[sizeof t->flags];
  memcpy(flags, t->flags, sizeof flags);
  enum { MAX_FLAGS = 64, FIXED = 11 };
  size_t nopt = code->num_options;
  char **argv = err ? NULL : ruda__calloc(1 + MAX_FLAGS + FIXED + nopt + 1, sizeof *argv);
  if (!err && !argv) err = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "compiler arguments");
  char *log = NULL;
  int rc = 0;
  if (!err) {
    size_t n = 0;
    argv[n++] = (char *)t->path;
    n += split_flags(flags, argv + n, MAX_FLAGS);
    argv[n++] = (char *)"-fPIC";
    argv[n++] = (char *)"-shared";
    argv[n++] = (char *)"-fvisibility=hidden";
    argv[n++] = (char *)"-fdiagnostics-color=never";
    /* A call of an undeclared function is an error on the GPU compilers;
     * here too, not a symbol that fails to load. */
    argv[n++] = (char *)"-Werror=implicit-function-declaration";
    for (size_t i = 0; i < nopt; i++) argv[n++] = (char *)code->options[i];
    argv[n++] = (char *)"-o";
    argv[n++] = obj;
    argv[n++] = (char *)"-x";
    argv[n++] = (char *)"c";
    argv[n++] = src;
    argv[n] = NULL;
    atomic_fetch_add(&g_compiles, 1);
    rc = ruda__cpu_run_capture(argv, &log);
    if (rc < 0) {
      err = ruda_status_create(RUDA_ERR_UNAVAILABLE, "kernel '%s': cannot run %s: %s", kernel,
                               t->path, strerror(errno));
    } else if (rc != 0) {
      /* The user's messages and hints, the prelude's only in the log
       * (server/compile_log.h), as on the other backends. */
      char compiler[512];
      size_t used = (size_t)snprintf(compiler, sizeof compiler, "%s", t->path);
      for (size_t i = 0; i < nopt && used < sizeof compiler; i++)
        used += (size_t)snprintf(compiler + used, sizeof compiler - used, " %s",
                                 code->options[i]);
      ruda__compile_failure_t cf = {.kernel = kernel, .origin = code->origin,
                                    .compiler = compiler, .log = log, .text = text,
                                    .text_len = text_len};
      err = ruda__compile_failure_status(&cf);
    }
  }
  ruda__free(log);
  ruda__free(argv);
  if (!err) {
    int fd = open(obj, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
      err = ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                             ruda_status_create(RUDA_ERR_COMPILATION_GENERIC,
                                                "kernel '%s': the compiler wrote no object",
                                                kernel));
    } else {
      size_t size = (size_t)st.st_size, got = 0;
      char *bytes = ruda__malloc(size);
      while (bytes && got < size) {
        ssize_t r = read(fd, bytes + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
      }
      if (!bytes || got != size) {
        ruda__free(bytes);
        err = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "reading kernel '%s''s object",
                                 kernel);
      } else {
        *out = bytes;
        *out_size = size;
      }
    }
    if (fd >= 0) close(fd);
  }
  unlink(src);
  unlink(obj);
  rmdir(work);
  return err;
}

/* The disk cache file of kernel `id`'s `entry`; false when there is no
 * disk cache. */
static bool entry_path(const toolchain_t *t, ruda_hash128_t id, const char *entry, char *path,
                       size_t cap) {
  if (!t->dir[0]) return false;
  ruda__hasher_t h = t->key_prefix;
  ruda__hasher_u64(&h, id.hi);
  ruda__hasher_u64(&h, id.lo);
  ruda__hasher_bytes(&h, entry, strlen(entry));
  return ruda__binary_cache_path(t->dir, ruda__hasher_final(&h), ".so", path, cap);
}

bool ruda__cpu_cache_entry(const ruda_kernel_t *kernel, const ruda_kernel_code_t *code,
                           char *path, size_t cap) {
  const char *entry = code->entry ? code->entry : ruda_kernel_desc(kernel)->name;
  pthread_mutex_lock(&g_lock);
  toolchain_init();
  bool ok = entry_path(&g_tc, ruda_kernel_hash(kernel), entry, path, cap);
  pthread_mutex_unlock(&g_lock);
  return ok;
}

void *ruda__cpu_cache_payload(const char *path, size_t *size) { return disk_read(path, size); }

ruda_status_t ruda__cpu_warm_load(const char *path, const char *entry, void **handle, int *fd,
                                  ruda_cpu_kernel_fn *fn) {
  *handle = NULL;
  *fd = -1;
  size_t size = 0;
  void *bytes = disk_read(path, &size);
  if (!bytes) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "no usable cache file %s", path);
  ruda_status_t err = ruda__cpu_load_object(bytes, size, handle, fd);
  ruda__free(bytes);
  if (err) return err;
  err = bind_entry(*handle, entry, entry, fn);
  if (err) {
    dlclose(*handle);
    close(*fd);
    *handle = NULL;
    *fd = -1;
  }
  return err;
}

ruda_status_t ruda__cpu_compile_portable(const ruda__portable_compile_t *job, void **out,
                                         size_t *out_size) {
  /* job->target is not used: compilation.cpu_flags say what to target. */
  *out = NULL;
  *out_size = 0;
  pthread_mutex_lock(&g_lock);
  toolchain_init();
  const toolchain_t *t = &g_tc;
  ruda_status_t err = NULL;
  if (!t->path[0]) {
    err = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                             "no C compiler for CPU kernels: looked for %s; set "
                             "compilation.cpu_compiler or RUDA_CPU_COMPILER",
                             t->looked_for);
  } else {
    ruda_kernel_code_t code = {RUDA_KERNEL_FORMAT_PORTABLE, job->text, job->len, NULL,
                               job->name, job->options, job->num_options, job->origin};
    err = compile_object(t, job->name, &code, job->text, job->len, out, out_size);
  }
  pthread_mutex_unlock(&g_lock);
  return err;
}

ruda_status_t ruda__cpu_compiled_fn(const ruda_kernel_t *kernel, const ruda_kernel_code_t *code,
                                    ruda_cpu_kernel_fn *out) {
  *out = NULL;
  ruda_hash128_t id = ruda_kernel_hash(kernel);
  const char *name = ruda_kernel_desc(kernel)->name;
  const char *entry = code->entry ? code->entry : name;
  pthread_mutex_lock(&g_lock);
  ruda_cpu_kernel_fn fn = table_find(id);
  if (fn) {
    pthread_mutex_unlock(&g_lock);
    atomic_fetch_add(&g_memory_hits, 1);
    *out = fn;
    return NULL;
  }
  /* One compile at a time: a second launch of the same kernel waits for the
   * first's object instead of compiling it again. */
  ruda_status_t err = ruda__portable_check_options(name, code->options, code->num_options);
  if (err) goto done;
  toolchain_init();
  const toolchain_t *t = &g_tc;
  if (!t->path[0]) {
    err = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                             "kernel '%s' needs a C compiler to run on the CPU (it has no "
                             "compiled-in function): looked for %s; set "
                             "compilation.cpu_compiler or RUDA_CPU_COMPILER",
                             name, t->looked_for);
    goto done;
  }
  const char *text = code->data;
  size_t text_len = code->size ? code->size : strlen(text);
  char path[sizeof t->dir + 48];
  bool use_disk = entry_path(t, id, entry, path, sizeof path);
  void *bytes = NULL;
  size_t size = 0;
  bool from_disk = false;
  if (use_disk) {
    bytes = disk_read(path, &size);
    from_disk = bytes != NULL;
  }
  if (!bytes) {
    err = compile_object(t, name, code, text, text_len, &bytes, &size);
    if (err) goto done;
    log_basic("[Compiling kernel] %s", name);
    if (use_disk) {
      if (ruda__binary_cache_store(&so_kind, t->dir, path, 0, bytes, size, "cpu", NULL, NULL))
        chmod(path, 0600);
    }
  }
  void *handle = NULL;
  int fd = -1;
  err = ruda__cpu_load_object(bytes, size, &handle, &fd);
  ruda__free(bytes);
  if (err) goto done;
  err = bind_entry(handle, name, entry, &fn);
  if (err) {
    dlclose(handle);
    close(fd);
    goto done;
  }
  if (from_disk) {
    atomic_fetch_add(&g_disk_hits, 1);
    log_basic("kernel %s loaded from %s", name, path);
  }
  fn_entry_t *e = ruda__malloc(sizeof *e);
  if (e) {
    e->fn = fn;
    e->next = NULL;
    /* Out of memory: not kept, the next launch loads the object again. */
    if (!ruda__module_table_insert(&g_table, id, e)) ruda__free(e);
  }
  /* The object and its memfd stay for the life of the process: functions
   * handed out are never unmapped under a launch, and the open memfd keeps
   * its /proc/self/fd name unique (the loader would take an object of the
   * same name for one already loaded). */
  *out = fn;
done:
  pthread_mutex_unlock(&g_lock);
  return err;
}
