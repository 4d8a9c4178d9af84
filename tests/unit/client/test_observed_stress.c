/* Everything observed at once: profiling at "full", every log channel at
 * "full" and the timeline trace on, while several threads drive several
 * streams each (launches, reads, asynchronous reads, exclusive sections,
 * profiles, cross-stream reads). Observing must not change results: every
 * value read back is checked, every launch is in the trace exactly once,
 * on its own stream's track, and the logs and the profiling summary name
 * the kernel. Its own program: the configuration is read once per
 * process. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../tools/json_check.h"
#include "ruda/ruda.h"
#include "server/trace.h"
#include "test.h"
#include "thread_checks.h"

enum { THREADS = 4, STREAMS = 3, ROUNDS = 12, WORDS = 256 };

static ruda_kernel_t *g_scale_add;
static atomic_uint g_launches;
static char g_dir[512];

/* v[i] = v[i] * 2 + info[0] */
static void scale_add(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *v = k->buffers[0];
  for (uint32_t i = 0; i < WORDS; i++) v[i] = v[i] * 2 + (uint32_t)k->info[0];
}

typedef struct job {
  ruda_client_t *c;
  ruda_handle_t *h;
  uint32_t add;
} job_t;

static ruda_status_t launch(ruda_client_t *c, ruda_handle_t *h, uint32_t add) {
  uint64_t info[1] = {add};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {.data = info, .len = 1}};
  ruda_status_t s = ruda_client_launch(c, g_scale_add, ruda_count_static(1, 1, 1), &args);
  if (!s) atomic_fetch_add(&g_launches, 1);
  return s;
}

static ruda_status_t launch_in(ruda_client_t *c, void *arg) {
  job_t *j = arg;
  return launch(c, j->h, j->add);
}

static void expect_values(const uint32_t *got, const uint32_t *want) {
  for (uint32_t i = 0; i < WORDS; i++) {
    if (got[i] != want[i]) {
      fprintf(stderr, "word %u: %u, expected %u\n", i, got[i], want[i]);
      atomic_fetch_add(&g_bad, 1);
      return;
    }
  }
}

static void model(uint32_t *v, uint32_t add) {
  for (uint32_t i = 0; i < WORDS; i++) v[i] = v[i] * 2 + add;
}

typedef struct worker {
  int index;
  ruda_client_t *streams[STREAMS]; /* [0]: the thread's own stream */
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  uint32_t want[WORDS], got[WORDS];
  for (uint32_t round = 0; round < ROUNDS; round++) {
    for (int s = 0; s < STREAMS; s++) {
      ruda_client_t *c = w->streams[s];
      ruda_client_t *other = w->streams[(s + 1) % STREAMS];
      for (uint32_t i = 0; i < WORDS; i++) want[i] = round * 7919u + (uint32_t)w->index * 31u + i;
      ruda_handle_t h;
      if (!ok(ruda_client_create_buffer(c, want, sizeof want, &h))) continue;
      /* A launch, then one inside a profile and one inside an exclusive
       * section, then reads from this stream and from another one. */
      if (ok(launch(c, &h, round))) model(want, round);
      job_t j = {c, &h, 3};
      ruda_profile_duration_t d;
      if (ok(ruda_client_profile(c, "stress", launch_in, &j, &d))) {
        model(want, 3);
        EXPECT(d.end_ns >= d.start_ns);
      }
      j.add = 5;
      if (ok(ruda_client_exclusive(c, launch_in, &j))) model(want, 5);
      memset(got, 0, sizeof got);
      if (ok(ruda_client_read(c, &h, got, sizeof got))) expect_values(got, want);
      memset(got, 0, sizeof got);
      ruda_future_t *f = NULL;
      if (ok(ruda_client_read_async(other, &h, got, sizeof got, &f)) && ok(ruda_future_wait(f)))
        expect_values(got, want);
      ruda_memory_usage_t u;
      if (ok(ruda_client_memory_usage(c, &u))) EXPECT(u.bytes_in_use >= sizeof want);
      ruda_handle_release(&h);
      ok(ruda_client_sync(c));
    }
  }
  return NULL;
}

static void path_of(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

TEST(profiling_tracing_and_logging_do_not_change_results) {
  snprintf(g_dir, sizeof g_dir, "%s", rt_tmpdir());
  char trace[600], prof[600], mem[600], stream[600], comp[600], v[700];
  path_of(trace, sizeof trace, "trace.json");
  path_of(prof, sizeof prof, "profiling.log");
  path_of(mem, sizeof mem, "memory.log");
  path_of(stream, sizeof stream, "streaming.log");
  path_of(comp, sizeof comp, "compilation.log");
  setenv("RUDA_TRACE", trace, 1);
  snprintf(v, sizeof v, "full:%s", prof);
  setenv("RUDA_LOG_PROFILING", v, 1);
  snprintf(v, sizeof v, "full:%s", mem);
  setenv("RUDA_LOG_MEMORY", v, 1);
  snprintf(v, sizeof v, "full:%s", stream);
  setenv("RUDA_LOG_STREAMING", v, 1);
  snprintf(v, sizeof v, "full:%s", comp);
  setenv("RUDA_LOG_COMPILATION", v, 1);
  ASSERT_EQ(ruda_config_get()->profiling.logger.level, RUDA_LOG_LEVEL_FULL);

  ruda_kernel_code_t code = ruda_kernel_code_cpu(scale_add);
  ruda_kernel_desc_t kd = {.name = "scale_add", .ruda_dim = {1, 1, 1}, .code = &code,
                           .num_code = 1};
  ASSERT_OK(ruda_kernel_create(&kd, &g_scale_add));
  ruda_client_t *base = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &base));
  worker_t w[THREADS];
  uint64_t fixed_streams[THREADS][STREAMS];
  for (int i = 0; i < THREADS; i++) {
    w[i].index = i;
    w[i].streams[0] = ruda_client_retain(base); /* each thread's own stream */
    for (int s = 1; s < STREAMS; s++) {
      ruda_stream_id_t id = ruda_stream_id_next();
      fixed_streams[i][s] = id.value;
      ASSERT_OK(ruda_client_on_stream(base, id, &w[i].streams[s]));
    }
  }
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) ASSERT_EQ(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  ASSERT_EQ(atomic_load(&g_bad), 0);
  unsigned launches = atomic_load(&g_launches);
  ASSERT_EQ(launches, THREADS * STREAMS * ROUNDS * 3);
  ASSERT_OK(ruda_client_sync(base));

  /* The trace: valid JSON, one "scale_add" kernel slice per launch, and a
   * track for every fixed stream. */
  ruda__trace_shutdown();
  jv_t *events;
  jv_t *root = jv_read_trace(trace, &events);
  unsigned kernels = 0;
  bool seen[THREADS][STREAMS] = {{false}};
  for (size_t i = 0; i < events->len; i++) {
    jv_t *e = events->items[i];
    jv_t *cat = jv_get(e, "cat"), *name = jv_get(e, "name"), *tid = jv_get(e, "tid");
    if (!cat || !name || strcmp(cat->str, "kernel") != 0) continue;
    if (strcmp(name->str, "scale_add") == 0) kernels++;
    for (int a = 0; a < THREADS; a++)
      for (int s = 1; s < STREAMS; s++)
        if (tid && (uint64_t)tid->num == fixed_streams[a][s]) seen[a][s] = true;
  }
  ASSERT_EQ(kernels, launches);
  for (int a = 0; a < THREADS; a++)
    for (int s = 1; s < STREAMS; s++) ASSERT_TRUE(seen[a][s]);
  jv_free(root);

  /* The logs were written while everything ran. */
  char *text = rt_read_file(prof);
  ASSERT_NOT_NULL(text);
  ASSERT_STR_CONTAINS(text, "scale_add");
  free(text);
  text = rt_read_file(mem);
  ASSERT_NOT_NULL(text);
  ASSERT_TRUE(text[0] != '\0');
  free(text);

  for (int i = 0; i < THREADS; i++)
    for (int s = 0; s < STREAMS; s++) ruda_client_release(w[i].streams[s]);
  ruda_client_release(base);
  ruda_kernel_release(g_scale_add);
}
