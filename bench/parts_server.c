/* Parts (RUDA_BENCH_PARTS=1) below the client: an empty kernel's launch
 * and sync through the server's own entries on the calling thread, under
 * the device's running lock (ruda__device_run_here), without the client's
 * queue and hand-offs. Set beside "ruda_client_launch + ruda_client_sync",
 * the difference is what the client and device layers add to a round
 * trip; set beside the raw driver calls, what the backend adds. */
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "harness.h"

typedef struct server_rt {
  ruda_kernel_t *k;
  ruda__future_t *future;
  bool launch, sync;
} server_rt_t;

static ruda_status_t server_step(ruda__server_t *s, ruda_stream_id_t stream, void *p) {
  server_rt_t *x = p;
  if (x->launch) {
    ruda__count_t count;
    memset(&count, 0, sizeof count);
    count.fixed = (ruda_count3_t){1, 1, 1};
    ruda__launch_args_t args;
    memset(&args, 0, sizeof args);
    s->vt->launch(s, x->k, &count, &args, RUDA_EXEC_CHECKED, stream);
  }
  x->future = NULL;
  if (x->sync) return s->vt->sync(s, stream, &x->future);
  return NULL;
}

/* One step on this thread; false when the device would not take it here. */
static bool step_here(ruda_client_t *c, server_rt_t *x, bool launch, bool sync) {
  x->launch = launch;
  x->sync = sync;
  ruda_status_t out = NULL;
  if (!ruda__device_run_here(c->dev, ruda_client_stream(c), server_step, x, &out)) return false;
  ruda_status_free(out);
  ruda_status_free(ruda__client_future_finish(x->future));
  return true;
}

void ruda_bench_server_parts(ruda_bench_t *b, ruda_client_t *c, ruda_kernel_t *k) {
  double *samples = calloc(RUDA_BENCH_PART_N, sizeof *samples);
  if (!samples) return;
  server_rt_t x = {k, NULL, false, false};
  ruda_status_free(ruda_client_sync(c));
  if (!step_here(c, &x, true, true)) {
    ruda_bench_progress(b, "parts: the device does not run server calls on this thread");
    free(samples);
    return;
  }
  RUDA_BENCH_PART(b, samples, "server launch + sync + wait (this thread)",
                  step_here(c, &x, true, true));
  /* The launch alone: timed one by one, each followed by an untimed sync. */
  for (int i = 0; i < RUDA_BENCH_PART_N; i++) {
    uint64_t t0 = ruda_bench_now_ns();
    step_here(c, &x, true, false);
    samples[i] = (double)(ruda_bench_now_ns() - t0);
    ruda_status_free(ruda_client_sync(c));
  }
  ruda_bench_part_report(b, "server launch (this thread)", samples);
  RUDA_BENCH_PART(b, samples, "server sync + wait, idle stream (this thread)",
                  step_here(c, &x, false, true));
  free(samples);
}
