/* Fault injection through the whole runtime: "fail the Nth host
 * allocation" looped over a client workload (create, write, read, launch
 * with and without shared memory, tensors, persistent mode, cleanup, sync)
 * for N = 0, 1, 2, ... until the workload runs without an injected failure.
 * Every allocation of the memory layer, the server layer, the CPU backend
 * and (where it uses base/alloc.h) the client goes through the injector, so
 * each of their out-of-memory paths runs once here.
 *
 * The workload is a chain of products (a buffer, a kernel's output, a
 * tensor, ...). Each product is read back, and whenever the read succeeds
 * and every call that made the product succeeded, its values are compared
 * with what they must be, in every round whatever failed elsewhere: a read
 * that succeeds means nothing queued before it on the stream failed (an
 * asynchronous failure is reported by the next read, flush or sync on its
 * stream, never lost). For every N:
 *   - never a wrong value;
 *   - when the injector failed an allocation, some call reported an error
 *     (or, only for a silent fallback listed below, every product was
 *     checked and right);
 *   - afterwards, with injection off, the same stream drains what is queued
 *     and then runs the workload without an error, holding nothing at the
 *     end; a fresh stream does too (the runtime is usable); under ASan,
 *     LeakSanitizer checks that no host memory leaked.
 *
 * Silent fallbacks allowed (an allocation failed, no call of the workload
 * reports it, and every product is checked and right): none. Each of the
 * workload's allocation sites (the client's staging copies and operation
 * records, the stream table, host storage, managers, pools, pages, slot
 * and bucket tables, the CPU backend's shared memory) either reports the
 * failure or, where ruda has a fallback (the preallocated OutOfMemory
 * status when an error's own status cannot be built; a smaller pool page),
 * ends in a reported error too, since fault injection fails every
 * allocation after the Nth and the fallback's own allocation fails with
 * it. A round that absorbs a failure is printed with its N; a deliberate
 * new fallback is listed here and ALLOWED_SILENT raised by the rounds it
 * takes, after checking that it is meant to be silent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ruda/ruda.h"
#include "test.h"

enum { N = 256, MAX_ROUNDS = 6000, TENSOR_ROWS = 4, TENSOR_COLS = 8 };

static void fill_cpu(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *out = k->buffers[0];
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) {
    uint64_t i = (uint64_t)k->ruda_pos.x * k->ruda_dim.x + u;
    if (i < k->info[0]) out[i] = (uint32_t)k->info[1];
  }
}

/* v[i] = v[i] * 3 + 1 through the ruda's shared memory, which it touches
 * from its first to its last byte (ASan sees a block that is too small). */
static void through_shared(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *v = k->buffers[0];
  uint32_t *sh = k->shared;
  uint32_t dim = k->ruda_dim.x;
  if (!sh || k->shared_size < dim * sizeof(uint32_t)) {
    ruda_cpu_kernel_fail(k, "shared memory missing or too small");
    return;
  }
  ((volatile uint8_t *)k->shared)[k->shared_size - 1] = 0xAA;
  for (uint32_t u = 0; u < dim; u++) sh[u] = v[k->ruda_pos.x * dim + u] * 3u + 1u;
  for (uint32_t u = 0; u < dim; u++) v[k->ruda_pos.x * dim + u] = sh[u];
}

typedef struct run {
  int errors;  /* calls that returned an error */
  int checked; /* products whose values were compared */
  int products;
  int wrong;   /* products with a wrong value */
  char what[160];
} run_t;

/* Counts an error; true when `s` is NULL. */
static bool ok(run_t *r, ruda_status_t s) {
  if (!s) return true;
  r->errors++;
  ruda_status_free(s);
  return false;
}

static void check(run_t *r, bool made, bool read, const void *got, const void *want, size_t n,
                  const char *what) {
  r->products++;
  if (!made || !read) return;
  r->checked++;
  if (memcmp(got, want, n) == 0) return;
  if (!r->wrong) snprintf(r->what, sizeof r->what, "%s", what);
  r->wrong++;
}

/* One pass of the workload on `c`; `ks` launches with shared memory. */
static void workload(ruda_client_t *c, ruda_kernel_t *k, ruda_kernel_t *ks, run_t *r) {
  uint32_t src[N], want[N], dst[N];
  for (int i = 0; i < N; i++) src[i] = (uint32_t)i * 2654435761u;
  ruda_handle_t a = {0}, b = {0}, s = {0};
  ruda_memory_layout_t t = {0};

  /* 1. A buffer made from host data. */
  bool made = ok(r, ruda_client_create_buffer(c, src, sizeof src, &a));
  memset(dst, 0, sizeof dst);
  bool read = made && ok(r, ruda_client_read(c, &a, dst, sizeof dst));
  check(r, made, read, dst, src, sizeof src, "create_buffer + read");

  /* 2. An empty buffer, written, then half of it filled by a kernel. */
  made = ok(r, ruda_client_empty(c, sizeof src, &b));
  made = made && ok(r, ruda_client_write(c, &b, src, sizeof src));
  if (made) {
    uint64_t info[2] = {N / 2, 77};
    ruda_kernel_args_t args = {.buffers = &b, .num_buffers = 1, .info = {info, 2, 0}};
    made = ok(r, ruda_client_launch(c, k, ruda_count_static(N / 64, 1, 1), &args));
  }
  for (int i = 0; i < N; i++) want[i] = i < N / 2 ? 77u : src[i];
  memset(dst, 0, sizeof dst);
  read = made && ok(r, ruda_client_read(c, &b, dst, sizeof dst));
  check(r, made, read, dst, want, sizeof want, "empty + write + launch + read");

  /* 3. A kernel that goes through its shared memory (the CPU backend
   *    allocates it for every participant when a launch needs more). */
  made = ok(r, ruda_client_create_buffer(c, src, sizeof src, &s));
  if (made) {
    ruda_kernel_args_t args = {.buffers = &s, .num_buffers = 1};
    made = ok(r, ruda_client_launch(c, ks, ruda_count_static(N / 64, 1, 1), &args));
  }
  for (int i = 0; i < N; i++) want[i] = src[i] * 3u + 1u;
  memset(dst, 0, sizeof dst);
  read = made && ok(r, ruda_client_read(c, &s, dst, sizeof dst));
  check(r, made, read, dst, want, sizeof want, "launch with shared memory + read");

  /* 4. A tensor in the device's layout. */
  ruda_shape_t shape = ruda_shape_2d(TENSOR_ROWS, TENSOR_COLS);
  made = ok(r, ruda_client_create_tensor(c, src, &shape, sizeof(uint32_t), &t));
  memset(dst, 0, sizeof dst);
  read = made && ok(r, ruda_client_read_tensor(c, &t.memory, &shape, &t.strides,
                                               sizeof(uint32_t), dst));
  check(r, made, read, dst, src, TENSOR_ROWS * TENSOR_COLS * sizeof(uint32_t),
        "create_tensor + read_tensor");

  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda_handle_release(&s);
  ruda_handle_release(&t.memory);
  /* Pages go back to the system and are taken again; persistent mode has
   * its own buckets. */
  ok(r, ruda_client_memory_cleanup(c));

  /* 5. A buffer in persistent mode (the mode only changes where it lives,
   *    never its values). */
  ok(r, ruda_client_allocation_mode(c, RUDA_ALLOCATION_PERSISTENT));
  uint8_t psrc[3000], pdst[3000];
  for (int i = 0; i < 3000; i++) psrc[i] = (uint8_t)(i * 7);
  made = ok(r, ruda_client_create_buffer(c, psrc, sizeof psrc, &a));
  memset(pdst, 0, sizeof pdst);
  read = made && ok(r, ruda_client_read(c, &a, pdst, sizeof pdst));
  check(r, made, read, pdst, psrc, sizeof psrc, "persistent create_buffer + read");
  ruda_handle_release(&a);
  ok(r, ruda_client_allocation_mode(c, RUDA_ALLOCATION_AUTO));
  ok(r, ruda_client_memory_cleanup(c));
  ok(r, ruda_client_sync(c));
}

/* A client on a stream no one has used: its pools are made on the worker
 * during the workload, under injection. */
static ruda_status_t fresh_client(ruda_client_t *root, ruda_client_t **out) {
  return ruda_client_on_stream(root, ruda_stream_id_next(), out);
}

/* A kernel whose rudas need more shared memory than any before: every
 * round's launch makes the CPU backend allocate it again. */
static ruda_kernel_t *shared_kernel(uint64_t round) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(through_shared);
  ruda_kernel_desc_t d = {.name = "through_shared", .ruda_dim = {64, 1, 1}, .code = &code,
                          .num_code = 1, .shared_mem_bytes = 256 + 64 * (round + 1)};
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  if (s) ruda_status_free(s);
  return k;
}

/* The workload with injection off: no error, every product checked and
 * right, the stream back to holding nothing. */
static int clean_workload(ruda_client_t *c, ruda_kernel_t *k, ruda_kernel_t *ks,
                          const char *who, int64_t n) {
  run_t r = {0};
  workload(c, k, ks, &r);
  if (r.errors || r.wrong || r.checked != r.products) {
    fprintf(stderr,
            "N = %lld: %s: %d errors, %d of %d products checked, %d wrong (%s) with injection "
            "off\n",
            (long long)n, who, r.errors, r.checked, r.products, r.wrong, r.what);
    return 1;
  }
  ruda_memory_usage_t u;
  ruda_status_t s = ruda_client_memory_usage(c, &u);
  if (s || u.number_allocs || u.bytes_in_use || u.bytes_reserved) {
    fprintf(stderr, "N = %lld: %s: the stream still holds memory after cleanup\n",
            (long long)n, who);
    ruda_status_free(s);
    return 1;
  }
  return 0;
}

enum { ALLOWED_SILENT = 0 }; /* rounds; see "Silent fallbacks allowed" above */

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
    ruda_kernel_t *ks = shared_kernel(0);
    ASSERT_NOT_NULL(ks);
    ASSERT_EQ(clean_workload(c, k, ks, "before injection", -1), 0);
    ruda_kernel_release(ks);
    ruda_client_release(c);
  }

  int64_t n = 0;
  uint64_t injected_total = 0;
  int reported = 0, silent = 0;
  for (; n < MAX_ROUNDS; n++) {
    run_t r = {0};
    ruda_client_t *c = NULL;
    ruda_kernel_t *ks = shared_kernel((uint64_t)n + 1);
    ASSERT_NOT_NULL(ks);
    ruda__test_fail_alloc_after(n);
    if (ok(&r, fresh_client(root, &c))) workload(c, k, ks, &r);
    uint64_t injected = ruda__test_failed_allocs();
    ruda__test_fail_alloc_after(-1);
    injected_total += injected;

    /* Never a wrong value, whatever failed. */
    if (r.wrong)
      fprintf(stderr, "N = %lld: %llu allocations failed, %d errors, wrong values after %s\n",
              (long long)n, (unsigned long long)injected, r.errors, r.what);
    ASSERT_EQ(r.wrong, 0);
    /* A failure is reported, or absorbed with every product right. */
    if (injected && r.errors == 0) {
      silent++;
      fprintf(stderr, "  N = %lld: %llu allocations failed silently, all %d products right\n",
              (long long)n, (unsigned long long)injected, r.checked);
      ASSERT_EQ(r.checked, r.products);
    } else if (injected) {
      reported++;
    }

    /* Usable afterwards: the same stream, once what the failing pass
     * queued is drained, and a fresh stream. */
    if (!c) ASSERT_OK(fresh_client(root, &c));
    ruda_status_free(ruda_client_sync(c));
    ASSERT_EQ(clean_workload(c, k, ks, "the same stream", n), 0);
    ruda_client_release(c);
    c = NULL;
    ASSERT_OK(fresh_client(root, &c));
    ASSERT_EQ(clean_workload(c, k, ks, "a fresh stream", n), 0);
    ruda_client_release(c);
    ruda_kernel_release(ks);
    if (injected == 0) break; /* the workload ran with every allocation granted */
  }
  ASSERT_LT(n, MAX_ROUNDS);
  ASSERT_UGT(injected_total, 0);
  ASSERT_GT(reported, 0);
  ASSERT_LE(silent, ALLOWED_SILENT);
  printf("  %lld allocations in the workload, each failed once: %d reported, %d absorbed\n",
         (long long)n, reported, silent);
  ruda_kernel_release(k);
  ruda_client_release(root);
}
