/* Fault injection through the whole runtime: "fail the Nth host
 * allocation" looped over a client workload (create, write, read, launch,
 * release, sync) for N = 0, 1, 2, ... until the workload runs without an
 * injected failure. Every allocation of the client, the server layer, the
 * memory layer and the CPU backend goes through base/alloc.h, so each of
 * their out-of-memory paths runs once here. For every N:
 *   - a failure is reported (some call returns an error) or the results are
 *     right: data read back equals data written, the kernel's output is
 *     there (no failure is silent);
 *   - afterwards, with injection off, the same client round-trips data and
 *     its stream's usage is back to where it started (nothing leaked into
 *     the pools); under ASan, LeakSanitizer checks that no host memory
 *     leaked either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ruda/ruda.h"
#include "test.h"

enum { N = 256, MAX_ROUNDS = 4000 };

static void fill_cpu(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *out = k->buffers[0];
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) {
    uint64_t i = (uint64_t)k->ruda_pos.x * k->ruda_dim.x + u;
    if (i < k->info[0]) out[i] = (uint32_t)k->info[1];
  }
}

typedef struct run {
  int errors;   /* calls that returned an error */
  bool wrong;   /* a result that is wrong although no call failed before it */
} run_t;

static void note(run_t *r, ruda_status_t s) {
  if (s) {
    r->errors++;
    ruda_status_free(s);
  }
}

/* One pass of the workload; every error is counted, never asserted. */
static void workload(ruda_client_t *c, ruda_kernel_t *k, run_t *r) {
  uint32_t src[N], dst[N];
  for (int i = 0; i < N; i++) src[i] = (uint32_t)i * 2654435761u;
  ruda_handle_t a = {0}, b = {0};
  ruda_memory_layout_t t = {0};
  ruda_status_t s = ruda_client_create_buffer(c, src, sizeof src, &a);
  note(r, s);
  if (!s) {
    memset(dst, 0, sizeof dst);
    s = ruda_client_read(c, &a, dst, sizeof dst);
    note(r, s);
    if (!s && r->errors == 0 && memcmp(src, dst, sizeof src) != 0) r->wrong = true;
  }
  s = ruda_client_empty(c, sizeof src, &b);
  note(r, s);
  if (!s) {
    note(r, ruda_client_write(c, &b, src, sizeof src));
    uint64_t info[2] = {N / 2, 77};
    ruda_kernel_args_t args = {.buffers = &b, .num_buffers = 1, .info = {info, 2, 0}};
    note(r, ruda_client_launch(c, k, ruda_count_static(N / 64, 1, 1), &args));
    memset(dst, 0, sizeof dst);
    s = ruda_client_read(c, &b, dst, sizeof dst);
    note(r, s);
    if (!s && r->errors == 0) {
      for (int i = 0; i < N; i++)
        if (dst[i] != (i < N / 2 ? 77u : src[i])) r->wrong = true;
    }
  }
  ruda_shape_t shape = ruda_shape_2d(4, 8);
  s = ruda_client_create_tensor(c, src, &shape, sizeof(uint32_t), &t);
  note(r, s);
  if (!s) {
    memset(dst, 0, sizeof dst);
    s = ruda_client_read_tensor(c, &t.memory, &shape, &t.strides, sizeof(uint32_t), dst);
    note(r, s);
    if (!s && r->errors == 0 && memcmp(src, dst, 32 * sizeof(uint32_t)) != 0) r->wrong = true;
  }
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda_handle_release(&t.memory);
  /* Pages go back to the system and are taken again; persistent mode has
   * its own buckets. */
  note(r, ruda_client_memory_cleanup(c));
  note(r, ruda_client_allocation_mode(c, RUDA_ALLOCATION_PERSISTENT));
  uint8_t psrc[3000], pdst[3000];
  for (int i = 0; i < 3000; i++) psrc[i] = (uint8_t)(i * 7);
  s = ruda_client_create_buffer(c, psrc, sizeof psrc, &a);
  note(r, s);
  if (!s) {
    memset(pdst, 0, sizeof pdst);
    s = ruda_client_read(c, &a, pdst, sizeof pdst);
    note(r, s);
    if (!s && r->errors == 0 && memcmp(psrc, pdst, sizeof psrc) != 0) r->wrong = true;
  }
  ruda_handle_release(&a);
  note(r, ruda_client_allocation_mode(c, RUDA_ALLOCATION_AUTO));
  note(r, ruda_client_memory_cleanup(c));
  note(r, ruda_client_sync(c));
}

/* A client on a stream no one has used: its pools are made on the worker
 * during the workload, under injection. */
static ruda_status_t fresh_client(ruda_client_t *root, ruda_client_t **out) {
  return ruda_client_on_stream(root, ruda_stream_id_next(), out);
}

TEST(fail_the_nth_allocation_over_a_client_workload) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *root = NULL;
  ASSERT_OK(ruda_client_create(cpu, &root));
  ruda_kernel_desc_t d = {.name = "fill", .ruda_dim = {64, 1, 1},
                          .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = fill_cpu},
                          .num_code = 1};
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  {
    ruda_client_t *c = NULL;
    ASSERT_OK(fresh_client(root, &c));
    run_t clean = {0};
    workload(c, k, &clean);
    ASSERT_EQ(clean.errors, 0);
    ASSERT_FALSE(clean.wrong);
    ruda_client_release(c);
  }

  int64_t n = 0;
  uint64_t injected_total = 0;
  for (; n < MAX_ROUNDS; n++) {
    run_t r = {0};
    ruda_client_t *c = NULL;
    ruda__test_fail_alloc_after(n);
    ruda_status_t s = fresh_client(root, &c);
    if (s) {
      r.errors++;
      ruda_status_free(s);
    } else {
      workload(c, k, &r);
    }
    uint64_t injected = ruda__test_failed_allocs();
    ruda__test_fail_alloc_after(-1);
    injected_total += injected;
    if (r.wrong)
      fprintf(stderr, "N = %lld: %llu allocations failed, no call reported it, wrong data\n",
              (long long)n, (unsigned long long)injected);
    ASSERT_FALSE(r.wrong);
    if (!c) ASSERT_OK(fresh_client(root, &c));
    /* Errors queued by the failing pass are drained by this sync; then the
     * same stream works and holds nothing. */
    ruda_status_free(ruda_client_sync(c));
    run_t after = {0};
    workload(c, k, &after);
    if (after.errors || after.wrong)
      fprintf(stderr, "N = %lld: the runtime is not usable after the failures\n", (long long)n);
    ASSERT_EQ(after.errors, 0);
    ASSERT_FALSE(after.wrong);
    ruda_memory_usage_t u;
    ASSERT_OK(ruda_client_memory_usage(c, &u));
    ASSERT_UEQ(u.number_allocs, 0);
    ASSERT_UEQ(u.bytes_in_use, 0);
    ASSERT_UEQ(u.bytes_reserved, 0);
    ruda_client_release(c);
    if (injected == 0) break; /* the workload ran with every allocation granted */
  }
  ASSERT_LT(n, MAX_ROUNDS);
  ASSERT_UGT(injected_total, 0);
  printf("  %lld allocations in the workload, each failed once\n", (long long)n);
  ruda_kernel_release(k);
  ruda_client_release(root);
}
