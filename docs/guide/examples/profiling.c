/* Profiling and traces: the device time of a piece of work, the summary
 * table of the profiling log channel and the timeline trace. Run with
 * RUDA_LOG_PROFILING=basic:stdout RUDA_TRACE=trace.json. */
#include <inttypes.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

static void scale(const ruda_cpu_kernel_ctx_t *k) {
  float *x = k->buffers[0];
  uint64_t n = k->buffer_sizes[0] / sizeof(float);
  uint64_t first = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint64_t i = first; i < first + k->ruda_dim.x && i < n; ++i) x[i] *= 2.0f;
}

typedef struct work {
  ruda_kernel_t *kernel;
  ruda_handle_t *x;
} work_t;

/* guide-begin: profile */
/* Runs on the device's worker: the client calls inside run inline. */
static ruda_status_t three_launches(ruda_client_t *c, void *ctx) {
  work_t *w = ctx;
  ruda_kernel_args_t args = {.buffers = w->x, .num_buffers = 1};
  for (int i = 0; i < 3; ++i) {
    ruda_status_t s = ruda_client_launch(c, w->kernel, ruda_count_static(64, 1, 1), &args);
    if (s) return s;
  }
  return NULL;
}
/* guide-end: profile */

int main(void) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *c = NULL;
  ruda_kernel_code_t code = ruda_kernel_code_cpu(scale);
  ruda_kernel_desc_t desc = {.name = "scale", .ruda_dim = {256, 1, 1}, .code = &code, .num_code = 1};
  ruda_kernel_t *kernel = NULL;
  ruda_handle_t x;
  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &c)) || (s = ruda_kernel_create(&desc, &kernel)) ||
      (s = ruda_client_empty(c, 64 * 256 * sizeof(float), &x)))
    return fail(s);

  /* guide-begin: measure */
  work_t w = {kernel, &x};
  ruda_profile_duration_t d;
  if ((s = ruda_client_profile(c, "three launches", three_launches, &w, &d))) return fail(s);
  printf("three launches took %s time: %s\n",
         d.method == RUDA_TIMING_DEVICE ? "device" : "system",
         ruda_profile_duration_ns(d) > 0 ? "measured" : "zero");
  /* guide-end: measure */

  /* guide-begin: tokens */
  /* A profile without a callback: everything submitted on the stream
   * between start and end. Profiles may nest and overlap. */
  ruda_profiling_token_t token;
  if ((s = ruda_client_profile_start(c, &token))) return fail(s);
  if ((s = three_launches(c, &w))) return fail(s);
  if ((s = ruda_client_profile_end(c, token, &d))) return fail(s);
  printf("between start and end: %s\n", ruda_profile_duration_ns(d) > 0 ? "measured" : "zero");
  s = ruda_client_profile_end(c, token, &d); /* ended already */
  printf("ending it again: %s\n", ruda_error_kind_name(ruda_status_kind(s)));
  ruda_status_free(s);
  /* guide-end: tokens */

  /* guide-begin: summary */
  /* At profiling level basic and above every launch is measured, and each
   * sync prints the summary table on the profiling log channel. */
  ruda_kernel_args_t args = {.buffers = &x, .num_buffers = 1};
  for (int i = 0; i < 2; ++i)
    if ((s = ruda_client_launch(c, kernel, ruda_count_static(64, 1, 1), &args))) return fail(s);
  if ((s = ruda_client_sync(c))) return fail(s);
  /* guide-end: summary */

  ruda_handle_release(&x);
  ruda_kernel_release(kernel);
  ruda_client_release(c);
  return 0;
}
