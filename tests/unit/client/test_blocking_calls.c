/* What the guide says about which calls wait, on cpu:0 (docs/guide,
 * chapters 4 and 5; docs/cpu.md):
 * - ruda_client_read_async returns once the device has issued the read;
 *   on cpu:N the device makes the copy when it issues it, so the call
 *   returns after the work queued before it and the copy have run, and the
 *   future it returns has completed already;
 * - ruda_client_get_resource is answered after the work queued before it,
 *   so on cpu:N the memory it points at holds that work's results. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "ruda/ruda.h"
#include "test.h"

#define SLOW_NS 100000000ull /* 100 ms */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps 100 ms, then writes 42 into the first word of its buffer. */
static void slow_write(const ruda_cpu_kernel_ctx_t *k) {
  struct timespec d = {0, (long)SLOW_NS};
  nanosleep(&d, NULL);
  *(uint32_t *)k->buffers[0] = 42;
}

typedef struct fixture {
  ruda_client_t *c;
  ruda_kernel_t *k;
  ruda_handle_t h;
} fixture_t;

/* cpu:0 with a 4-byte buffer holding 7 and the slow kernel queued on it. */
static fixture_t slow_work_queued(void) {
  fixture_t f = {0};
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ASSERT_OK(ruda_client_create(cpu, &f.c));
  ruda_kernel_code_t code = ruda_kernel_code_cpu(slow_write);
  ruda_kernel_desc_t desc = {.name = "slow_write", .ruda_dim = {1, 1, 1}, .code = &code, .num_code = 1};
  ASSERT_OK(ruda_kernel_create(&desc, &f.k));
  uint32_t seven = 7;
  ASSERT_OK(ruda_client_create_buffer(f.c, &seven, sizeof seven, &f.h));
  ASSERT_OK(ruda_client_sync(f.c));
  ruda_kernel_args_t args = {.buffers = &f.h, .num_buffers = 1};
  ASSERT_OK(ruda_client_launch(f.c, f.k, ruda_count_static(1, 1, 1), &args));
  return f;
}

static void fixture_free(fixture_t *f) {
  ruda_handle_release(&f->h);
  ruda_kernel_release(f->k);
  ruda_client_release(f->c);
}

TEST(read_async_on_cpu_returns_after_the_queued_work_and_the_copy) {
  fixture_t f = slow_work_queued();
  uint32_t out = 0;
  ruda_future_t *fut = NULL;
  uint64_t t0 = now_ns();
  ASSERT_OK(ruda_client_read_async(f.c, &f.h, &out, sizeof out, &fut));
  uint64_t waited = now_ns() - t0;
  ASSERT_UGE(waited, SLOW_NS / 2); /* it waited for the kernel */
  ASSERT_UEQ(out, 42);             /* the copy is made already */
  ASSERT_TRUE(ruda_future_poll(fut));
  ASSERT_OK(ruda_future_wait(fut));
  fixture_free(&f);
}

TEST(get_resource_waits_for_the_queued_work) {
  fixture_t f = slow_work_queued();
  ruda_resource_t r = {0};
  uint64_t t0 = now_ns();
  ASSERT_OK(ruda_client_get_resource(f.c, &f.h, &r));
  ASSERT_UGE(now_ns() - t0, SLOW_NS / 2);
  ASSERT_UEQ(r.size, 4);
  ASSERT_UEQ(*(const uint32_t *)(uintptr_t)r.address, 42);
  ruda_resource_release(&r);
  fixture_free(&f);
}
