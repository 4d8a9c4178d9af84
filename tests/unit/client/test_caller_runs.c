/* Who runs a device's queue (src/client/device.c): on the CPU backend a
 * caller waiting for its answer runs the queued operations itself while no
 * other thread runs them, and the device worker runs them otherwise.
 * Whoever runs them, operations run one at a time (a kernel or exclusive
 * section that overlapped another would see it), each thread's operations
 * in its order, and none is lost or run twice while callers and the worker
 * take turns, with more threads than cores. On one core a launch + sync
 * round trip runs on the caller. Run under TSan in CI. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ruda/ruda.h"
#include "test.h"
#include "thread_checks.h"

enum { THREADS = 6, ROUNDS = 4000 };

static ruda_kernel_t *g_step;
static atomic_uint g_seq[THREADS + 1];
static pthread_t g_thread[THREADS + 1];
static atomic_uint g_overlap, g_on_caller;
static atomic_int g_inside;

/* Something that takes a little time, so that overlaps would be seen. */
static void busy_a_little(void) {
  for (volatile int i = 0; i < 200; i++) {
  }
}

static void enter(void) {
  if (atomic_exchange(&g_inside, 1)) atomic_fetch_add(&g_overlap, 1);
  busy_a_little();
  atomic_store(&g_inside, 0);
}

/* info[0]: the thread, info[1]: its op number, which must be the next. */
static void step(const ruda_cpu_kernel_ctx_t *k) {
  uint64_t t = k->info[0], n = k->info[1];
  enter();
  if (atomic_load(&g_seq[t]) != n) atomic_fetch_add(&g_bad, 1);
  atomic_store(&g_seq[t], (unsigned)n + 1);
  if (pthread_equal(pthread_self(), g_thread[t])) atomic_fetch_add(&g_on_caller, 1);
}

static ruda_status_t exclusive_body(ruda_client_t *c, void *ctx) {
  (void)c;
  (void)ctx;
  enter();
  return NULL;
}

static ruda_client_t *open_client(void) {
  ruda_device_id_t dev;
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_device_parse("cpu:0", &dev);
  if (!s) s = ruda_client_create(dev, &c);
  ok(s);
  return c;
}

static void make_step(void) {
  if (g_step) return;
  ruda_kernel_code_t code = ruda_kernel_code_cpu(step);
  ruda_kernel_desc_t d = {.name = "step", .ruda_dim = {1, 1, 1}, .code = &code, .num_code = 1};
  ok(ruda_kernel_create(&d, &g_step));
}

static void launch_step(ruda_client_t *c, unsigned t, unsigned n) {
  uint64_t info[2] = {t, n};
  ruda_kernel_args_t args = {.info = {.data = info, .len = 2}};
  ok(ruda_client_launch(c, g_step, ruda_count_static(1, 1, 1), &args));
}

static void *driver(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  g_thread[t] = pthread_self();
  ruda_client_t *c = open_client();
  if (!c) return NULL;
  for (unsigned i = 0; i < ROUNDS; i++) {
    launch_step(c, t, i);
    /* Waits of every kind, and none: the queue is then run by the worker
     * or by whichever caller waits next. */
    switch ((i + t) % 5) {
    case 0: ok(ruda_client_sync(c)); break;
    case 1: ok(ruda_client_flush(c)); break;
    case 2: ok(ruda_client_exclusive(c, exclusive_body, NULL)); break;
    default: break;
    }
  }
  ok(ruda_client_sync(c));
  ruda_client_release(c);
  return NULL;
}

TEST(ops_run_one_at_a_time_in_order_whoever_runs_them) {
  make_step();
  ASSERT_NOT_NULL(g_step);
  pthread_t th[THREADS];
  for (unsigned t = 0; t < THREADS; t++) {
    ASSERT_EQ(pthread_create(&th[t], NULL, driver, (void *)(uintptr_t)t), 0);
  }
  for (unsigned t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (unsigned t = 0; t < THREADS; t++) ASSERT_UEQ(atomic_load(&g_seq[t]), ROUNDS);
  ASSERT_UEQ(atomic_load(&g_bad), 0);
  ASSERT_UEQ(atomic_load(&g_overlap), 0);
}

/* Sets the affinity of every thread of the process (the device's worker
 * and pool threads included). */
static bool pin_all(const cpu_set_t *set) {
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return false;
  bool all = true;
  for (struct dirent *de; (de = readdir(dir)) != NULL;) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    if (sched_setaffinity((pid_t)atoi(de->d_name), sizeof *set, set) != 0) all = false;
  }
  closedir(dir);
  return all;
}

TEST(on_one_core_the_round_trip_runs_on_the_caller) {
  make_step();
  ASSERT_NOT_NULL(g_step);
  ruda_client_t *c = open_client(); /* the worker exists from here on */
  ASSERT_NOT_NULL(c);
  cpu_set_t old, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof old, &old), 0);
  int cpu = sched_getcpu();
  CPU_ZERO(&one);
  CPU_SET(cpu < 0 ? 0 : cpu, &one);
  if (!pin_all(&one)) {
    pin_all(&old);
    ruda_client_release(c);
    SKIP("cannot set the threads' affinity");
  }
  const unsigned t = THREADS; /* a slot of its own */
  g_thread[t] = pthread_self();
  atomic_store(&g_on_caller, 0);
  for (unsigned i = 0; i < ROUNDS; i++) {
    launch_step(c, t, i);
    ok(ruda_client_sync(c));
  }
  pin_all(&old);
  ruda_client_release(c);
  ASSERT_UEQ(atomic_load(&g_seq[t]), ROUNDS);
  ASSERT_UEQ(atomic_load(&g_bad), 0);
  /* The worker runs only when the caller loses the core between its
   * launch and its sync. */
  ASSERT_UGT(atomic_load(&g_on_caller), ROUNDS / 2);
}
