/* Streams and errors: immediate errors, errors of queued work surfacing at
 * the stream's next sync, streams that do not affect each other, and an
 * asynchronous read. */
#include <pthread.h>
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h" /* fail(s): print the status, free it, return 1 */

/* Fails when its buffer holds a negative first value. */
static void check_positive(const ruda_cpu_kernel_ctx_t *k) {
  const float *x = k->buffers[0];
  if (k->ruda_pos.x == 0 && x[0] < 0) ruda_cpu_kernel_fail(k, "x[0] is negative (%g)", x[0]);
}

static ruda_client_t *client;
static ruda_kernel_t *kernel;

/* guide-begin: thread */
/* Another thread: its own stream, so its failure stays its own. */
static void *other_thread(void *arg) {
  ruda_handle_t *bad = arg;
  ruda_kernel_args_t args = {.buffers = bad, .num_buffers = 1};
  ruda_status_t s = ruda_client_launch(client, kernel, ruda_count_static(1, 1, 1), &args);
  if (!s) s = ruda_client_sync(client);
  printf("other thread's sync: %s\n", s ? ruda_error_kind_name(ruda_status_kind(s)) : "ok");
  ruda_status_free(s);
  return NULL;
}
/* guide-end: thread */

int main(void) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_kernel_code_t code = ruda_kernel_code_cpu(check_positive);
  ruda_kernel_desc_t desc = {.name = "check_positive", .ruda_dim = {1, 1, 1}, .code = &code,
                             .num_code = 1};
  ruda_status_t s;
  if ((s = ruda_client_create(cpu, &client)) || (s = ruda_kernel_create(&desc, &kernel)))
    return fail(s);
  float good_value = 1, bad_value = -1;
  ruda_handle_t good, bad;
  if ((s = ruda_client_create_buffer(client, &good_value, sizeof good_value, &good)) ||
      (s = ruda_client_create_buffer(client, &bad_value, sizeof bad_value, &bad)))
    return fail(s);

  /* guide-begin: immediate */
  ruda_kernel_args_t args = {.buffers = &bad, .num_buffers = 1};
  s = ruda_client_launch(client, NULL, ruda_count_static(1, 1, 1), &args);
  printf("launch without a kernel: %s\n", ruda_error_kind_name(ruda_status_kind(s)));
  ruda_status_free(s);
  /* guide-end: immediate */

  /* guide-begin: queued */
  s = ruda_client_launch(client, kernel, ruda_count_static(1, 1, 1), &args);
  printf("failing launch queued: %s\n", s ? "error" : "ok");
  s = ruda_client_sync(client); /* the stream's queued errors come back here */
  printf("sync: %s with %zu error(s)\n", ruda_error_kind_name(ruda_status_kind(s)),
         ruda_status_error_count(s));
  ruda_status_t launch = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN); /* borrowed */
  printf("reason: %s\n", launch ? ruda_status_reason(launch) : "?");
  ruda_status_free(s);
  s = ruda_client_sync(client);
  printf("next sync: %s\n", s ? "error" : "ok"); /* the stream is healthy again */
  ruda_status_free(s);
  /* guide-end: queued */

  pthread_t t;
  pthread_create(&t, NULL, other_thread, &bad);
  pthread_join(t, NULL);
  args.buffers = &good;
  if ((s = ruda_client_launch(client, kernel, ruda_count_static(1, 1, 1), &args)) ||
      (s = ruda_client_sync(client)))
    return fail(s);
  printf("this thread's sync: ok\n");

  /* guide-begin: async */
  float out = 0;
  ruda_future_t *pending = NULL;
  if ((s = ruda_client_read_async(client, &good, &out, sizeof out, &pending))) return fail(s);
  /* ... other work; `out` must stay valid until the wait ... */
  if ((s = ruda_future_wait(pending))) return fail(s); /* also frees the future */
  printf("async read: %g\n", out);
  /* guide-end: async */

  ruda_handle_release(&good);
  ruda_handle_release(&bad);
  ruda_kernel_release(kernel);
  ruda_client_release(client);
  return 0;
}
