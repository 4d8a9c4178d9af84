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
#include "test_cache.h"

/* Launches a kernel whose source is unique to `tag` (so that the first
 * compile misses) and checks its output. */
static void run_tagged(ruda_client_t *c, const char *tag) {
  run_tagged_kernel(c, RUDA_KERNEL_FORMAT_CUDA_C,
                    "extern \"C\" __global__ void cached(unsigned int *out,\n"
                    "                                    const unsigned long long *info) {\n"
                    "  out[threadIdx.x] = threadIdx.x + (unsigned int)info[0];\n"
                    "}\n",
                    tag);
}

TEST(cache_child) {
  const char *tag;
  const char *mode = cache_child_mode(&tag);
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
  ASSERT_TRUE(find_cached(dir, "cuda", ".cubin", cubin, sizeof cubin));

  /* A second process finds it on disk. */
  ASSERT_EQ(run_cache_child("hit", tag, dir), 0);

  /* A corrupt entry is skipped with a log line and recompiled. */
  corrupt_and_rerun(cubin, tag, dir);
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
  ASSERT_EQ(run_cache_child("unwritable", tag, dir), 0); /* works, with a warning on stderr */
}
