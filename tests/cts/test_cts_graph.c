/* Graphs on every backend: a recording runs nothing, replays run the
 * recorded launches and writes in order with the buffers' contents of the
 * moment, the graph keeps its buffers alive, replays from another stream
 * and thread see the same results, a kernel that fails in a replay is
 * reported at the replaying stream's next sync naming it, and misuse
 * (nested recording, end without begin, dynamic counts, a graph of another
 * device, replaying while recording) is refused with the documented error
 * while the device keeps working. */
#include "cts.h"

enum { N = 1000 };

static ruda_handle_t buffer_u32(ruda_client_t *c, uint32_t value) {
  static uint32_t host[N];
  for (int i = 0; i < N; i++) host[i] = value;
  ruda_handle_t h = {0};
  ruda_status_t s = ruda_client_create_buffer(c, host, sizeof host, &h);
  if (s) ruda_status_free(s);
  return h;
}

static void expect_all(ruda_client_t *c, ruda_handle_t *h, uint32_t value) {
  static uint32_t host[N];
  memset(host, 0xff, sizeof host);
  ASSERT_OK(ruda_client_read(c, h, host, sizeof host));
  for (int i = 0; i < N; i++) {
    if (host[i] != value) {
      fprintf(stderr, "element %d: %u, expected %u\n", i, host[i], value);
      ASSERT_EQ(host[i], value);
    }
  }
}

static ruda_status_t launch_inc(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *h) {
  uint64_t info[1] = {N};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 1, 1}};
  return ruda_client_launch(c, k, ruda_count_static((N + CTS_UNITS - 1) / CTS_UNITS, 1, 1), &args);
}

/* A test's fixture: a client on a stream of its own, the inc_u32 kernel,
 * x (N words), and the graph the test records, if any. */
typedef struct fixture {
  ruda_client_t *c;
  ruda_kernel_t *inc;
  ruda_handle_t x;
  ruda_graph_t *g;
} fixture_t;

/* The fixture, x holding `value` in every word. */
static fixture_t fixture(uint32_t value) {
  fixture_t f = {cts_fresh_stream_client(), cts_kernel_inc_u32(), {0}, NULL};
  f.x = buffer_u32(f.c, value);
  return f;
}

/* Records `incs` increments of x into f->g. */
static void record_incs(fixture_t *f, int incs) {
  ASSERT_OK(ruda_client_graph_begin(f->c));
  for (int i = 0; i < incs; i++) ASSERT_OK(launch_inc(f->c, f->inc, &f->x));
  ASSERT_OK(ruda_client_graph_end(f->c, &f->g));
}

static void fixture_release(fixture_t *f) {
  ruda_graph_release(f->g);
  ruda_handle_release(&f->x);
  ruda_kernel_release(f->inc);
  ruda_client_release(f->c);
}

TEST(recording_runs_nothing_and_replays_run_everything_in_order) {
  fixture_t f = fixture(0);
  ASSERT_OK(ruda_client_graph_begin(f.c));
  /* Recorded: f.x = 10, then three increments. */
  uint32_t ten[N];
  for (int i = 0; i < N; i++) ten[i] = 10;
  ASSERT_OK(ruda_client_write(f.c, &f.x, ten, sizeof ten));
  for (int i = 0; i < 3; i++) ASSERT_OK(launch_inc(f.c, f.inc, &f.x));
  ASSERT_OK(ruda_client_graph_end(f.c, &f.g));
  ASSERT_NOT_NULL(f.g);
  ASSERT_EQ(ruda_graph_num_launches(f.g), 3);
  ASSERT_EQ(ruda_graph_num_writes(f.g), 1);
  /* Nothing ran while recording. */
  expect_all(f.c, &f.x, 0);
  /* The recorded write's data was copied: changing the caller's array
   * does not change the graph. */
  for (int i = 0; i < N; i++) ten[i] = 99;
  for (int r = 0; r < 5; r++) {
    ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
    expect_all(f.c, &f.x, 13);
  }
  /* Replays queue like launches: several, then one sync. */
  for (int r = 0; r < 4; r++) ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
  ASSERT_OK(ruda_client_sync(f.c));
  expect_all(f.c, &f.x, 13);
  fixture_release(&f);
}

TEST(replays_see_the_buffers_contents_of_the_moment) {
  fixture_t f = fixture(0);
  record_incs(&f, 2);
  uint32_t in[N];
  for (uint32_t r = 0; r < 6; r++) {
    /* New input outside the graph, replay, read: +2 each time. */
    for (int i = 0; i < N; i++) in[i] = r * 100u;
    ASSERT_OK(ruda_client_write(f.c, &f.x, in, sizeof in));
    ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
    expect_all(f.c, &f.x, r * 100u + 2u);
  }
  fixture_release(&f);
}

TEST(a_graph_of_many_launches_runs_each_once) {
  fixture_t f = fixture(7);
  record_incs(&f, 500);
  ASSERT_EQ(ruda_graph_num_launches(f.g), 500);
  ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
  ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
  expect_all(f.c, &f.x, 1007);
  fixture_release(&f);
}

TEST(the_graph_keeps_its_buffers_and_usage_returns_to_the_baseline) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *inc = cts_kernel_inc_u32();
  ASSERT_OK(ruda_client_memory_cleanup(c));
  ruda_memory_usage_t before;
  ASSERT_OK(ruda_client_memory_usage(c, &before));
  ruda_handle_t x = buffer_u32(c, 1);
  ruda_handle_t keep = ruda_handle_clone(&x);
  ASSERT_OK(ruda_client_graph_begin(c));
  ASSERT_OK(launch_inc(c, inc, &x));
  ruda_graph_t *g = NULL;
  ASSERT_OK(ruda_client_graph_end(c, &g));
  /* The recording's own handle goes; the graph's binding keeps the memory. */
  ruda_handle_release(&x);
  ASSERT_OK(ruda_client_graph_replay(c, g));
  ASSERT_OK(ruda_client_graph_replay(c, g));
  expect_all(c, &keep, 3);
  ruda_handle_release(&keep);
  ASSERT_OK(ruda_client_graph_replay(c, g)); /* only the graph holds it now */
  ASSERT_OK(ruda_client_sync(c));
  ruda_graph_release(g);
  ASSERT_OK(ruda_client_sync(c));
  ruda_memory_usage_t after;
  ASSERT_OK(ruda_client_memory_usage(c, &after));
  ASSERT_EQ(after.number_allocs, before.number_allocs);
  ASSERT_EQ(after.bytes_in_use, before.bytes_in_use);
  ruda_kernel_release(inc);
  ruda_client_release(c);
}

/* A replay of the graph `g` and a sync on the calling thread's own stream
 * (cts_client follows the caller). */
static ruda_status_t replay_on_this_thread(void *g) {
  ruda_status_t s = ruda_client_graph_replay(cts_client(), g);
  return s ? s : ruda_client_sync(cts_client());
}

TEST(a_replay_on_another_stream_is_ordered_after_the_producers) {
  fixture_t f = fixture(40);
  record_incs(&f, 1);
  ASSERT_OK(ruda_client_sync(f.c));
  ASSERT_OK(cts_on_another_thread(replay_on_this_thread, f.g));
  expect_all(f.c, &f.x, 41);
  fixture_release(&f);
}

TEST(a_failing_kernel_in_a_graph_is_reported_naming_it) {
  fixture_t f = fixture(0);
  ruda_kernel_t *bad = cts_kernel_unrunnable();
  ASSERT_OK(ruda_client_graph_begin(f.c));
  ASSERT_OK(launch_inc(f.c, f.inc, &f.x));
  ASSERT_OK(ruda_client_launch(f.c, bad, ruda_count_static(1, 1, 1), NULL));
  ruda_status_t end = ruda_client_graph_end(f.c, &f.g);
  ruda_status_t seen = end;
  if (!end) {
    /* Replayed node by node: the failure is queued by the replay. */
    ASSERT_NOT_NULL(f.g);
    ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
    seen = ruda_client_sync(f.c);
  } else {
    /* Built by the backend: the build reports it, and there is no graph. */
    ASSERT_TRUE(f.g == NULL);
  }
  cts_expect_text(seen, "unrunnable", NULL);
  ruda_status_free(seen);
  /* The stream is healthy again and the device works. */
  ASSERT_OK(ruda_client_sync(f.c));
  ASSERT_OK(launch_inc(f.c, f.inc, &f.x));
  expect_all(f.c, &f.x, f.g ? 2u : 1u);
  ruda_kernel_release(bad);
  fixture_release(&f);
}

TEST(misuse_is_refused_and_the_device_keeps_working) {
  fixture_t f = fixture(5);
  /* End without begin. */
  ASSERT_ERR_KIND(ruda_client_graph_end(f.c, &f.g), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(f.g == NULL);
  ASSERT_OK(ruda_client_graph_begin(f.c));
  /* Nested recording on the same stream. */
  ASSERT_ERR_KIND(ruda_client_graph_begin(f.c), RUDA_ERR_INVALID_ARGUMENT);
  /* A dynamic count cannot be recorded; nothing runs. */
  ruda_handle_t counts = buffer_u32(f.c, 1);
  ruda_count_t dyn = ruda_count_dynamic(&counts);
  uint64_t info[1] = {N};
  ruda_kernel_args_t args = {.buffers = &f.x, .num_buffers = 1, .info = {info, 1, 1}};
  ASSERT_ERR_KIND(ruda_client_launch(f.c, f.inc, dyn, &args), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_OK(launch_inc(f.c, f.inc, &f.x));
  /* Reads and syncs run at once while recording. */
  expect_all(f.c, &f.x, 5);
  ASSERT_OK(ruda_client_graph_end(f.c, &f.g));
  ASSERT_EQ(ruda_graph_num_launches(f.g), 1);
  /* Replaying while the stream records is refused. */
  ruda_graph_t *other = NULL;
  ASSERT_OK(ruda_client_graph_begin(f.c));
  ASSERT_ERR_KIND(ruda_client_graph_replay(f.c, f.g), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_OK(ruda_client_graph_end(f.c, &other));
  ASSERT_EQ(ruda_graph_num_launches(other), 0);
  ruda_graph_release(other);
  /* A graph of another device. */
  ruda_device_id_t dev = ruda_client_device(f.c);
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  if (dev.type_id != cpu.type_id) {
    ruda_client_t *host = NULL;
    ASSERT_OK(ruda_client_create(cpu, &host));
    ASSERT_ERR_KIND(ruda_client_graph_replay(host, f.g), RUDA_ERR_INVALID_ARGUMENT);
    ruda_client_release(host);
  }
  ASSERT_OK(ruda_client_graph_replay(f.c, f.g));
  expect_all(f.c, &f.x, 6);
  ruda_handle_release(&counts);
  fixture_release(&f);
}
