/* compile: loading a kernel from the compile cache against compiling it.
 * The CUDA backend compiles with NVRTC (bench_cuda.c), the OpenCL backend
 * with clBuildProgram (bench_opencl.c). On cpu:N, portable kernel text is
 * compiled with the C compiler at run time (src/backends/cpu/cpu_compile.c):
 *
 *  cpu_warm_cache_load  a new process's load of a compiled kernel from the
 *                       disk cache (read, owner and checksum checks, load
 *                       from a memfd, dlsym), against dlopen + dlsym +
 *                       dlclose of the same object as a plain file
 *  cpu_cold_compile     the first launch's compile (a new -D constant each
 *                       time, so nothing is cached), against running the
 *                       C compiler with the same flags on the same source
 *                       from a shell-free posix_spawn
 */
#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_internal.h"
#include "bench_gpu.h"
#include "harness.h"
#include "ruda/client.h"

extern char **environ;

static const char k_text[] =
    "#line 1 \"bench_scale.c\"\n"
    "RUDA_KERNEL(bench_scale, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),\n"
    "            RUDA_SCALAR(uint32_t, n)) {\n"
    "  RUDA_UNITS(u) { if (u.abs_x < n) x[u.abs_x] = x[u.abs_x] * FACTOR + 1.0f; }\n"
    "}\n";

static ruda_kernel_t *make_kernel(const char *define) {
  const char *opts[] = {define};
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  src.options = opts;
  src.num_options = 1;
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_from_text(k_text, 0, NULL, &src, &k);
  ruda_status_free(s);
  return k;
}

typedef struct warm_ctx {
  char cache_path[1024];
  char plain_path[1100];
  int failures;
} warm_ctx_t;

static void ruda_warm(void *p) {
  warm_ctx_t *c = p;
  void *h = NULL;
  int fd = -1;
  ruda_cpu_kernel_fn fn = NULL;
  ruda_status_t s = ruda__cpu_warm_load(c->cache_path, "bench_scale", &h, &fd, &fn);
  if (s) {
    c->failures++;
    ruda_status_free(s);
    return;
  }
  dlclose(h);
  close(fd);
}

static void dlopen_plain(void *p) {
  warm_ctx_t *c = p;
  void *h = dlopen(c->plain_path, RTLD_NOW | RTLD_LOCAL);
  if (!h || !dlsym(h, "ruda_cpu__bench_scale")) c->failures++;
  if (h) dlclose(h);
}

static void bench_cpu_warm(ruda_bench_t *b, ruda_client_t *client) {
  ruda_kernel_t *k = make_kernel("-DFACTOR=2.0f");
  warm_ctx_t c;
  memset(&c, 0, sizeof c);
  /* One launch compiles the kernel and fills the cache. */
  float x[64] = {0};
  ruda_handle_t h;
  ruda_status_t s = ruda_client_create_buffer(client, x, sizeof x, &h);
  uint64_t n = 64;
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = &h;
  args.num_buffers = 1;
  args.info.data = &n;
  args.info.len = 1;
  args.info.dynamic_metadata_offset = 1;
  if (!s) s = ruda_client_launch(client, k, ruda_count_static(1, 1, 1), &args);
  if (!s) s = ruda_client_sync(client);
  if (!s) ruda_handle_release(&h);
  if (s) {
    ruda_bench_fail_status(b, "compile", "cpu_warm_cache_load", s);
    ruda_kernel_release(k);
    return;
  }
  const ruda_kernel_code_t *code = &ruda_kernel_desc(k)->code[0];
  size_t size = 0;
  void *bytes = NULL;
  if (!ruda__cpu_cache_entry(k, code, c.cache_path, sizeof c.cache_path) ||
      !(bytes = ruda__cpu_cache_payload(c.cache_path, &size))) {
    ruda_bench_skip(b, "compile", "cpu_warm_cache_load", "the disk cache is off or unusable");
    ruda_kernel_release(k);
    return;
  }
  snprintf(c.plain_path, sizeof c.plain_path, "%s.plain-%ld.so", c.cache_path, (long)getpid());
  FILE *f = fopen(c.plain_path, "wb");
  bool ok = f && fwrite(bytes, 1, size, f) == size;
  if (f && fclose(f) != 0) ok = false;
  ruda__free(bytes);
  if (ok) {
    size_t reps = ruda_bench_pick(b, 30, 10, 1), inner = ruda_bench_pick(b, 20, 10, 1);
    ruda_bench_stats_t r, base;
    ruda_bench_compare_calls(ruda_warm, dlopen_plain, &c, 5, reps, inner, &r, &base);
    if (c.failures) ruda_bench_fail(b, "compile", "cpu_warm_cache_load", "a load failed");
    else ruda_bench_report(b, "compile", "cpu_warm_cache_load", "ns", r, base, "dlopen+dlsym+dlclose", true);
  } else {
    ruda_bench_fail(b, "compile", "cpu_warm_cache_load", "cannot write the plain object");
  }
  unlink(c.plain_path);
  ruda_kernel_release(k);
}

typedef struct cold_ctx {
  ruda_client_t *client;
  unsigned next;
  int failures;
  char src[1200], obj[1200];
} cold_ctx_t;

static void ruda_cold(void *p) {
  cold_ctx_t *c = p;
  char define[64];
  /* A constant no run has used: a new kernel id, a cache miss. */
  snprintf(define, sizeof define, "-DFACTOR=%u.%luf", c->next++, (unsigned long)getpid());
  ruda_kernel_t *k = make_kernel(define);
  ruda_cpu_kernel_fn fn = NULL;
  ruda_status_t s = k ? ruda__cpu_compiled_fn(k, &ruda_kernel_desc(k)->code[0], &fn) : NULL;
  if (!k || s) c->failures++;
  ruda_status_free(s);
  ruda_kernel_release(k);
}

static void cc_direct(void *p) {
  cold_ctx_t *c = p;
  char *argv[] = {(char *)"cc", (char *)"-O3", (char *)"-march=native", (char *)"-fPIC",
                  (char *)"-shared", (char *)"-fvisibility=hidden", (char *)"-DFACTOR=3.0f",
                  (char *)"-o", c->obj, (char *)"-x", (char *)"c", c->src, NULL};
  pid_t pid;
  if (posix_spawnp(&pid, "cc", NULL, NULL, argv, environ) != 0) {
    c->failures++;
    return;
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) c->failures++;
}

static void bench_cpu_cold(ruda_bench_t *b, ruda_client_t *client) {
  cold_ctx_t c;
  memset(&c, 0, sizeof c);
  c.client = client;
  const char *tmp = getenv("TMPDIR");
  snprintf(c.src, sizeof c.src, "%s/ruda-bench-cold-%ld.c", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  snprintf(c.obj, sizeof c.obj, "%s/ruda-bench-cold-%ld.so", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  FILE *f = fopen(c.src, "w");
  if (!f) {
    ruda_bench_fail(b, "compile", "cpu_cold_compile", "cannot write the source");
    return;
  }
  size_t plen = 0;
  const char *prelude = ruda__cpu_prelude(&plen);
  fwrite(prelude, 1, plen, f);
  fputs("\n", f);
  fputs(k_text, f);
  fclose(f);
  size_t reps = ruda_bench_pick(b, 5, 3, 1);
  ruda_bench_stats_t r, base;
  ruda_bench_compare_calls(ruda_cold, cc_direct, &c, 1, reps, 1, &r, &base);
  if (c.failures) ruda_bench_fail(b, "compile", "cpu_cold_compile", "a compile failed");
  else ruda_bench_report(b, "compile", "cpu_cold_compile", "ns", r, base, "cc -O3 -march=native -shared (posix_spawn)", true);
  unlink(c.src);
  unlink(c.obj);
}

void ruda_bench_compile(ruda_bench_t *b) {
  if (ruda_bench_gpu_dispatch(b, ruda_bench_cuda_compile, ruda_bench_opencl_compile)) return;
  ruda_client_t *client = NULL;
  if (!ruda_bench_open_client(b, "compile", "cpu_warm_cache_load", &client)) return;
  bench_cpu_warm(b, client);
  bench_cpu_cold(b, client);
  ruda_client_release(client);
}
