/* The on-disk CUBIN cache: a kernel compiled by one process is loaded from
 * disk by a second process (this program re-executed), and a corrupt entry
 * is skipped (recompiled) rather than failing the launch. */
#include <dirent.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cuda/cuda_internal.h"
#include "cuda_test_util.h"

static char g_self[4096];

__attribute__((constructor)) static void remember_self(void) {
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  g_self[n > 0 ? n : 0] = '\0';
}

/* A kernel whose source is unique to `tag`, so the first compile misses. */
static ruda_kernel_t *tagged_kernel(const char *tag) {
  static char src[1024];
  snprintf(src, sizeof src,
           "// cache test %s\n"
           "extern \"C\" __global__ void cached(unsigned int *out, const unsigned long long *info) {\n"
           "  out[threadIdx.x] = threadIdx.x + (unsigned int)info[0];\n"
           "}\n",
           tag);
  return cuda_kernel("cached", src, ruda_dim_new_1d(32), 0);
}

/* Launches the tagged kernel and checks its output. */
static void run_tagged(ruda_client_t *c, const char *tag) {
  ruda_kernel_t *k = tagged_kernel(tag);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 32 * 4, &h));
  uint64_t info[1] = {1000};
  ruda_kernel_args_t args = {&h, 1, NULL, 0, {info, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  uint32_t back[32];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  for (uint32_t i = 0; i < 32; i++) ASSERT_UEQ(back[i], 1000 + i);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

/* Runs this program again with only the `child` test and `env` set;
 * returns its exit status. */
static int run_child(const char *mode, const char *tag, const char *cache_dir) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RUDA_TEST_CACHE_MODE", mode, 1);
    setenv("RUDA_TEST_CACHE_TAG", tag, 1);
    setenv("RUDA_CACHE_DIR", cache_dir, 1);
    execl(g_self, g_self, "cache_child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static bool find_cubin(const char *dir, char *out, size_t cap) {
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/cuda", dir);
  DIR *d = opendir(sub);
  if (!d) return false;
  struct dirent *e;
  bool found = false;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len > 6 && strcmp(e->d_name + len - 6, ".cubin") == 0) {
      snprintf(out, cap, "%s/%s", sub, e->d_name);
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

TEST(cache_child) {
  const char *mode = getenv("RUDA_TEST_CACHE_MODE");
  const char *tag = getenv("RUDA_TEST_CACHE_TAG");
  if (!mode || !tag) SKIP("runs only as the child of disk_cache_hit_from_a_second_process");
  ruda_client_t *c = cuda_client();
  run_tagged(c, tag);
  ruda__cuda_compile_stats_t st = ruda__cuda_compile_stats();
  printf("  child(%s): disk hits %llu, compiles %llu, skips %llu\n", mode,
         (unsigned long long)st.disk_hits, (unsigned long long)st.compiles,
         (unsigned long long)st.disk_skips);
  if (strcmp(mode, "hit") == 0) {
    ASSERT_UEQ(st.disk_hits, 1);
    ASSERT_UEQ(st.compiles, 0);
  } else if (strcmp(mode, "unwritable") == 0) {
    /* The launch worked; nothing could be written or read. */
    ASSERT_UEQ(st.disk_hits, 0);
    ASSERT_UEQ(st.disk_writes, 0);
    ASSERT_UEQ(st.compiles, 1);
  } else {
    ASSERT_UEQ(st.disk_hits, 0);
    ASSERT_UEQ(st.disk_skips, 1);
    ASSERT_UEQ(st.compiles, 1);
  }
}

TEST(disk_cache_hit_from_a_second_process) {
  if (getenv("RUDA_TEST_CACHE_MODE")) SKIP("child process");
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/cache-%ld-%ld", rt_tmpdir(), (long)getpid(), (long)time(NULL));
  setenv("RUDA_CACHE_DIR", dir, 1);
  ruda_client_t *c = cuda_client();
  char tag[64];
  snprintf(tag, sizeof tag, "%ld-%ld", (long)getpid(), (long)time(NULL));
  ruda__cuda_compile_stats_t before = ruda__cuda_compile_stats();
  run_tagged(c, tag);
  ruda__cuda_compile_stats_t after = ruda__cuda_compile_stats();
  ASSERT_UEQ(after.compiles - before.compiles, 1);
  ASSERT_UEQ(after.disk_writes - before.disk_writes, 1);
  char cubin[4600];
  ASSERT_TRUE(find_cubin(dir, cubin, sizeof cubin));

  /* A second process finds it on disk. */
  ASSERT_EQ(run_child("hit", tag, dir), 0);

  /* A corrupt entry is skipped with a log line and recompiled. */
  FILE *f = fopen(cubin, "r+b");
  ASSERT_NOT_NULL(f);
  fseek(f, 64, SEEK_SET);
  fputs("garbage garbage garbage", f);
  fclose(f);
  ASSERT_EQ(run_child("corrupt", tag, dir), 0);
}

/* The cache directory is part of the settings a device reads once, so the
 * unwritable one is given to a child process. */
TEST(unwritable_cache_is_skipped) {
  if (getenv("RUDA_TEST_CACHE_MODE")) SKIP("child process");
  cuda_client(); /* skips without a GPU */
  /* A path below a regular file can never be created. */
  char file[2048];
  snprintf(file, sizeof file, "%s/not-a-dir-%ld", rt_tmpdir(), (long)getpid());
  FILE *f = fopen(file, "w");
  ASSERT_NOT_NULL(f);
  fclose(f);
  char dir[2100];
  snprintf(dir, sizeof dir, "%s/cache", file);
  char tag[64];
  snprintf(tag, sizeof tag, "unwritable-%ld-%ld", (long)getpid(), (long)time(NULL));
  ASSERT_EQ(run_child("unwritable", tag, dir), 0); /* works, with a warning on stderr */
}
