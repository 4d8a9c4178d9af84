/* libFuzzer target: the input is a program of client operations on cpu:0.
 *
 * Layout: byte 0 picks the number of threads (1..3); the rest is a list of
 * 4-byte operations [op, a, b, c]. The top bits of `op` deal the operation
 * to a thread, the low bits pick what it does (create, empty, write, read,
 * launch, release, clone into an offset view, sync, flush, allocation mode,
 * usage, cleanup, a failing launch, a launch over the device's limits,
 * profile, exclusive, an asynchronous read, strided tensor writes and
 * reads, a 1 MiB+ buffer; a, b and c are its slot, stream and size or
 * value). Every thread owns its handles and two streams, and runs its
 * operations in order, concurrently with the others.
 *
 * Each thread keeps a model of the bytes behind its handles (shared by
 * clones and views) and checks after every step:
 *   - nothing crashes (ASan, UBSan);
 *   - a read that must succeed (no failure is queued on its stream)
 *     succeeds and returns exactly the bytes the model holds;
 *   - flush, sync, memory_usage and profile fail only while a failure this
 *     program caused is queued on their stream; errors have the documented
 *     kinds; read, flush and sync drain the queue, profile and
 *     memory_usage leave it queued;
 *   - after the program, with every handle released and every stream
 *     synced and cleaned, memory usage is back to the baseline.
 * Everything is freed, so LeakSanitizer catches leaks on error paths.
 *
 * Stale handles (a copy used after its release) and strides whose extent
 * wraps around 2^64 are operations a program may contain: both must give
 * an error, never touch memory. FUZZ_STALE_AND_STRIDES=0 leaves them out. */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"

#ifndef FUZZ_STALE_AND_STRIDES
#define FUZZ_STALE_AND_STRIDES 1
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
  MAX_THREADS = 3,
  STREAMS = 2,
  SLOTS = 8,
  MEMS = 16,
  MAX_SMALL = 4096,
  LARGE = (1 << 20) + 4096, /* above the client's borrow threshold */
  MAX_OPS = 256,            /* per input: keeps one run in milliseconds */
};

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "fuzz_client_ops: %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fputc('\n', stderr);                                          \
      abort();                                                      \
    }                                                               \
  } while (0)

static void die_status(const char *what, ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "fuzz_client_ops: %s failed unexpectedly:\n%s\n", what, text ? text : "?");
  free(text);
  abort();
}

/* Fails the run unless `s` is NULL. */
static void must_ok(const char *what, ruda_status_t s) {
  if (s) die_status(what, s);
}

/* ---- kernels ----------------------------------------------------------- */

/* bytes[i] += info[1] for i < info[0]: one ruda does it all. */
static void add_bytes(const ruda_cpu_kernel_ctx_t *k) {
  uint8_t *v = k->buffers[0];
  uint64_t n = k->info[0] < k->buffer_sizes[0] ? k->info[0] : k->buffer_sizes[0];
  for (uint64_t i = 0; i < n; i++) v[i] = (uint8_t)(v[i] + k->info[1]);
}

static void fails(const ruda_cpu_kernel_ctx_t *k) { ruda_cpu_kernel_fail(k, "on purpose"); }

static void noop(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

static ruda_client_t *g_base;
static ruda_kernel_t *g_add, *g_fail, *g_too_big;
static ruda_client_t *g_streams[MAX_THREADS][STREAMS];
static ruda_memory_usage_t g_baseline[MAX_THREADS][STREAMS];

static ruda_kernel_t *kernel(const char *name, ruda_cpu_kernel_fn fn, uint32_t dim_x,
                             uint32_t dim_y) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(fn);
  ruda_kernel_desc_t d = {.name = name, .ruda_dim = {dim_x, dim_y, 1}, .code = &code,
                          .num_code = 1};
  ruda_kernel_t *k = NULL;
  must_ok("ruda_kernel_create", ruda_kernel_create(&d, &k));
  return k;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  must_ok("ruda_client_create",
          ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &g_base));
  g_add = kernel("add_bytes", add_bytes, 1, 1);
  g_fail = kernel("fails", fails, 1, 1);
  /* More units per ruda than cpu:0 allows, each axis within its limit. */
  const ruda_hardware_properties_t *hw = &ruda_client_properties(g_base)->hardware;
  uint32_t x = hw->max_ruda_dim[0] < hw->max_units_per_ruda ? hw->max_ruda_dim[0]
                                                              : hw->max_units_per_ruda;
  g_too_big = kernel("too_big", noop, x, hw->max_units_per_ruda / x + 1);
  for (int t = 0; t < MAX_THREADS; t++) {
    for (int s = 0; s < STREAMS; s++) {
      must_ok("ruda_client_on_stream",
              ruda_client_on_stream(g_base, ruda_stream_id_next(), &g_streams[t][s]));
      must_ok("sync", ruda_client_sync(g_streams[t][s]));
      must_ok("cleanup", ruda_client_memory_cleanup(g_streams[t][s]));
      must_ok("usage", ruda_client_memory_usage(g_streams[t][s], &g_baseline[t][s]));
    }
  }
  return 0;
}

/* ---- the model --------------------------------------------------------- */

typedef struct mem {
  int refs; /* slots viewing it; 0: free */
  uint32_t size;
  bool known; /* false after ruda_client_empty: contents undefined */
  uint8_t *bytes;
} mem_t;

typedef struct slot {
  bool live;
  ruda_handle_t h;
  int mem;
  uint32_t off, len; /* the view */
#if FUZZ_STALE_AND_STRIDES
  bool has_stale;
  ruda_handle_t stale; /* a copy kept after release */
#endif
} slot_t;

typedef struct thread_state {
  int index;
  const uint8_t *ops[MAX_OPS];
  size_t num_ops;
  ruda_client_t **streams;
  bool pending[STREAMS]; /* a failure this program caused is queued */
  slot_t slots[SLOTS];
  mem_t mems[MEMS];
  int large_left;
  uint8_t *scratch; /* LARGE bytes */
} thread_state_t;

static int mem_new(thread_state_t *t, uint32_t size, bool known) {
  for (int i = 0; i < MEMS; i++) {
    if (t->mems[i].refs) continue;
    uint8_t *b = malloc(size ? size : 1);
    CHECK(b, "out of host memory in the model");
    t->mems[i] = (mem_t){.refs = 1, .size = size, .known = known, .bytes = b};
    return i;
  }
  return -1;
}

static void mem_unref(thread_state_t *t, int m) {
  if (--t->mems[m].refs == 0) {
    free(t->mems[m].bytes);
    t->mems[m].bytes = NULL;
  }
}

static void slot_release(thread_state_t *t, int i) {
  slot_t *s = &t->slots[i];
  if (!s->live) return;
#if FUZZ_STALE_AND_STRIDES
  s->stale = s->h;
  s->has_stale = true;
#endif
  ruda_handle_release(&s->h);
  mem_unref(t, s->mem);
  s->live = false;
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (uint32_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (uint8_t)x;
  }
}

/* ---- checks ------------------------------------------------------------ */

/* A call that drains stream `st`'s queued failures (read, flush, sync):
 * fails only while one is queued, and then with its kind. */
static bool drained(thread_state_t *t, int st, const char *what, ruda_status_t s) {
  bool was_pending = t->pending[st];
  t->pending[st] = false;
  if (!s) return true;
  if (!was_pending) die_status(what, s);
  /* The queued failure is our failing kernel, reported by name. */
  CHECK(ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN) || ruda_status_find(s, RUDA_ERR_PROFILE_LAUNCH) ||
            ruda_status_find(s, RUDA_ERR_PROFILE_SERVER),
        "%s: unexpected error kind %s", what, ruda_error_kind_name(ruda_status_kind(s)));
  ruda_status_free(s);
  return false;
}

static void compare(thread_state_t *t, const slot_t *s, const uint8_t *got, const char *what) {
  const mem_t *m = &t->mems[s->mem];
  if (!m->known) return;
  if (memcmp(got, m->bytes + s->off, s->len) != 0) {
    uint32_t i = 0;
    while (got[i] == m->bytes[s->off + i]) i++;
    CHECK(false, "%s: byte %u of a %u-byte view is %u, %u was written", what, i, s->len, got[i],
          m->bytes[s->off + i]);
  }
}

/* A call that observes stream `st` without draining it (profile): fails
 * only while a failure is queued, which stays queued. */
static bool observed(thread_state_t *t, int st, const char *what, ruda_status_t s) {
  bool was_pending = t->pending[st];
  if (!s) return true;
  bool ok = drained(t, st, what, s);
  t->pending[st] = was_pending;
  return ok;
}

/* ---- operations -------------------------------------------------------- */

typedef struct excl_ctx {
  thread_state_t *t;
  slot_t *s;
  ruda_status_t status;
} excl_ctx_t;

static ruda_status_t exclusive_read(ruda_client_t *c, void *arg) {
  excl_ctx_t *x = arg;
  return ruda_client_read(c, &x->s->h, x->t->scratch, x->s->len);
}

typedef struct profile_ctx {
  slot_t *s;
  uint8_t value;
} profile_ctx_t;

static ruda_status_t launch_add(ruda_client_t *c, const slot_t *s, uint8_t value) {
  uint64_t info[2] = {s->len, value};
  ruda_kernel_args_t args = {.buffers = &s->h, .num_buffers = 1, .info = {.data = info, .len = 2}};
  return ruda_client_launch(c, g_add, ruda_count_static(1, 1, 1), &args);
}

static ruda_status_t profiled_add(ruda_client_t *c, void *arg) {
  profile_ctx_t *p = arg;
  return launch_add(c, p->s, p->value);
}

static void model_add(thread_state_t *t, const slot_t *s, uint8_t value) {
  mem_t *m = &t->mems[s->mem];
  for (uint32_t i = 0; i < s->len; i++) m->bytes[s->off + i] = (uint8_t)(m->bytes[s->off + i] + value);
}

enum {
  OP_CREATE, OP_EMPTY, OP_CREATE_LARGE, OP_WRITE, OP_READ, OP_LAUNCH, OP_RELEASE, OP_CLONE,
  OP_SYNC, OP_FLUSH, OP_MODE, OP_USAGE, OP_CLEANUP, OP_FAIL_LAUNCH, OP_OVER_LIMIT, OP_PROFILE,
  OP_EXCLUSIVE, OP_READ_ASYNC, OP_TENSOR, OP_STALE, OP_BAD_STRIDES, OP_COUNT
};

static void run_op(thread_state_t *t, const uint8_t *op) {
  int code = (op[0] & 0x1f) % OP_COUNT;
  uint8_t a = op[1], b = op[2], c = op[3];
  int si = a % SLOTS;
  slot_t *s = &t->slots[si];
  int st = b % STREAMS;
  ruda_client_t *cl = t->streams[st];
  switch (code) {
    case OP_CREATE:
    case OP_EMPTY:
    case OP_CREATE_LARGE: {
      uint32_t size = (uint32_t)(b | (c << 8)) % (MAX_SMALL + 1);
      if (code == OP_CREATE_LARGE) {
        if (t->large_left == 0) return;
        t->large_left--;
        size = LARGE - c;
      }
      slot_release(t, si);
      int m = mem_new(t, size, code != OP_EMPTY);
      if (m < 0) return;
      ruda_status_t r;
      if (code == OP_EMPTY) {
        r = ruda_client_empty(cl, size, &s->h);
      } else {
        fill(t->mems[m].bytes, size, (uint32_t)a << 16 | c);
        r = ruda_client_create_buffer(cl, t->mems[m].bytes, size, &s->h);
      }
      must_ok("create", r);
      *s = (slot_t){.live = true, .h = s->h, .mem = m, .off = 0, .len = size};
      return;
    }
    case OP_WRITE: {
      if (!s->live) return;
      uint32_t n = s->len ? (uint32_t)(b * 131u + c) % (s->len + 1) : 0;
      mem_t *m = &t->mems[s->mem];
      fill(t->scratch, n, (uint32_t)c * 977u + b);
      must_ok("write", ruda_client_write(cl, &s->h, t->scratch, n));
      if (n) {
        memcpy(m->bytes + s->off, t->scratch, n);
        /* Written bytes are known; the rest of an empty buffer is not. */
        if (!m->known && n == m->size && s->off == 0) m->known = true;
      }
      /* Writing more than the view holds is refused at once. */
      ruda_status_t r = ruda_client_write(cl, &s->h, t->scratch, (uint64_t)s->len + 1);
      CHECK(ruda_status_kind(r) == RUDA_ERR_INVALID_ARGUMENT, "oversized write accepted");
      ruda_status_free(r);
      return;
    }
    case OP_READ: {
      if (!s->live) return;
      memset(t->scratch, 0xAB, s->len);
      if (drained(t, st, "read", ruda_client_read(cl, &s->h, t->scratch, s->len)))
        compare(t, s, t->scratch, "read");
      return;
    }
    case OP_LAUNCH:
      if (!s->live) return;
      must_ok("launch", launch_add(cl, s, c));
      if (t->mems[s->mem].known) model_add(t, s, c);
      return;
    case OP_RELEASE: slot_release(t, si); return;
    case OP_CLONE: {
      if (!s->live) return;
      int di = (si + 1 + b) % SLOTS;
      if (di == si) return;
      slot_t src = *s;
      slot_release(t, di);
      slot_t *d = &t->slots[di];
      d->h = ruda_handle_clone(&src.h);
      uint32_t cut = src.len ? c % (src.len + 1) : 0;
      must_ok("offset_start", ruda_handle_offset_start(&d->h, cut));
      CHECK(ruda_handle_size_in_used(&d->h) == (uint64_t)src.len - cut, "view size");
      t->mems[src.mem].refs++;
      d->live = true;
      d->mem = src.mem;
      d->off = src.off + cut;
      d->len = src.len - cut;
      /* A view cannot grow past its memory. */
      ruda_handle_t v = ruda_handle_clone(&d->h);
      ruda_status_t r = ruda_handle_offset_start(&v, (uint64_t)d->len + 1);
      CHECK(ruda_status_kind(r) == RUDA_ERR_INVALID_ARGUMENT, "negative view accepted");
      ruda_status_free(r);
      ruda_handle_release(&v);
      return;
    }
    case OP_SYNC: drained(t, st, "sync", ruda_client_sync(cl)); return;
    case OP_FLUSH: drained(t, st, "flush", ruda_client_flush(cl)); return;
    case OP_MODE:
      must_ok("allocation_mode",
              ruda_client_allocation_mode(cl, c & 1 ? RUDA_ALLOCATION_PERSISTENT : RUDA_ALLOCATION_AUTO));
      return;
    case OP_USAGE: {
      ruda_memory_usage_t u;
      ruda_status_t r = ruda_client_memory_usage(cl, &u);
      if (!t->pending[st]) {
        must_ok("memory_usage", r);
        CHECK(u.bytes_in_use <= u.bytes_reserved, "in use %llu > reserved %llu",
              (unsigned long long)u.bytes_in_use, (unsigned long long)u.bytes_reserved);
      } else {
        /* Reports the queued failure without draining it. */
        CHECK(ruda_status_kind(r) == RUDA_ERR_SERVER_UNHEALTHY, "usage with a queued failure");
        ruda_status_free(r);
      }
      return;
    }
    case OP_CLEANUP: must_ok("memory_cleanup", ruda_client_memory_cleanup(cl)); return;
    case OP_FAIL_LAUNCH:
      must_ok("failing launch", ruda_client_launch(cl, g_fail, ruda_count_static(1, 1, 1), NULL));
      t->pending[st] = true;
      return;
    case OP_OVER_LIMIT: {
      ruda_status_t r = ruda_client_launch(cl, g_too_big, ruda_count_static(1, 1, 1), NULL);
      CHECK(ruda_status_find(r, RUDA_ERR_RESOURCE_UNITS) != NULL, "over-limit launch accepted");
      CHECK(ruda_status_kernel(r) && strcmp(ruda_status_kernel(r), "too_big") == 0,
            "over-limit launch does not name its kernel");
      ruda_status_free(r);
      return;
    }
    case OP_PROFILE: {
      if (!s->live) return;
      profile_ctx_t p = {s, c};
      ruda_profile_duration_t d;
      bool ok = observed(t, st, "profile", ruda_client_profile(cl, "fuzz", profiled_add, &p, &d));
      /* The launch ran even when a queued failure made the profile fail,
       * and that failure is still queued for the next read, flush or sync. */
      (void)ok;
      if (t->mems[s->mem].known) model_add(t, s, c);
      return;
    }
    case OP_EXCLUSIVE: {
      if (!s->live) return;
      excl_ctx_t x = {t, s, NULL};
      if (drained(t, st, "exclusive read", ruda_client_exclusive(cl, exclusive_read, &x)))
        compare(t, s, t->scratch, "exclusive read");
      return;
    }
    case OP_READ_ASYNC: {
      if (!s->live) return;
      ruda_future_t *f = NULL;
      ruda_status_t r = ruda_client_read_async(cl, &s->h, t->scratch, s->len, &f);
      if (!r) r = ruda_future_wait(f);
      if (drained(t, st, "read_async", r)) compare(t, s, t->scratch, "read_async");
      return;
    }
    case OP_TENSOR: {
      /* A rows x cols tensor with a row pitch >= cols inside the view:
       * written from contiguous bytes, read back, checked at its places. */
      if (!s->live || s->len == 0) return;
      uint32_t cols = 1 + b % 16, pitch = cols + c % 8;
      uint32_t rows = 1 + (uint32_t)(a / SLOTS) % 8;
      if ((uint64_t)(rows - 1) * pitch + cols > s->len) return;
      ruda_shape_t shape = ruda_shape_2d(rows, cols);
      ruda_strides_t strides = {2, {pitch, 1}};
      uint8_t *src = t->scratch, *dst = t->scratch + 4096;
      fill(src, rows * cols, (uint32_t)a * 31u + c);
      must_ok("write_tensor", ruda_client_write_tensor(cl, &s->h, &shape, &strides, 1, src));
      mem_t *m = &t->mems[s->mem];
      if (m->known) {
        for (uint32_t r = 0; r < rows; r++) memcpy(m->bytes + s->off + r * pitch, src + r * cols, cols);
      }
      if (drained(t, st, "read_tensor",
                  ruda_client_read_tensor(cl, &s->h, &shape, &strides, 1, dst))) {
        CHECK(memcmp(src, dst, rows * cols) == 0, "tensor read differs from tensor write");
      }
      return;
    }
    case OP_STALE:
#if FUZZ_STALE_AND_STRIDES
      if (s->has_stale && !s->live) {
        /* A handle used after its release: an error, never a crash. */
        ruda_status_t r = ruda_client_read(cl, &s->stale, t->scratch, MAX_SMALL);
        CHECK(r != NULL, "read through a released handle succeeded");
        ruda_status_free(r);
        r = ruda_client_write(cl, &s->stale, t->scratch, 1);
        ruda_status_free(r);
        ruda_handle_t again = ruda_handle_clone(&s->stale);
        ruda_handle_release(&again);
      }
#endif
      return;
    case OP_BAD_STRIDES:
#if FUZZ_STALE_AND_STRIDES
      if (s->live) {
        /* Strides whose extent wraps around 2^64 must be refused. */
        ruda_shape_t shape = ruda_shape_2d(2, 2);
        ruda_strides_t strides = {2, {(uint64_t)1 << (30 + c % 30), UINT64_MAX - ((uint64_t)1 << 30)}};
        ruda_status_t r = ruda_client_write_tensor(cl, &s->h, &shape, &strides, 1, t->scratch);
        CHECK(r != NULL, "write_tensor with wrapping strides accepted");
        ruda_status_free(r);
        r = ruda_client_read_tensor(cl, &s->h, &shape, &strides, 1, t->scratch);
        CHECK(r != NULL, "read_tensor with wrapping strides accepted");
        ruda_status_free(r);
      }
#endif
      return;
  }
}

/* Releases everything and checks that the streams are back to their
 * baseline usage. */
static void finish(thread_state_t *t) {
  for (int i = 0; i < SLOTS; i++) slot_release(t, i);
  for (int st = 0; st < STREAMS; st++) {
    ruda_client_t *cl = t->streams[st];
    drained(t, st, "final sync", ruda_client_sync(cl));
    must_ok("mode", ruda_client_allocation_mode(cl, RUDA_ALLOCATION_AUTO));
    must_ok("cleanup", ruda_client_memory_cleanup(cl));
  }
  for (int st = 0; st < STREAMS; st++) {
    ruda_memory_usage_t u, *base = &g_baseline[t->index][st];
    must_ok("final usage", ruda_client_memory_usage(t->streams[st], &u));
    CHECK(u.number_allocs == base->number_allocs && u.bytes_in_use == base->bytes_in_use,
          "stream %d of thread %d holds %llu allocations, %llu bytes after cleanup (baseline "
          "%llu, %llu)",
          st, t->index, (unsigned long long)u.number_allocs, (unsigned long long)u.bytes_in_use,
          (unsigned long long)base->number_allocs, (unsigned long long)base->bytes_in_use);
    CHECK(u.bytes_reserved <= base->bytes_reserved + 0,
          "stream %d of thread %d still reserves %llu bytes after cleanup (baseline %llu)", st,
          t->index, (unsigned long long)u.bytes_reserved,
          (unsigned long long)base->bytes_reserved);
  }
  for (int i = 0; i < MEMS; i++) CHECK(t->mems[i].refs == 0, "model leak");
}

static void *thread_main(void *arg) {
  thread_state_t *t = arg;
  for (size_t i = 0; i < t->num_ops; i++) run_op(t, t->ops[i]);
  finish(t);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int nthreads = 1 + data[0] % MAX_THREADS;
  static thread_state_t states[MAX_THREADS];
  static uint8_t *scratch[MAX_THREADS];
  for (int i = 0; i < nthreads; i++) {
    if (!scratch[i]) scratch[i] = malloc(LARGE);
    CHECK(scratch[i], "out of host memory");
    states[i] = (thread_state_t){.index = i, .streams = g_streams[i], .large_left = 1,
                                 .scratch = scratch[i]};
  }
  size_t total = 0;
  for (size_t at = 1; at + 4 <= size && total < MAX_OPS; at += 4, total++) {
    thread_state_t *t = &states[(data[at] >> 5) % nthreads];
    t->ops[t->num_ops++] = data + at;
  }
  pthread_t threads[MAX_THREADS];
  for (int i = 1; i < nthreads; i++)
    CHECK(pthread_create(&threads[i], NULL, thread_main, &states[i]) == 0, "pthread_create");
  thread_main(&states[0]);
  for (int i = 1; i < nthreads; i++) pthread_join(threads[i], NULL);
  return 0;
}
