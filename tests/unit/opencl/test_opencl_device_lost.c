/* Device loss on opencl:0: a kernel fault that ends the context (injected
 * through the backend's test hook, as NVIDIA's OpenCL reports one; or, with
 * RUDA_TEST_OPENCL_REAL_FAULT=1 on a GPU, a real out-of-bounds write) is
 * reported once, then every stream of the device fails with
 * ServerError::DeviceLost, never a hang, while cpu:0 keeps working;
 * ruda_device_recover makes a fresh context and the device works again
 * (buffers made before report an error, and can still be released). Its
 * own program: it replaces the device's context. */
#include <pthread.h>
#include <stdlib.h>

#include "backends/opencl/opencl_internal.h"
#include "opencl_test_util.h"

static const char fill_src[] =
    "__kernel void lost_fill(__global uint *out, __global const ulong *info) {\n"
    "  out[get_global_id(0)] = (uint)info[0];\n"
    "}\n";

static const char oob_src[] =
    "__kernel void lost_oob(__global uint *out, __global const ulong *info) {\n"
    "  out[info[0] + get_global_id(0)] = 1u;\n"
    "}\n";

static const ruda_device_id_t opencl0 = {RUDA_DEVICE_TYPE_OPENCL, 0};

static ruda_status_t fill(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *h, uint64_t v) {
  uint64_t info[1] = {v};
  ruda_kernel_args_t a = {h, 1, NULL, 0, {info, 1, 1}};
  return ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a);
}

static void expect_lost(ruda_status_t s) {
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  if (!ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST)) {
    rt_fail_msg(__FILE__, __LINE__, "expected DeviceLost, got:\n%s", text);
  }
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST));
  ASSERT_STR_CONTAINS(text, "opencl:0 is lost");
  free(text);
  ruda_status_free(s);
}

typedef struct other {
  ruda_client_t *c;
  ruda_kernel_t *k;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int step;
  ruda_status_t made, lost, after;
  uint32_t back;
} other_t;

static void wait_step(other_t *o, int step) {
  pthread_mutex_lock(&o->lock);
  while (o->step < step) pthread_cond_wait(&o->cv, &o->lock);
  pthread_mutex_unlock(&o->lock);
}

static void set_step(other_t *o, int step) {
  pthread_mutex_lock(&o->lock);
  o->step = step;
  pthread_cond_broadcast(&o->cv);
  pthread_mutex_unlock(&o->lock);
}

/* Another thread's stream: made before the loss (1), synced after it (3),
 * used again after the recovery (5). */
static void *other_stream(void *arg) {
  other_t *o = arg;
  ruda_handle_t h;
  uint32_t zero = 0;
  o->made = ruda_client_create_buffer(o->c, &zero, sizeof zero, &h);
  if (!o->made) o->made = ruda_client_sync(o->c);
  set_step(o, 1);
  wait_step(o, 2);
  o->lost = ruda_client_sync(o->c);
  set_step(o, 3);
  wait_step(o, 4);
  ruda_handle_t h2;
  o->after = ruda_client_empty(o->c, sizeof(uint32_t), &h2);
  if (!o->after) o->after = fill(o->c, o->k, &h2, 77);
  if (!o->after) o->after = ruda_client_read(o->c, &h2, &o->back, sizeof o->back);
  if (!o->made) ruda_handle_release(&h);
  ruda_handle_release(&h2);
  set_step(o, 5);
  return NULL;
}

TEST(a_fault_that_ends_the_context_loses_every_stream_until_recovered) {
  ruda_client_t *c = client();
  const char *real = getenv("RUDA_TEST_OPENCL_REAL_FAULT");
  bool real_fault = real && real[0] == '1';
  if (real_fault && strstr(ruda_client_info(c), ", CPU,")) {
    SKIP("a real out-of-bounds write on a CPU OpenCL device (PoCL) runs on the host and "
         "crashes the process: only a GPU's context can be lost");
  }
  ruda_kernel_t *k = ocl_kernel("lost_fill", fill_src, ruda_dim_new_1d(1), 0);
  ruda_kernel_t *oob = ocl_kernel("lost_oob", oob_src, ruda_dim_new_1d(32), 0);
  ruda_handle_t h;
  uint32_t v = 5, back = 0;
  ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
  ASSERT_OK(fill(c, k, &h, 6)); /* compiled before the loss */
  ASSERT_OK(ruda_client_read(c, &h, &back, sizeof back));
  ASSERT_EQ(back, 6);
  other_t o = {.c = c, .k = k, .lock = PTHREAD_MUTEX_INITIALIZER,
               .cv = PTHREAD_COND_INITIALIZER};
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, other_stream, &o), 0);
  wait_step(&o, 1);
  ASSERT_OK(o.made);

  if (real_fault) {
    /* A real out-of-bounds write, 1 TiB past the buffer. */
    uint64_t info[1] = {1ull << 38};
    ruda_kernel_args_t a = {&h, 1, NULL, 0, {info, 1, 1}};
    ASSERT_OK(ruda_client_launch_unchecked(c, oob, ruda_count_static(1, 1, 1), &a));
  } else {
    ruda__opencl_test_inject_fault();
    ASSERT_OK(fill(c, k, &h, 7));
  }
  /* The fault, then (the device lost) DeviceLost. */
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  printf("  the fault: %s\n", text);
  free(text);
  bool lost_now = ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST) != NULL;
  ruda_status_free(s);
  if (!lost_now) expect_lost(ruda_client_sync(c));
  /* Every stream: the other thread's, at once. */
  set_step(&o, 2);
  wait_step(&o, 3);
  expect_lost(o.lost);
  /* Later work on the lost device fails the same way, never hangs. */
  ASSERT_OK(fill(c, k, &h, 8));
  expect_lost(ruda_client_read(c, &h, &back, sizeof back));

  /* Other devices keep working. */
  ruda_client_t *cpu = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &cpu));
  uint32_t in = 31, out = 0;
  ruda_handle_t hc;
  ASSERT_OK(ruda_client_create_buffer(cpu, &in, sizeof in, &hc));
  ASSERT_OK(ruda_client_read(cpu, &hc, &out, sizeof out));
  ASSERT_EQ(out, 31);
  ruda_handle_release(&hc);
  ruda_client_release(cpu);

  /* A fresh context: the device works again, on every stream. After a
   * real fault NVIDIA's driver refuses new contexts for the rest of the
   * process: then recovery says so, and the device stays lost. */
  s = ruda_device_recover(opencl0);
  if (s != NULL && real_fault) {
    printf("  recovery: %s\n", ruda_status_reason(s));
    ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
    ASSERT_STR_CONTAINS(ruda_status_reason(s), "restart the process");
    ruda_status_free(s);
    expect_lost(ruda_client_read(c, &h, &back, sizeof back));
    set_step(&o, 4);
    wait_step(&o, 5);
    pthread_join(t, NULL);
    expect_lost(o.after);
    ruda_handle_release(&h);
    ruda_kernel_release(oob);
    ruda_kernel_release(k);
    return;
  }
  ASSERT_OK(s);
  ASSERT_OK(ruda_device_recover(opencl0)); /* not lost any more: nothing to do */
  ruda_handle_t h2;
  ASSERT_OK(ruda_client_empty(c, sizeof(uint32_t), &h2));
  ASSERT_OK(fill(c, k, &h2, 42));
  back = 0;
  ASSERT_OK(ruda_client_read(c, &h2, &back, sizeof back));
  ASSERT_EQ(back, 42);
  ASSERT_OK(ruda_client_sync(c));
  set_step(&o, 4);
  wait_step(&o, 5);
  pthread_join(t, NULL);
  ASSERT_OK(o.after);
  ASSERT_EQ(o.back, 77);
  /* A buffer from before the loss is gone, and can be released. */
  s = ruda_client_read(c, &h, &back, sizeof back);
  ASSERT_NOT_NULL(s);
  ruda_status_free(s);
  ruda_handle_release(&h);
  ruda_handle_release(&h2);
  ruda_kernel_release(oob);
  ruda_kernel_release(k);
}
