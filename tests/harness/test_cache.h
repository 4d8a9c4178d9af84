/* The on-disk kernel cache tests of the device backends (test_cuda_cache.c,
 * test_opencl_backend.c): a kernel compiled by one process is loaded from
 * disk by a second one, this program re-executed with only its
 * `cache_child` test, which reads RUDA_TEST_CACHE_MODE and
 * RUDA_TEST_CACHE_TAG. */
#ifndef RUDA_TEST_CACHE_H
#define RUDA_TEST_CACHE_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static char g_self[4096];

__attribute__((constructor)) static void remember_self(void) {
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  g_self[n > 0 ? n : 0] = '\0';
}

/* In the child process: its mode, and its tag in *tag. Elsewhere the test
 * is skipped. */
static __attribute__((unused)) const char *cache_child_mode(const char **tag) {
  const char *mode = getenv("RUDA_TEST_CACHE_MODE");
  *tag = getenv("RUDA_TEST_CACHE_TAG");
  if (!mode || !*tag) SKIP("runs only as the child of disk_cache_hit_from_a_second_process");
  return mode;
}

/* Runs this program's `cache_child` test in a child process with `mode`,
 * `tag` and the cache directory `cache_dir` (the settings are read once
 * per process); returns its exit status. */
static __attribute__((unused)) int run_cache_child(const char *mode, const char *tag,
                                                   const char *cache_dir) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RUDA_TEST_CACHE_MODE", mode, 1);
    setenv("RUDA_TEST_CACHE_TAG", tag, 1);
    setenv("RUDA_CACHE_DIR", cache_dir, 1);
    setenv("RUDA_LOG_COMPILATION", "basic", 1); /* the paths looked at, for a failure */
    execl(g_self, g_self, "cache_child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The path of the first file in `dir`/`sub` whose name ends in `suffix`. */
static __attribute__((unused)) bool find_cached(const char *dir, const char *sub_dir,
                                                const char *suffix, char *out, size_t cap) {
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/%s", dir, sub_dir);
  DIR *d = opendir(sub);
  if (!d) return false;
  struct dirent *e;
  bool found = false;
  size_t slen = strlen(suffix);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len > slen && strcmp(e->d_name + len - slen, suffix) == 0) {
      snprintf(out, cap, "%s/%s", sub, e->d_name);
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

/* Corrupts the cache entry at `path` (bytes from offset 64 overwritten),
 * then asserts that the child process in mode "corrupt" (which skips the
 * entry and compiles again) passes. */
static __attribute__((unused)) void corrupt_and_rerun(const char *path, const char *tag,
                                                      const char *cache_dir) {
  FILE *f = fopen(path, "r+b");
  ASSERT_NOT_NULL(f);
  fseek(f, 64, SEEK_SET);
  fputs("garbage garbage garbage", f);
  fclose(f);
  ASSERT_EQ(run_cache_child("corrupt", tag, cache_dir), 0);
}

/* Launches the kernel `cached` of `format`, whose source is `body` after
 * a comment naming `tag` (so that its first compile misses), on one ruda
 * of 32 units that each write out[i] = i + info[0], and checks its
 * output. */
static __attribute__((unused)) void run_tagged_kernel(ruda_client_t *c,
                                                      ruda_kernel_format_t format,
                                                      const char *body, const char *tag) {
  static char src[1024];
  snprintf(src, sizeof src, "// cache test %s\n%s", tag, body);
  ruda_kernel_t *k = test_kernel(format, "cached", src, ruda_dim_new_1d(32), 0);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 32 * 4, &h));
  uint64_t info[1] = {1000};
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  uint32_t back[32];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  for (uint32_t i = 0; i < 32; i++) ASSERT_UEQ(back[i], 1000 + i);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

#endif
