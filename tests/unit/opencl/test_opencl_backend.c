/* The OpenCL backend through the client, on opencl:0 (PoCL in CI): build
 * errors with their log, the program caches (memory, and disk from a second
 * process), sub-buffer alignment, enqueue errors and device faults reported
 * at the next sync naming the kernel, syncs fenced by the stream's newest
 * command (nothing to wait for once it completed, a failure reported
 * once), local-memory limits checked before
 * the driver sees them, out of memory and recovery. Skips without an
 * OpenCL device. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/opencl/opencl_internal.h"
#include "ruda/ruda.h"
#include "test.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

TEST(opencl_backend_not_built) {
  SKIP_UNAVAILABLE("opencl", "ruda was built without the OpenCL headers");
}

#else

#include "backends/opencl/opencl_copy.h"
#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_stream.h"
#include "opencl_test_util.h"
#include "test_cache.h"

/* A client on a stream of its own (released by the caller). */
static ruda_client_t *fresh(void) {
  ruda_client_t *s = NULL;
  ASSERT_OK(ruda_client_on_stream(client(), ruda_stream_id_next(), &s));
  return s;
}

/* Fills the first info[0] u32 of its buffer with info[1] (launched by
 * ocl_launch_over). */
static const char fill_src[] =
    "__kernel void fill(__global uint *out, __global const ulong *info) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i < info[0]) out[i] = (uint)info[1];\n"
    "}\n";

/* A kernel launched on a client of its own with one new buffer. */
typedef struct launched {
  ruda_client_t *c;
  ruda_kernel_t *k;
  ruda_handle_t h;
} launched_t;

/* Makes kernel `name` of OpenCL C `src` (`units` units per ruda) and
 * launches it on one ruda of `c` (the fixture's from now on) with one new
 * 64-byte buffer; returns the sync's status. */
static ruda_status_t launch_new(launched_t *l, ruda_client_t *c, const char *name,
                                const char *src, uint32_t units) {
  l->c = c;
  l->k = ocl_kernel(name, src, ruda_dim_new_1d(units), 0);
  ASSERT_OK(ruda_client_empty(c, 64, &l->h));
  ASSERT_OK(ruda_client_launch(c, l->k, ruda_count_static(1, 1, 1),
                               &(ruda_kernel_args_t){.buffers = &l->h, .num_buffers = 1}));
  return ruda_client_sync(c);
}

/* Releases `h`, `k` and `c`. */
static void release_all(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *h) {
  ruda_handle_release(h);
  ruda_kernel_release(k);
  ruda_client_release(c);
}

/* Checks that the stream is healthy again after the error, then releases
 * the fixture. */
static void release_healthy(launched_t *l) {
  ASSERT_OK(ruda_client_sync(l->c));
  release_all(l->c, l->k, &l->h);
}

/* ---- Build errors ---- */

TEST(build_error_reaches_the_caller_with_log_and_source) {
  launched_t l;
  ruda_status_t s =
      launch_new(&l, fresh(), "broken_kernel",
                 "__kernel void broken_kernel(__global uint *o, __global const ulong *info) {\n"
                 "  o[0] = no_such_identifier_42;\n"
                 "}\n",
                 1);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_LAUNCH_COMPILATION));
  ruda_status_t ce = ocl_vendor_cause(s, RUDA_ERR_COMPILATION_GENERIC, "clBuildProgram",
                                      "CL_BUILD_PROGRAM_FAILURE");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "broken_kernel");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "[Compilation Error]");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "[Source]");
  ASSERT_STR_CONTAINS(ruda_status_reason(ce), "o[0] = no_such_identifier_42;");
  ruda_status_free(s);
  /* The stream is healthy again. */
  release_healthy(&l);
}

TEST(kernel_without_opencl_code_is_unsupported) {
  ruda_client_t *c = fresh();
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C,
                                                  "extern \"C\" __global__ void cuda_only() {}");
  ruda_kernel_desc_t d = test_kernel_desc("cuda_only", ruda_dim_new_1d(1), &code);
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL));
  ruda_status_t s = ruda_client_flush(c);
  ruda_status_t u = ruda_status_find(s, RUDA_ERR_COMPILATION_NO_CODE);
  ASSERT_NOT_NULL(u);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "cuda_only");
  ruda_status_free(s);
  ruda_kernel_release(k);
  ruda_client_release(c);
}

TEST(wrong_parameter_list_is_explained) {
  launched_t l;
  /* Two buffers declared, one passed. */
  ruda_status_t s = launch_new(&l, fresh(), "two_buffers",
                               "__kernel void two_buffers(__global uint *a, __global uint *b,\n"
                               "                          __global const ulong *info) {}\n",
                               1);
  ruda_status_t u = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_NOT_NULL(u);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "takes 3 parameters");
  ruda_status_free(s);
  release_healthy(&l);
}

/* ---- Program caches ---- */

/* Launches a kernel whose source is unique to `tag` (so that its first
 * build misses) and checks its output. */
static void run_tagged(ruda_client_t *c, const char *tag) {
  run_tagged_kernel(c, RUDA_KERNEL_FORMAT_OPENCL_C,
                    "__kernel void cached(__global uint *out, __global const ulong *info) {\n"
                    "  out[get_global_id(0)] = (uint)get_global_id(0) + (uint)info[0];\n"
                    "}\n",
                    tag);
}

/* Runs in a child process with its own cache directory (the settings are
 * read once per process). */
TEST(cache_child) {
  const char *tag;
  const char *mode = cache_child_mode(&tag);
  ruda_client_t *c = client();
  run_tagged(c, tag);
  ruda__opencl_compile_stats_t st = ruda__opencl_compile_stats();
  printf("  child(%s) on %s: disk hits %llu, builds %llu, writes %llu, skips %llu\n", mode,
         ruda_client_properties(c)->name,
         (unsigned long long)st.disk_hits, (unsigned long long)st.builds,
         (unsigned long long)st.disk_writes, (unsigned long long)st.disk_skips);
  if (strcmp(mode, "first") == 0) {
    ASSERT_UEQ(st.disk_hits, 0);
    ASSERT_UEQ(st.builds, 1);
    ASSERT_UEQ(st.disk_writes, 1);
    /* The same kernel again: from memory. */
    run_tagged(c, tag);
    ruda__opencl_compile_stats_t again = ruda__opencl_compile_stats();
    ASSERT_UEQ(again.builds, 1);
    ASSERT_UGE(again.memory_hits, st.memory_hits + 1);
  } else if (strcmp(mode, "hit") == 0) {
    ASSERT_UEQ(st.disk_hits, 1);
    ASSERT_UEQ(st.builds, 0);
  } else {
    ASSERT_UEQ(st.disk_hits, 0);
    ASSERT_UEQ(st.disk_skips, 1);
    ASSERT_UEQ(st.builds, 1);
  }
}

TEST(disk_cache_hit_from_a_second_process) {
  if (getenv("RUDA_TEST_CACHE_MODE")) SKIP("child process");
  client(); /* skips without a device */
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/cache-%ld-%ld", rt_tmpdir(), (long)getpid(), (long)time(NULL));
  char tag[64];
  snprintf(tag, sizeof tag, "%ld-%ld", (long)getpid(), (long)time(NULL));
  /* One process builds and writes the binary... */
  ASSERT_EQ(run_cache_child("first", tag, dir), 0);
  char bin[4600];
  ASSERT_TRUE(find_cached(dir, "opencl", ".clbin", bin, sizeof bin));
  /* ...a second one finds it on disk. */
  ASSERT_EQ(run_cache_child("hit", tag, dir), 0);
  /* A corrupt entry is skipped with a warning and rebuilt. */
  corrupt_and_rerun(bin, tag, dir);
}

/* Mode `m` of `path` (its permission bits; ~0u when it cannot be read). */
static unsigned mode_of(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 0777) : ~0u;
}

/* The disk cache's policy (server/binary_cache.h): the folder 0700, the
 * files 0600; a corrupt entry, or one another user owns, is refused, the
 * kernel still runs (built again), and the entry is replaced by a good
 * one that the next process loads. */
TEST(disk_cache_is_private_and_refuses_corrupt_or_foreign_entries) {
  if (getenv("RUDA_TEST_CACHE_MODE")) SKIP("child process");
  client(); /* skips without a device */
  char dir[2048], sub[2100];
  snprintf(dir, sizeof dir, "%s/private-%ld-%ld", rt_tmpdir(), (long)getpid(), (long)time(NULL));
  snprintf(sub, sizeof sub, "%s/opencl", dir);
  char tag[64];
  snprintf(tag, sizeof tag, "private-%ld-%ld", (long)getpid(), (long)time(NULL));
  ASSERT_EQ(run_cache_child("first", tag, dir), 0);
  char bin[4600];
  ASSERT_TRUE(find_cached(dir, "opencl", ".clbin", bin, sizeof bin));
  ASSERT_UEQ(mode_of(sub), 0700);
  ASSERT_UEQ(mode_of(bin), 0600);
  /* A corrupt entry: refused (the child asserts one skip and one build,
   * and its kernel's output), then replaced: the next process loads it. */
  corrupt_and_rerun(bin, tag, dir);
  ASSERT_UEQ(mode_of(bin), 0600);
  ASSERT_EQ(run_cache_child("hit", tag, dir), 0);
  /* An entry others may write, and one another user owns: refused and
   * replaced the same way. */
  ASSERT_EQ(chmod(bin, 0666), 0);
  ASSERT_EQ(run_cache_child("corrupt", tag, dir), 0);
  ASSERT_UEQ(mode_of(bin), 0600);
  if (chown(bin, 65534, 65534) != 0) {
    printf("  (not root: the entry of another user is not tried)\n");
  } else {
    ASSERT_EQ(run_cache_child("corrupt", tag, dir), 0);
    struct stat st;
    ASSERT_EQ(stat(bin, &st), 0);
    ASSERT_UEQ(st.st_uid, geteuid());
  }
  ASSERT_EQ(run_cache_child("hit", tag, dir), 0);
  /* A folder of the user's that others may enter (an older ruda made them
   * 0755) is narrowed to 0700. */
  ASSERT_EQ(chmod(sub, 0755), 0);
  ASSERT_EQ(run_cache_child("hit", tag, dir), 0);
  ASSERT_UEQ(mode_of(sub), 0700);
}

/* ---- Sub-buffers ---- */

TEST(kernel_views_at_aligned_offsets_are_sub_buffers) {
  ruda_client_t *c = fresh();
  uint64_t align = ruda_client_properties(c)->memory.alignment;
  ruda_kernel_t *k = ocl_kernel("fill", fill_src, ruda_dim_new_1d(64), 0);
  enum { N = 4096 };
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, N * 4, &h));
  ASSERT_OK(ocl_launch_over(c, k, &h, N, 1));
  /* A view starting one alignment unit in: the kernel sees index 0 there. */
  ruda_handle_t mid = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_start(&mid, align));
  ASSERT_OK(ruda_handle_offset_end(&mid, align)); /* ends one unit early */
  uint64_t n_mid = (N * 4 - 2 * align) / 4;
  ASSERT_OK(ocl_launch_over(c, k, &mid, n_mid, 2));
  /* A view of the last alignment unit exactly. */
  ruda_handle_t tail = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_start(&tail, N * 4 - align));
  ASSERT_OK(ocl_launch_over(c, k, &tail, align / 4, 3));
  /* The same view again (a cached sub-buffer). */
  ASSERT_OK(ocl_launch_over(c, k, &tail, align / 4, 4));
  uint32_t back[N];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  uint64_t a = align / 4;
  for (uint64_t i = 0; i < N; i++) {
    uint32_t want = i < a ? 1 : i < N - a ? 2 : 4;
    if (back[i] != want) ASSERT_UEQ(back[i], want);
  }
  ruda_handle_release(&mid);
  ruda_handle_release(&tail);
  release_all(c, k, &h);
}

TEST(pooled_slices_are_aligned_for_kernels) {
  ruda_client_t *c = fresh();
  ruda_kernel_t *k = ocl_kernel("fill", fill_src, ruda_dim_new_1d(64), 0);
  /* Odd sizes carved from the same page: each must start at an offset a
   * sub-buffer accepts. */
  enum { COUNT = 9 };
  ruda_handle_t hs[COUNT];
  for (uint32_t i = 0; i < COUNT; i++) {
    ASSERT_OK(ruda_client_empty(c, 4 * (37 + 11 * i), &hs[i]));
    ASSERT_OK(ocl_launch_over(c, k, &hs[i], 37 + 11 * i, 100 + i));
  }
  for (uint32_t i = 0; i < COUNT; i++) {
    uint32_t back[37 + 11 * COUNT];
    ASSERT_OK(ruda_client_read(c, &hs[i], back, 4 * (37 + 11 * i)));
    for (uint32_t j = 0; j < 37 + 11 * i; j++) ASSERT_UEQ(back[j], 100 + i);
    ruda_handle_release(&hs[i]);
  }
  ruda_kernel_release(k);
  ruda_client_release(c);
}

TEST(unaligned_kernel_view_is_an_error_and_copies_still_work) {
  ruda_client_t *c = fresh();
  if (ruda_client_properties(c)->memory.alignment <= 4) SKIP("every 4-byte offset is aligned here");
  ruda_kernel_t *k = ocl_kernel("fill", fill_src, ruda_dim_new_1d(64), 0);
  uint32_t src[256];
  for (int i = 0; i < 256; i++) src[i] = (uint32_t)i;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, src, sizeof src, &h));
  ruda_handle_t odd = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_start(&odd, 4));
  ASSERT_OK(ocl_launch_over(c, k, &odd, 10, 9));
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ruda_status_t u = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_NOT_NULL(u);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "base-address alignment");
  ruda_status_free(s);
  /* Copies take any offset; the kernel wrote nothing. */
  uint32_t back[255];
  ASSERT_OK(ruda_client_read(c, &odd, back, sizeof back));
  for (int i = 0; i < 255; i++) ASSERT_UEQ(back[i], (uint32_t)i + 1);
  uint32_t w[3] = {7, 8, 9};
  ruda_handle_t odd2 = ruda_handle_clone(&odd);
  ASSERT_OK(ruda_handle_offset_end(&odd2, sizeof back - sizeof w));
  ASSERT_OK(ruda_client_write(c, &odd2, w, sizeof w));
  uint32_t all[256];
  ASSERT_OK(ruda_client_read(c, &h, all, sizeof all));
  ASSERT_UEQ(all[0], 0);
  ASSERT_UEQ(all[1], 7);
  ASSERT_UEQ(all[3], 9);
  ASSERT_UEQ(all[4], 4);
  ruda_handle_release(&odd2);
  ruda_handle_release(&odd);
  release_all(c, k, &h);
}

/* ---- Errors on the stream ---- */

TEST(enqueue_error_reported_at_the_next_sync_naming_the_kernel) {
  ruda_client_t *c = fresh();
  ruda_client_t *other = fresh();
  /* The kernel demands work-groups of 8; ruda launches 16. The driver
   * refuses the enqueue (CL_INVALID_WORK_GROUP_SIZE). */
  ruda_kernel_t *k = ocl_kernel(
      "needs_eight",
      "__kernel __attribute__((reqd_work_group_size(8, 1, 1)))\n"
      "void needs_eight(__global uint *o, __global const ulong *info) { o[get_global_id(0)] = 1; }\n",
      ruda_dim_new_1d(16), 0);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 64 * 4, &h));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(2, 1, 1),
                               &(ruda_kernel_args_t){.buffers = &h, .num_buffers = 1}));
  ASSERT_OK(ruda_client_sync(other)); /* another stream is not affected */
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_UNHEALTHY);
  char text[2048];
  ruda_status_format(s, text, sizeof text);
  ASSERT_STR_CONTAINS(text, "needs_eight");
  ocl_vendor_cause(s, RUDA_ERR_LAUNCH_UNKNOWN, "clEnqueueNDRangeKernel",
                   "CL_INVALID_WORK_GROUP_SIZE");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  ruda_client_release(other);
  ruda_client_release(c);
}

TEST(device_fault_is_reported_by_the_wait_naming_the_kernels) {
  const ruda__opencl_api_t *api = NULL;
  const ruda__opencl_device_t *dev = ocl_first_device(&api);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
  cl_int r = 0;
  cl_context ctx = api->clCreateContext(props, 1, &dev->device, NULL, NULL, &r);
  ASSERT_EQ(r, CL_SUCCESS);
  /* A command that fails on the device: a user event set to an error
   * (what a driver does to a kernel that faults). */
  cl_event ev = api->clCreateUserEvent(ctx, &r);
  ASSERT_EQ(r, CL_SUCCESS);
  ASSERT_EQ(api->clSetUserEventStatus(ev, CL_OUT_OF_RESOURCES), CL_SUCCESS);
  ruda__recent_kernels_t rk;
  memset(&rk, 0, sizeof rk);
  snprintf(rk.names[0], sizeof rk.names[0], "%s", "faulty_kernel");
  rk.n = 1;
  rk.total = 3;
  ruda_status_t s = ruda__ocl_event_error(api, ev, &rk, NULL);
  ruda_status_t u =
      ocl_vendor_cause(s, RUDA_ERR_LAUNCH_UNKNOWN, NULL, "CL_OUT_OF_RESOURCES");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "faulty_kernel (and 2 more)");
  ruda_status_free(s);
  api->clReleaseEvent(ev);
  api->clReleaseContext(ctx);
}

/* ---- Fences ---- */

/* A server of opencl:0 driven on this thread, and one of its streams. */
typedef struct fence_rig {
  ruda__server_t *srv;
  ocl_server_t *s;
  ruda_stream_id_t id;
  ocl_stream_t *st;
} fence_rig_t;

static void fence_rig_open(fence_rig_t *g) {
  (void)client(); /* skips without a device */
  const ruda__backend_t *be = ruda__backend_for(RUDA_DEVICE_TYPE_OPENCL);
  ASSERT_NOT_NULL(be);
  ASSERT_OK(be->create_server(0, &g->srv));
  g->s = (ocl_server_t *)g->srv;
  g->id = ruda_stream_id_next();
  g->st = ruda__stream_pipe_get(&g->s->pipeline, g->id);
  ASSERT_NOT_NULL(g->st);
}

/* A command of the stream that completes when `*gate` does (a marker on
 * a user event), noted as its newest. */
static void gated_command(fence_rig_t *g, cl_event *gate) {
  const ruda__opencl_api_t *api = g->s->api;
  cl_int r = 0;
  *gate = api->clCreateUserEvent(g->s->ctx, &r);
  ASSERT_EQ(r, CL_SUCCESS);
  cl_event ev = NULL;
  ASSERT_EQ(api->clEnqueueMarkerWithWaitList(g->st->queue, 1, gate, &ev), CL_SUCCESS);
  g->st->dirty = true;
  ruda__ocl_note_command(g->s, g->st, ev);
}

static ruda__future_t *fence(fence_rig_t *g) {
  ruda__future_t *f = NULL;
  ASSERT_OK(g->srv->vt->sync(g->srv, g->id, &f));
  return f;
}

TEST(sync_waits_on_the_newest_command_and_answers_at_once_with_nothing_in_flight) {
  fence_rig_t g;
  fence_rig_open(&g);
  const ruda__opencl_api_t *api = g.s->api;
  ASSERT_NULL(fence(&g)); /* nothing ever enqueued */
  cl_event gate = NULL;
  gated_command(&g, &gate);
  ruda__future_t *f = fence(&g);
  ASSERT_NOT_NULL(f);
  ASSERT_FALSE(f->vt->poll(f));
  ruda__future_t *f2 = fence(&g); /* still in flight: waits too */
  ASSERT_NOT_NULL(f2);
  ASSERT_EQ(api->clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
  ASSERT_OK(f->vt->wait(f));
  f->vt->destroy(f);
  ASSERT_OK(f2->vt->wait(f2));
  f2->vt->destroy(f2);
  ASSERT_NULL(fence(&g)); /* completed: nothing to wait for */
  ASSERT_NULL(g.st->last);
  api->clReleaseEvent(gate);
  g.srv->vt->destroy(g.srv);
}

TEST(a_failed_command_is_reported_by_one_fence) {
  fence_rig_t g;
  fence_rig_open(&g);
  const ruda__opencl_api_t *api = g.s->api;
  cl_event gate = NULL;
  gated_command(&g, &gate);
  ASSERT_EQ(api->clSetUserEventStatus(gate, CL_OUT_OF_RESOURCES), CL_SUCCESS);
  ruda__future_t *f = fence(&g);
  ASSERT_NOT_NULL(f);
  ruda_status_t e = f->vt->wait(f);
  f->vt->destroy(f);
  ASSERT_NOT_NULL(e);
  ASSERT_NOT_NULL(ruda_status_find(e, RUDA_ERR_LAUNCH_UNKNOWN));
  ruda_status_free(e);
  ASSERT_NULL(fence(&g)); /* reported already */
  api->clReleaseEvent(gate);
  g.srv->vt->destroy(g.srv);
}

/* Where kernels go without an event (GPUs: kernel_events is false), a
 * sync after one is fenced by finishing the queue on the waiting thread,
 * with no marker; once that finished, a sync answers at once. A poll of
 * such a future asks with a marker. */
TEST(kernels_without_events_are_fenced_by_finishing_the_queue) {
  fence_rig_t g;
  fence_rig_open(&g);
  g.s->kernel_events = false;
  ruda_kernel_t *k =
      ocl_kernel("empty", "__kernel void empty(__global const ulong *info) {}\n",
                 ruda_dim_new_1d(1), 0);
  ruda__count_t count = {.fixed = {1, 1, 1}};
  ruda__launch_args_t args;
  memset(&args, 0, sizeof args);
  g.srv->vt->launch(g.srv, k, &count, &args, RUDA_EXEC_CHECKED, g.id);
  ASSERT_NULL(g.st->last);
  ASSERT_TRUE(g.st->last_unknown);
  ruda__future_t *f = fence(&g);
  ASSERT_NOT_NULL(f);
  ASSERT_NULL(g.st->last); /* no marker */
  ASSERT_TRUE(g.st->last_unknown);
  ASSERT_OK(f->vt->wait(f));
  ASSERT_TRUE(f->vt->poll(f));
  f->vt->destroy(f);
  ASSERT_NULL(fence(&g)); /* the finish covered the kernel */
  ASSERT_FALSE(g.st->last_unknown);

  /* Polled before it is waited: true once the kernel has run. */
  g.srv->vt->launch(g.srv, k, &count, &args, RUDA_EXEC_CHECKED, g.id);
  ASSERT_TRUE(g.st->last_unknown);
  f = fence(&g);
  ASSERT_NOT_NULL(f);
  int polls = 0;
  while (!f->vt->poll(f) && polls < 1000000) polls++;
  ASSERT_TRUE(f->vt->poll(f));
  ASSERT_OK(f->vt->wait(f));
  f->vt->destroy(f);
  ASSERT_NULL(fence(&g));

  /* A future may outlive the stream's server. */
  g.srv->vt->launch(g.srv, k, &count, &args, RUDA_EXEC_CHECKED, g.id);
  f = fence(&g);
  ASSERT_NOT_NULL(f);
  ruda_kernel_release(k);
  g.srv->vt->destroy(g.srv);
  ASSERT_OK(f->vt->wait(f));
  f->vt->destroy(f);
}

TEST(local_memory_beyond_the_device_is_a_limit_error_not_a_crash) {
  ruda_client_t *c = fresh();
  const ruda_device_properties_t *p = ruda_client_properties(c);
  uint64_t words = p->hardware.max_shared_memory_size / 4 + 1024;
  char src[512];
  snprintf(src, sizeof src,
           "__kernel void big_local(__global uint *o, __global const ulong *info) {\n"
           "  __local uint tile[%llu];\n"
           "  tile[get_local_id(0)] = 1u;\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  o[get_global_id(0)] = tile[0];\n"
           "}\n",
           (unsigned long long)words);
  launched_t l;
  ruda_status_t s = launch_new(&l, c, "big_local", src, 4);
  ASSERT_NOT_NULL(s);
  /* Some compilers refuse the program; those that build it are stopped
   * before the launch. */
  ruda_status_t lim = ruda_status_find(s, RUDA_ERR_RESOURCE_SHARED_MEMORY);
  if (lim == NULL) {
    ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_LAUNCH_COMPILATION));
  } else {
    ASSERT_UGE(ruda_status_requested(lim), words * 4);
    ASSERT_UEQ(ruda_status_max(lim), p->hardware.max_shared_memory_size);
  }
  ruda_status_free(s);
  release_healthy(&l);
}

TEST(dynamic_local_memory_is_the_last_parameter) {
  ruda_client_t *c = fresh();
  enum { UNITS = 32 };
  ruda_kernel_t *k = ocl_kernel(
      "reverse",
      "__kernel void reverse(__global uint *io, __global const ulong *info, __local uint *tmp) {\n"
      "  uint u = get_local_id(0), n = get_local_size(0);\n"
      "  tmp[u] = io[get_global_id(0)];\n"
      "  barrier(CLK_LOCAL_MEM_FENCE);\n"
      "  io[get_global_id(0)] = tmp[n - 1 - u] + (uint)info[0];\n"
      "}\n",
      ruda_dim_new_1d(UNITS), UNITS * 4);
  uint32_t v[UNITS * 2];
  for (uint32_t i = 0; i < UNITS * 2; i++) v[i] = i;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  uint64_t info[1] = {1000};
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(2, 1, 1), &args));
  uint32_t back[UNITS * 2];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  for (uint32_t g = 0; g < 2; g++)
    for (uint32_t u = 0; u < UNITS; u++)
      ASSERT_UEQ(back[g * UNITS + u], g * UNITS + (UNITS - 1 - u) + 1000);
  release_all(c, k, &h);
}

TEST(info_words_change_between_launches) {
  ruda_client_t *c = fresh();
  ruda_kernel_t *k = ocl_kernel("fill", fill_src, ruda_dim_new_1d(64), 0);
  ruda_handle_t hs[40];
  /* More launches than the ring of host copies, alternating repeats. */
  for (uint32_t i = 0; i < 40; i++) {
    ASSERT_OK(ruda_client_empty(c, 64 * 4, &hs[i]));
    ASSERT_OK(ocl_launch_over(c, k, &hs[i], 64, i / 2));
  }
  for (uint32_t i = 0; i < 40; i++) {
    uint32_t back[64];
    ASSERT_OK(ruda_client_read(c, &hs[i], back, sizeof back));
    ASSERT_UEQ(back[0], i / 2);
    ASSERT_UEQ(back[63], i / 2);
    ruda_handle_release(&hs[i]);
  }
  ruda_kernel_release(k);
  ruda_client_release(c);
}

/* ---- Memory ---- */

TEST(allocation_larger_than_the_device_is_out_of_memory_then_the_next_works) {
  ruda_client_t *c = fresh();
  const ruda_device_properties_t *p = ruda_client_properties(c);
  uint64_t huge = p->hardware.total_memory + (1ull << 20);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, huge, &h));
  ruda_status_t s = ruda_client_flush(c);
  ASSERT_NOT_NULL(s);
  ruda_status_t oom = ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_NOT_NULL(oom);
  ASSERT_UEQ(ruda_status_size_field(oom), huge);
  ruda_status_free(s);
  ruda_handle_release(&h);
  /* Larger than one allocation may be, smaller than the device: too big
   * for any pool (nothing is touched). */
  if (p->memory.max_page_size + (1ull << 20) < p->hardware.total_memory) {
    ASSERT_OK(ruda_client_empty(c, p->memory.max_page_size + (1ull << 20), &h));
    s = ruda_client_flush(c);
    ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG));
    ruda_status_free(s);
    ruda_handle_release(&h);
  }
  uint32_t v[100];
  for (int i = 0; i < 100; i++) v[i] = (uint32_t)i * 7u;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  test_expect_read(c, &h, v, sizeof v);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

TEST(pinned_staging_round_trip_and_pitched_copies) {
  ruda_client_t *c = fresh();
  uint64_t sizes[1] = {6 * 16 * 4};
  ruda_bytes_t b;
  ASSERT_OK(ruda_client_staging(c, sizes, 1, &b));
  ASSERT_EQ(b.property, RUDA_BYTES_PINNED);
  uint32_t *w = b.data;
  for (int i = 0; i < 6 * 16; i++) w[i] = 0xAB000000u + (uint32_t)i;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer_from_bytes(c, &b, &h));
  /* A [6, 5] u32 view with rows 16 elements apart. */
  ruda_shape_t shape = ruda_shape_2d(6, 5);
  ruda_strides_t strides = {2, {16, 1}};
  uint32_t tile[30];
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 4, tile));
  for (int r = 0; r < 6; r++)
    for (int k = 0; k < 5; k++) ASSERT_UEQ(tile[r * 5 + k], 0xAB000000u + (uint32_t)(r * 16 + k));
  for (int i = 0; i < 30; i++) tile[i] = (uint32_t)i;
  ASSERT_OK(ruda_client_write_tensor(c, &h, &shape, &strides, 4, tile));
  uint32_t all[96];
  ASSERT_OK(ruda_client_read(c, &h, all, sizeof all));
  ASSERT_UEQ(all[16 * 2 + 3], 13);
  ASSERT_UEQ(all[16 * 2 + 5], 0xAB000000u + 37); /* between rows: untouched */
  ruda_handle_release(&h);
  ruda_client_release(c);
}

/* Transfers of 1 MiB and more from and to pageable memory are blocking,
 * into pinned staging they are not: both land, pitched ones too, and a
 * kernel launched before a large read is done when the read returns. */
TEST(large_pageable_and_pinned_transfers_round_trip) {
  ruda_client_t *c = fresh();
  const size_t n = (3u << 20) / 4 + 5; /* over 3 MiB of u32 */
  uint32_t *src = malloc(n * 4), *back = malloc(n * 4);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(back);
  for (size_t i = 0; i < n; i++) src[i] = (uint32_t)(i * 2654435761u);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, src, n * 4, &h));
  memset(back, 0, n * 4);
  ASSERT_OK(ruda_client_read(c, &h, back, n * 4));
  ASSERT_TRUE(memcmp(src, back, n * 4) == 0);
  /* A kernel, then a large read of what it wrote. */
  ruda_kernel_t *k = ocl_kernel("fill", fill_src, ruda_dim_new_1d(64), 0);
  ASSERT_OK(ocl_launch_over(c, k, &h, n, 7u));
  ASSERT_OK(ruda_client_read(c, &h, back, n * 4));
  ASSERT_UEQ(back[0], 7u);
  ASSERT_UEQ(back[n - 1], 7u);
  /* Into pinned staging (non-blocking). */
  uint64_t sizes[1] = {n * 4};
  ruda_bytes_t st;
  ASSERT_OK(ruda_client_staging(c, sizes, 1, &st));
  ASSERT_OK(ruda_client_write(c, &h, src, n * 4));
  ASSERT_OK(ruda_client_read(c, &h, st.data, n * 4));
  ASSERT_TRUE(memcmp(src, st.data, n * 4) == 0);
  ruda_bytes_release(&st);
  /* A pitched [600, 600] u32 view with rows 1024 elements apart (1.4 MiB
   * packed): rows land, the gaps between them stay. */
  ruda_shape_t shape = ruda_shape_2d(600, 600);
  ruda_strides_t strides = {2, {1024, 1}};
  ASSERT_OK(ruda_client_write_tensor(c, &h, &shape, &strides, 4, src));
  uint32_t *tile = malloc(600 * 600 * 4);
  ASSERT_NOT_NULL(tile);
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 4, tile));
  ASSERT_TRUE(memcmp(tile, src, 600 * 600 * 4) == 0);
  ASSERT_OK(ruda_client_read(c, &h, back, n * 4));
  ASSERT_UEQ(back[1024 + 599], src[600 + 599]);
  ASSERT_UEQ(back[1024 + 600], src[1024 + 600]); /* between rows: the earlier write */
  /* Below 8 MiB, and on PoCL at any size, nothing is staged by default. */
  ASSERT_UEQ(ruda__ocl_staged_writes(), 0);
  free(tile);
  free(src);
  free(back);
  ruda_kernel_release(k);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
