/* The Chrome trace timeline: file format, tracks, batching, threads. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "json_check.h"
#include "server/trace.h"
#include "test.h"
#include "types/device_names.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double num(const jv_t *ev, const char *key) {
  const jv_t *v = jv_get(ev, key);
  return v && v->type == JV_NUM ? v->num : -1.0;
}

/* The metadata name of a process (tid < 0) or thread. */
static const char *track_name(const jv_t *events, double pid, double tid) {
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    const char *ph = jv_str(e, "ph"), *name = jv_str(e, "name");
    if (!ph || strcmp(ph, "M") != 0 || num(e, "pid") != pid) continue;
    if (tid < 0 && strcmp(name, "process_name") == 0) return jv_str(jv_get(e, "args"), "name");
    if (tid >= 0 && strcmp(name, "thread_name") == 0 && num(e, "tid") == tid)
      return jv_str(jv_get(e, "args"), "name");
  }
  return NULL;
}

static void trace_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", rt_tmpdir(), name);
}

TEST(off_costs_nothing_and_records_nothing) {
  ruda__trace_shutdown();
  ASSERT_FALSE(ruda__trace_on());
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda__trace_slice(cpu0, 0, "kernel", "ignored", 1, 2, 0); /* must not crash */
  ruda__trace_counter(cpu0, "memory in use", 1, 1);
  ASSERT_FALSE(ruda__trace_start(NULL));
  ASSERT_FALSE(ruda__trace_start(""));
  ASSERT_FALSE(ruda__trace_start("/nonexistent-dir/for/sure/trace.json"));
  ASSERT_FALSE(ruda__trace_on());
}

TEST(slices_and_counters_land_on_device_and_stream_tracks) {
  char path[512];
  trace_path(path, sizeof path, "tracks.json");
  ASSERT_TRUE(ruda__trace_start(path));
  ASSERT_TRUE(ruda__trace_on());
  ASSERT_TRUE(ruda__trace_start("/ignored/second/path.json")); /* first wins */
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_device_id_t cuda1 = {RUDA_DEVICE_TYPE_CUDA, 1};
  uint64_t t = now_ns() + 1000000; /* 1 ms after the start */
  ruda__trace_slice(cpu0, 3, "kernel", "vector_add", t, t + 2500, 0);
  ruda__trace_slice(cuda1, 7, "copy", "write \"x\"", t + 100, t + 1100, 4096);
  ruda__trace_slice(cpu0, 4, "sync", "sync", t + 3000, t + 3001, 0);
  ruda__trace_counter(cpu0, "memory in use", t + 10, 123456);
  ruda__trace_counter(cpu0, "memory reserved", t + 10, 999999);
  ruda__trace_shutdown();
  ASSERT_FALSE(ruda__trace_on());
  ruda__trace_slice(cpu0, 3, "kernel", "after shutdown", t, t + 1, 0);

  jv_t *events;
  jv_t *root = jv_read_trace(path, &events);
  double pid_cpu = ruda__trace_pid(cpu0), pid_cuda = ruda__trace_pid(cuda1);
  ASSERT_TRUE(pid_cpu != pid_cuda);
  ASSERT_STR_EQ(track_name(events, pid_cpu, -1), "cpu:0");
  ASSERT_STR_EQ(track_name(events, pid_cuda, -1), "cuda:1");
  ASSERT_STR_EQ(track_name(events, pid_cpu, 3), "stream 3");
  ASSERT_STR_EQ(track_name(events, pid_cpu, 4), "stream 4");
  ASSERT_STR_EQ(track_name(events, pid_cuda, 7), "stream 7");

  const jv_t *k = jv_find_event(events, "X", "name", "vector_add");
  ASSERT_NOT_NULL(k);
  ASSERT_STR_EQ(jv_str(k, "cat"), "kernel");
  ASSERT_DBL_NEAR(num(k, "pid"), pid_cpu, 0);
  ASSERT_DBL_NEAR(num(k, "tid"), 3, 0);
  ASSERT_DBL_NEAR(num(k, "dur"), 2.5, 1e-9); /* microseconds */
  ASSERT_TRUE(num(k, "ts") >= 1000.0);
  ASSERT_NULL(jv_get(k, "args")); /* no bytes, no args */

  const jv_t *c = jv_find_event(events, "X", "name", "write \"x\"");
  ASSERT_NOT_NULL(c);
  ASSERT_STR_EQ(jv_str(c, "cat"), "copy");
  ASSERT_DBL_NEAR(num(c, "pid"), pid_cuda, 0);
  ASSERT_DBL_NEAR(num(c, "tid"), 7, 0);
  ASSERT_DBL_NEAR(num(jv_get(c, "args"), "bytes"), 4096, 0);
  ASSERT_DBL_NEAR(num(c, "ts") - num(k, "ts"), 0.1, 1e-9);

  const jv_t *m = jv_find_event(events, "C", "name", "memory in use");
  ASSERT_NOT_NULL(m);
  ASSERT_DBL_NEAR(num(m, "pid"), pid_cpu, 0);
  ASSERT_DBL_NEAR(num(jv_get(m, "args"), "bytes"), 123456, 0);
  ASSERT_NOT_NULL(jv_find_event(events, "C", "name", "memory reserved"));
  ASSERT_NULL(jv_find_event(events, "X", "name", "after shutdown"));
  jv_free(root);
}

#define THREADS 4
#define PER_THREAD 6000 /* 24000 slices: several full batches */
static void *emitter(void *arg) {
  uint64_t stream = (uint64_t)(uintptr_t)arg;
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  for (int i = 0; i < PER_THREAD; ++i) {
    uint64_t t = now_ns();
    ruda__trace_slice(cpu0, stream, "kernel", "busy", t, t + 10, (uint64_t)i);
  }
  return NULL;
}

TEST(many_threads_in_batches_lose_no_event) {
  char path[512];
  trace_path(path, sizeof path, "threads.json");
  ASSERT_TRUE(ruda__trace_start(path));
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i)
    ASSERT_EQ(pthread_create(&t[i], NULL, emitter, (void *)(uintptr_t)(10 + i)), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  ruda__trace_shutdown();

  jv_t *events;
  jv_t *root = jv_read_trace(path, &events);
  size_t per_stream[THREADS] = {0};
  size_t slices = 0;
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    if (strcmp(jv_str(e, "ph"), "X") != 0) continue;
    slices++;
    double tid = num(e, "tid");
    ASSERT_TRUE(tid >= 10 && tid < 10 + THREADS);
    per_stream[(int)tid - 10]++;
  }
  ASSERT_UEQ(slices, THREADS * PER_THREAD);
  for (int i = 0; i < THREADS; ++i) ASSERT_UEQ(per_stream[i], PER_THREAD);
  ASSERT_DBL_NEAR(num(jv_get(root, "otherData"), "dropped_events"), 0, 0);
  jv_free(root);
}

TEST(a_second_trace_after_shutdown_is_a_fresh_file) {
  char path[512];
  trace_path(path, sizeof path, "second.json");
  ASSERT_TRUE(ruda__trace_start(path));
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  uint64_t t = now_ns();
  ruda__trace_slice(cpu0, 0, "alloc", "pool grow", t, t + 5, 1 << 20);
  ruda__trace_shutdown();
  ruda__trace_shutdown(); /* twice is fine */
  jv_t *events;
  jv_t *root = jv_read_trace(path, &events);
  ASSERT_NOT_NULL(jv_find_event(events, "X", "name", "pool grow"));
  ASSERT_STR_EQ(track_name(events, ruda__trace_pid(cpu0), 0), "stream 0");
  jv_free(root);
}

/* A fourth backend's devices are named on the timeline by the registry's
 * name, through the one formatter (ruda_device_id_format): the test stands
 * in for the registry with a lookup that knows type 77 besides the
 * registry's names. */
static const char *with_a_fourth(uint16_t type_id) {
  return type_id == 77 ? "fourth" : ruda_device_type_name(type_id);
}

TEST(device_processes_are_named_by_the_registry) {
  /* Referring to ruda_device_type_name links the registry, which installed
   * it before main. */
  ruda__device_type_name_fn registry = ruda__device_type_names_installed();
  ASSERT_TRUE(registry == ruda_device_type_name);
  char path[512];
  trace_path(path, sizeof path, "names.json");
  ASSERT_TRUE(ruda__trace_start(path));
  ruda__device_type_names_install(with_a_fourth);
  ruda_device_id_t fourth = {77, 3}, ocl = {RUDA_DEVICE_TYPE_OPENCL, 2};
  uint64_t t = now_ns();
  ruda__trace_slice(fourth, 1, "kernel", "k4", t, t + 5, 0);
  ruda__trace_slice(ocl, 1, "kernel", "kcl", t, t + 5, 0);
  ruda__trace_shutdown();
  ruda__device_type_names_install(registry);
  jv_t *events;
  jv_t *root = jv_read_trace(path, &events);
  ASSERT_STR_EQ(track_name(events, ruda__trace_pid(fourth), -1), "fourth:3");
  ASSERT_STR_EQ(track_name(events, ruda__trace_pid(ocl), -1), "opencl:2");
  jv_free(root);
}

/* Under a launcher (mpirun sets OMPI_COMM_WORLD_RANK, others PMI_RANK...)
 * each rank writes its own file, named by %r/%p or, without %r, with
 * ".rank<r>" before the extension; its processes carry the rank in their
 * name and a pid of their own. */
TEST(ranks_of_a_job_write_their_own_files) {
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  char base[512], path[600], want[700];
  trace_path(base, sizeof base, "job.json");
  ASSERT_TRUE(ruda__trace_start(base));
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  uint64_t t = now_ns();
  ruda__trace_slice(cpu0, 1, "collective", "all_reduce", t, t + 5, 64);
  ruda__trace_shutdown();
  trace_path(want, sizeof want, "job.rank3.json");
  jv_t *events;
  jv_t *root = jv_read_trace(want, &events);
  double pid = ruda__trace_pid(cpu0) + 300000;
  ASSERT_STR_EQ(track_name(events, pid, -1), "rank 3 cpu:0");
  ASSERT_NOT_NULL(jv_find_event(events, "X", "name", "all_reduce"));
  jv_free(root);
  ASSERT_TRUE(access(base, F_OK) != 0); /* nothing at the bare name */

  /* Placeholders: %r the rank, %p the process id, %% a percent sign. */
  trace_path(path, sizeof path, "job_%r_%p_%%.json");
  ASSERT_TRUE(ruda__trace_start(path));
  ruda__trace_slice(cpu0, 1, "sync", "sync", t, t, 0);
  ruda__trace_shutdown();
  char tail[64];
  snprintf(tail, sizeof tail, "job_3_%ld_%%.json", (long)getpid());
  trace_path(want, sizeof want, tail);
  root = jv_read_trace(want, &events);
  jv_free(root);
  unsetenv("OMPI_COMM_WORLD_RANK");

  /* Outside a job: the name as given, the process named by its device. */
  trace_path(path, sizeof path, "solo_%r.json");
  ASSERT_TRUE(ruda__trace_start(path));
  ruda__trace_slice(cpu0, 1, "sync", "sync", t, t, 0);
  ruda__trace_shutdown();
  trace_path(want, sizeof want, "solo_0.json");
  root = jv_read_trace(want, &events);
  ASSERT_STR_EQ(track_name(events, ruda__trace_pid(cpu0), -1), "cpu:0");
  jv_free(root);
}
