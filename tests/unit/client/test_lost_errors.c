/* Errors nobody read are reported, not lost: when the last client of a
 * device is released, at ruda_shutdown() and at process exit, to the
 * application's handler (ruda_set_lost_error_handler) or by default to
 * stderr, naming the device, the stream and the kernel. Its own program:
 * the last test shuts ruda down. */
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ruda/ruda.h"
#include "test.h"

extern char **environ;

static const ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};

static void failing(const ruda_cpu_kernel_ctx_t *k) { ruda_cpu_kernel_fail(k, "on purpose"); }

static ruda_kernel_t *failing_kernel(const char *name) {
  ruda_kernel_desc_t d = {.name = name,
                          .ruda_dim = {1, 1, 1},
                          .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = failing},
                          .num_code = 1};
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  ruda_status_free(s);
  return k;
}

/* ---- The handler's record ---- */

typedef struct seen {
  pthread_mutex_t lock;
  int count;
  ruda_device_id_t device;
  uint64_t stream;
  char kernel[64];
  ruda_error_kind_t root;
  uint64_t streams[8]; /* every report's stream, in order */
  char kernels[8][64];
} seen_t;

static seen_t seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void record(void *user, ruda_device_id_t device, ruda_stream_id_t stream,
                   ruda_status_t error) {
  seen_t *s = user;
  pthread_mutex_lock(&s->lock);
  if (s->count < 8) {
    s->streams[s->count] = stream.value;
    const char *kn = ruda_status_kernel(error);
    snprintf(s->kernels[s->count], sizeof s->kernels[0], "%s", kn ? kn : "");
  }
  s->count++;
  s->device = device;
  s->stream = stream.value;
  const char *k = ruda_status_kernel(error);
  snprintf(s->kernel, sizeof s->kernel, "%s", k ? k : "");
  s->root = ruda_status_kind(ruda_status_root(error));
  pthread_mutex_unlock(&s->lock);
}

static int seen_count(void) {
  pthread_mutex_lock(&seen.lock);
  int n = seen.count;
  pthread_mutex_unlock(&seen.lock);
  return n;
}

static void seen_reset(void) {
  pthread_mutex_lock(&seen.lock);
  seen.count = 0;
  seen.kernel[0] = '\0';
  pthread_mutex_unlock(&seen.lock);
}

/* The report of a release is queued behind the device's work: waits for
 * `n` reports, at most 10 s. */
static bool wait_seen(int n) {
  for (int i = 0; i < 10000; i++) {
    if (seen_count() >= n) return true;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return false;
}

/* Records what the handler is given from now on, nothing seen yet. */
static void record_lost_errors(void) {
  seen_reset();
  ruda_set_lost_error_handler(record, &seen);
}

/* Launches the failing kernel `name` on `c` (asserted to succeed: the
 * error comes later); returns the kernel. */
static ruda_kernel_t *launch_failing(ruda_client_t *c, const char *name) {
  ruda_kernel_t *k = failing_kernel(name);
  ASSERT_NOT_NULL(k);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL));
  return k;
}

/* After 20 ms more, the handler has still seen `n` reports. */
static void expect_no_more_reports(int n) {
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ASSERT_EQ(seen_count(), n);
}

/* The default report in `text` says that an error was never read on a
 * stream of cpu:0, `why`, and names `kernel`. */
static void expect_report(const char *text, const char *why, const char *kernel) {
  char named[96];
  snprintf(named, sizeof named, "kernel '%s'", kernel);
  ASSERT_STR_CONTAINS(text, "error never read on cpu:0 stream");
  ASSERT_STR_CONTAINS(text, why);
  ASSERT_STR_CONTAINS(text, named);
}

/* ---- A child process that exits without reading its error ---- */

__attribute__((constructor)) static void child_main(void) {
  if (!getenv("RUDA_TEST_LOST_CHILD")) return;
  ruda_client_t *c = NULL;
  ruda_kernel_t *k = failing_kernel("never_synced");
  if (ruda_client_create(cpu0, &c) || !k) _exit(3);
  if (ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL)) _exit(4);
  ruda_kernel_release(k);
  /* No sync, no release, no shutdown: exit() alone must report it. */
  exit(0);
}

TEST(an_error_never_read_is_printed_when_the_process_exits) {
  char path[512];
  snprintf(path, sizeof path, "%s/child_stderr.txt", rt_tmpdir());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  /* The child's environment: ours plus the switch. */
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 2, sizeof *env);
  ASSERT_NOT_NULL(env);
  for (size_t i = 0; i < n; i++) env[i] = environ[i];
  env[n] = "RUDA_TEST_LOST_CHILD=1";
  char *argv[] = {"test_lost_errors_child", NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  ASSERT_EQ(rc, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  FILE *f = fopen(path, "r");
  ASSERT_NOT_NULL(f);
  char text[8192];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  expect_report(text, "the process exited", "never_synced");
  ASSERT_STR_CONTAINS(text, "on purpose");
}

TEST(the_last_release_reports_to_the_handler) {
  record_lost_errors();
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(cpu0, &c));
  ruda_kernel_t *k = launch_failing(c, "released_unread");
  uint64_t stream = ruda_client_stream(c).value;
  ruda_client_release(c);
  ASSERT_TRUE(wait_seen(1));
  ASSERT_EQ(seen_count(), 1);
  ASSERT_EQ(seen.device.type_id, RUDA_DEVICE_TYPE_CPU);
  ASSERT_EQ(seen.device.index_id, 0);
  ASSERT_UEQ(seen.stream, stream);
  ASSERT_STR_EQ(seen.kernel, "released_unread");
  ASSERT_EQ(seen.root, RUDA_ERR_LAUNCH_UNKNOWN);
  /* Reported once, and drained: the stream is healthy again. */
  ASSERT_OK(ruda_client_create(cpu0, &c));
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
  expect_no_more_reports(1);
  ruda_kernel_release(k);
  ruda_set_lost_error_handler(NULL, NULL);
}

TEST(an_error_another_client_can_still_read_is_left_for_it) {
  record_lost_errors();
  ruda_client_t *a = NULL, *b = NULL;
  ASSERT_OK(ruda_client_create(cpu0, &a));
  ASSERT_OK(ruda_client_create(cpu0, &b)); /* the same thread: the same stream */
  ruda_kernel_t *k = launch_failing(a, "shared_stream");
  ruda_client_release(a);
  ASSERT_ERR_KIND(ruda_client_sync(b), RUDA_ERR_LAUNCH_UNKNOWN);
  ruda_client_release(b);
  expect_no_more_reports(0);
  ruda_kernel_release(k);
  ruda_set_lost_error_handler(NULL, NULL);
}

TEST(the_default_goes_to_stderr_naming_stream_and_kernel) {
  ruda_set_lost_error_handler(NULL, NULL);
  char path[512];
  snprintf(path, sizeof path, "%s/stderr.txt", rt_tmpdir());
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_TRUE(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_client_create(cpu0, &c);
  ruda_kernel_t *k = failing_kernel("to_stderr");
  uint64_t stream = 0;
  if (!s) {
    stream = ruda_client_stream(c).value;
    s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL);
    ruda_client_release(c);
    /* The report runs after the launch, on the device: a new client's
     * sync would make it skip (the error is readable again), so wait by
     * polling the file. */
  }
  char text[8192] = "";
  for (int i = 0; i < 10000 && !s; i++) {
    FILE *f = fopen(path, "r");
    if (!f) break;
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    if (strstr(text, "on purpose")) break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ASSERT_OK(s);
  ruda_kernel_release(k);
  char want[96];
  snprintf(want, sizeof want, "[ruda streaming] error never read on cpu:0 stream %llu",
           (unsigned long long)stream);
  ASSERT_STR_CONTAINS(text, want);
  expect_report(text, "last client was released", "to_stderr");
}

/* Two streams of cpu:0, each holding a failed launch ("stream_a" on the
 * thread's stream, "stream_b" on a client pinned to a fresh stream). */
typedef struct two_streams {
  ruda_client_t *a, *b;
  ruda_kernel_t *ka, *kb;
  uint64_t sa, sb;
} two_streams_t;

static void two_failed_streams(two_streams_t *t) {
  ASSERT_OK(ruda_client_create(cpu0, &t->a));
  ASSERT_OK(ruda_client_on_stream(t->a, ruda_stream_id_next(), &t->b));
  t->sa = ruda_client_stream(t->a).value;
  t->sb = ruda_client_stream(t->b).value;
  ASSERT_UNE(t->sa, t->sb);
  t->ka = launch_failing(t->a, "stream_a");
  t->kb = launch_failing(t->b, "stream_b");
}

/* `expected` reports, among them each stream's, naming its own stream and
 * kernel. */
static void assert_reported(const two_streams_t *t, int expected) {
  pthread_mutex_lock(&seen.lock);
  int n = seen.count;
  bool a = false, b = false;
  for (int i = 0; i < n && i < 8; i++) {
    if (seen.streams[i] == t->sa && strcmp(seen.kernels[i], "stream_a") == 0) a = true;
    if (seen.streams[i] == t->sb && strcmp(seen.kernels[i], "stream_b") == 0) b = true;
  }
  pthread_mutex_unlock(&seen.lock);
  ASSERT_EQ(n, expected);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
}

TEST(the_last_release_reports_every_stream_s_error) {
  record_lost_errors();
  two_streams_t t = {0};
  two_failed_streams(&t);
  ruda_client_release(t.a);
  ruda_client_release(t.b);
  ASSERT_TRUE(wait_seen(2));
  expect_no_more_reports(2);
  assert_reported(&t, 2);
  ruda_kernel_release(t.ka);
  ruda_kernel_release(t.kb);
  ruda_set_lost_error_handler(NULL, NULL);
}

/* Last: shutdown is final. A live client's error, and those of two
 * streams whose clients are gone (the live one keeps the release from
 * reporting them), each reported on its own stream before ruda_shutdown
 * returns. */
TEST(shutdown_reports_every_stream_s_error) {
  record_lost_errors();
  two_streams_t t = {0};
  two_failed_streams(&t);
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_on_stream(t.a, ruda_stream_id_next(), &c));
  uint64_t sc = ruda_client_stream(c).value;
  ruda_kernel_t *k = launch_failing(c, "at_shutdown");
  ruda_client_release(t.a);
  ruda_client_release(t.b);
  ASSERT_OK(ruda_shutdown());
  assert_reported(&t, 3);
  bool live = false;
  for (int i = 0; i < 3; i++)
    live = live || (seen.streams[i] == sc && strcmp(seen.kernels[i], "at_shutdown") == 0);
  ASSERT_TRUE(live);
  ruda_client_release(c);
  ruda_kernel_release(k);
  ruda_kernel_release(t.ka);
  ruda_kernel_release(t.kb);
  ASSERT_EQ(seen_count(), 3);
  ruda_set_lost_error_handler(NULL, NULL);
}
