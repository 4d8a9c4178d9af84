/* libFuzzer target: the input is a program of client operations on cpu:0.
 *
 * Layout: byte 0 picks the number of threads (1..3); the rest is a list of
 * 4-byte operations [op, a, b, c]. The top bits of `op` deal the operation
 * to a thread, the low bits pick what it does (create, empty, write, read,
 * launch, release, clone into an offset view, sync, flush, allocation mode,
 * usage, cleanup, a failing launch, a launch over the device's limits,
 * profile, exclusive, an asynchronous read, strided tensor writes and
 * reads, a 1 MiB+ buffer, profile tokens started and ended in any order
 * (and unknown ones), the device's memory usage, raw resources taken,
 * checked, written through and released, several tensors in one
 * allocation; a, b and c are its slot, stream and size or value). Every
 * thread owns its handles and two streams, and runs its operations in
 * order, concurrently with the others.
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
 *   - a profile token ends once, on its stream, in any order: with its
 *     duration, or, when a failure was queued on the stream while it was
 *     open, with a ProfileError that leaves the failure queued; a token
 *     that is not open on the stream (0, one already ended, one open on
 *     another stream, which stays open) is ProfileError::NotRegistered;
 *   - the device's usage never fails (queued failures stay queued); with
 *     one thread it is exactly the sum of its streams' usage;
 *   - a raw resource (a host pointer on cpu:0) spans the view, holds the
 *     bytes the model holds, and what is written through it is what later
 *     reads return; it keeps its memory alive until released;
 *   - ruda_client_empty_tensors gives disjoint views of one allocation:
 *     none of them can be mutated alone (ruda_handle_can_mut) while another
 *     is alive;
 *   - after the program, with every handle and resource released, every
 *     token ended and every stream synced and cleaned, memory usage is back
 *     to the baseline, on each stream and on the whole device.
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
  MAX_TOKENS = 4,           /* open profile tokens per stream */
  MAX_RESOURCES = 4,        /* raw resources held per thread */
  MAX_TENSORS = 3,          /* tensors per ruda_client_empty_tensors */
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
static ruda_memory_usage_t g_device_baseline;

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
  must_ok("device usage", ruda_client_memory_usage_device(g_base, &g_device_baseline));
  return 0;
}

/* ---- the model --------------------------------------------------------- */

typedef struct mem {
  int refs; /* slots viewing it; 0: free */
  uint32_t size;
  bool known; /* false after ruda_client_empty: contents undefined */
  int group;  /* > 0: one of the views of a ruda_client_empty_tensors */
  uint8_t *bytes;
} mem_t;

typedef struct token {
  ruda_profiling_token_t token;
  bool saw_failure; /* a failure was queued on its stream while open */
} token_t;

typedef struct slot {
  bool live;
  ruda_handle_t h;
  int mem;
  uint32_t off, len; /* the view */
#if FUZZ_STALE_AND_STRIDES
  bool has_stale;
  ruda_handle_t stale; /* a copy kept after release */
  /* The release was the last of its allocation (no clone, no other view of
   * the same empty_tensors allocation alive): the copy must then be
   * refused. A copy whose memory another handle keeps alive is not
   * detected (ruda/memory.h says so), and is not checked. */
  bool stale_dead;
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
  token_t tokens[STREAMS][MAX_TOKENS]; /* open profile tokens, by stream */
  int num_tokens[STREAMS];
  bool has_ended;
  ruda_profiling_token_t ended; /* a token already ended */
  ruda_resource_t resources[MAX_RESOURCES];
  int num_resources;
  int next_group;
} thread_state_t;

static int mem_new(thread_state_t *t, uint32_t size, bool known) {
  for (int i = 0; i < MEMS; i++) {
    if (t->mems[i].refs) continue;
    uint8_t *b = malloc(size ? size : 1);
    CHECK(b, "out of host memory in the model");
    t->mems[i] = (mem_t){.refs = 1, .size = size, .known = known, .group = 0, .bytes = b};
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
  int group = t->mems[s->mem].group;
  mem_unref(t, s->mem);
  s->live = false;
#if FUZZ_STALE_AND_STRIDES
  s->stale_dead = t->mems[s->mem].refs == 0;
  for (int m = 0; group != 0 && m < MEMS && s->stale_dead; m++) {
    if (t->mems[m].refs && t->mems[m].group == group) s->stale_dead = false;
  }
#endif
}

static int free_mems(const thread_state_t *t) {
  int n = 0;
  for (int i = 0; i < MEMS; i++) n += t->mems[i].refs == 0;
  return n;
}

/* What ruda_handle_can_mut must say of slot `s`: the only handle of its
 * memory (no clone, no other live view of its allocation). */
static bool can_mut_expected(const thread_state_t *t, const slot_t *s) {
  const mem_t *m = &t->mems[s->mem];
  if (m->refs != 1) return false;
  if (m->group == 0) return true;
  for (int i = 0; i < MEMS; i++) {
    if (i != s->mem && t->mems[i].refs && t->mems[i].group == m->group) return false;
  }
  return true;
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
  OP_EXCLUSIVE, OP_READ_ASYNC, OP_TENSOR, OP_STALE, OP_BAD_STRIDES, OP_PROFILE_START,
  OP_PROFILE_END, OP_PROFILE_UNKNOWN, OP_USAGE_DEVICE, OP_RESOURCE, OP_RESOURCE_RELEASE,
  OP_EMPTY_TENSORS, OP_COUNT
};

/* Ends token `i` open on stream `st` and checks the answer. */
static void token_end(thread_state_t *t, int st, int i) {
  token_t tok = t->tokens[st][i];
  t->tokens[st][i] = t->tokens[st][--t->num_tokens[st]];
  ruda_profile_duration_t d = {0, 0, 0};
  ruda_status_t r = ruda_client_profile_end(t->streams[st], tok.token, &d);
  t->ended = tok.token;
  t->has_ended = true;
  if (!tok.saw_failure) {
    must_ok("profile_end", r);
    CHECK(d.start_ns <= d.end_ns, "profile ends at %llu before it starts at %llu",
          (unsigned long long)d.end_ns, (unsigned long long)d.start_ns);
    return;
  }
  /* The failure queued while it was open, as a ProfileError; it stays
   * queued on the stream (pending is unchanged). */
  CHECK(r != NULL, "profile_end of token %llu hides the failure queued while it was open",
        (unsigned long long)tok.token.id);
  ruda_error_kind_t k = ruda_status_kind(r);
  CHECK(k == RUDA_ERR_PROFILE_LAUNCH || k == RUDA_ERR_PROFILE_SERVER,
        "profile_end: unexpected error kind %s", ruda_error_kind_name(k));
  CHECK(ruda_status_find(r, RUDA_ERR_LAUNCH_UNKNOWN) != NULL,
        "profile_end: the error does not carry the failing launch");
  ruda_status_free(r);
}

static void expect_not_registered(thread_state_t *t, int st, ruda_profiling_token_t tok,
                                  const char *which) {
  ruda_profile_duration_t d;
  ruda_status_t r = ruda_client_profile_end(t->streams[st], tok, &d);
  CHECK(ruda_status_kind(r) == RUDA_ERR_PROFILE_NOT_REGISTERED,
        "profile_end of %s token %llu: %s, not NotRegistered", which,
        (unsigned long long)tok.id, r ? ruda_error_kind_name(ruda_status_kind(r)) : "success");
  ruda_status_free(r);
}

/* Releases held resource `i`; releasing it again is a no-op. */
static void resource_drop(thread_state_t *t, int i) {
  ruda_resource_t *r = &t->resources[i];
  ruda_resource_release(r);
  CHECK(r->address == 0 && r->size == 0 && ruda_binding_is_empty(&r->binding),
        "a released resource is not zeroed");
  ruda_resource_release(r);
  t->resources[i] = t->resources[--t->num_resources];
}

static ruda_memory_usage_t usage_add(ruda_memory_usage_t a, ruda_memory_usage_t b,
                                     ruda_memory_usage_t minus) {
  ruda_memory_usage_t u = ruda_memory_usage_combine(a, b);
  u.number_allocs -= minus.number_allocs;
  u.bytes_in_use -= minus.bytes_in_use;
  u.bytes_padding -= minus.bytes_padding;
  u.bytes_reserved -= minus.bytes_reserved;
  return u;
}

static bool g_single_thread; /* this input runs on one thread */

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
      for (int i = 0; i < t->num_tokens[st]; i++) t->tokens[st][i].saw_failure = true;
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
    case OP_PROFILE_START: {
      if (t->num_tokens[st] == MAX_TOKENS) {
        token_end(t, st, c % MAX_TOKENS);
        return;
      }
      ruda_profiling_token_t tok = {0};
      must_ok("profile_start", ruda_client_profile_start(cl, &tok));
      CHECK(tok.id != 0, "profile_start gave token 0");
      for (int o = 0; o < STREAMS; o++) {
        for (int i = 0; i < t->num_tokens[o]; i++)
          CHECK(t->tokens[o][i].token.id != tok.id, "token %llu given out twice",
                (unsigned long long)tok.id);
      }
      t->tokens[st][t->num_tokens[st]++] = (token_t){tok, false};
      return;
    }
    case OP_PROFILE_END:
      if (t->num_tokens[st]) token_end(t, st, c % t->num_tokens[st]);
      return;
    case OP_PROFILE_UNKNOWN: {
      /* 0 is never given out; an ended token is not open anywhere; a token
       * open on the other stream is not open on this one, and stays open
       * there (ended later through the model). */
      int other = (st + 1) % STREAMS;
      if (c % 3 == 1 && t->has_ended) {
        expect_not_registered(t, st, t->ended, "an ended");
      } else if (c % 3 == 2 && t->num_tokens[other]) {
        expect_not_registered(t, st, t->tokens[other][c % t->num_tokens[other]].token,
                              "another stream's");
      } else {
        expect_not_registered(t, st, (ruda_profiling_token_t){0}, "the zero");
      }
      return;
    }
    case OP_USAGE_DEVICE: {
      ruda_memory_usage_t dev;
      /* Queued failures neither make it fail nor are drained by it. */
      must_ok("memory_usage_device", ruda_client_memory_usage_device(cl, &dev));
      CHECK(dev.bytes_in_use <= dev.bytes_reserved, "device: in use %llu > reserved %llu",
            (unsigned long long)dev.bytes_in_use, (unsigned long long)dev.bytes_reserved);
      if (!g_single_thread || t->pending[0] || t->pending[1]) return;
      /* One thread: the device holds the baseline of the streams no one
       * uses, plus exactly what this thread's two streams hold. */
      ruda_memory_usage_t u[STREAMS];
      for (int o = 0; o < STREAMS; o++)
        must_ok("memory_usage", ruda_client_memory_usage(t->streams[o], &u[o]));
      ruda_memory_usage_t ours = ruda_memory_usage_combine(g_baseline[t->index][0],
                                                           g_baseline[t->index][1]);
      ruda_memory_usage_t want = usage_add(u[0], u[1], ours);
      want = ruda_memory_usage_combine(want, g_device_baseline);
      ruda_memory_usage_t again;
      must_ok("memory_usage_device", ruda_client_memory_usage_device(cl, &again));
      CHECK(again.number_allocs == want.number_allocs && again.bytes_in_use == want.bytes_in_use &&
                again.bytes_reserved == want.bytes_reserved,
            "device usage %llu allocations, %llu in use, %llu reserved; its streams add up to "
            "%llu, %llu, %llu",
            (unsigned long long)again.number_allocs, (unsigned long long)again.bytes_in_use,
            (unsigned long long)again.bytes_reserved, (unsigned long long)want.number_allocs,
            (unsigned long long)want.bytes_in_use, (unsigned long long)want.bytes_reserved);
      return;
    }
    case OP_RESOURCE: {
      if (!s->live) return;
      CHECK(ruda_handle_can_mut(&s->h) == can_mut_expected(t, s),
            "can_mut says %d for a view with %d slots on its memory",
            (int)ruda_handle_can_mut(&s->h), t->mems[s->mem].refs);
      ruda_resource_t r;
      ruda_status_t e = ruda_client_get_resource(cl, &s->h, &r);
      if (e && t->pending[st]) {
        /* A backend may refuse while a failure is queued (it stays queued). */
        CHECK(ruda_status_kind(e) == RUDA_ERR_SERVER_UNHEALTHY, "get_resource: kind %s",
              ruda_error_kind_name(ruda_status_kind(e)));
        ruda_status_free(e);
        return;
      }
      must_ok("get_resource", e);
      CHECK(r.size == s->len, "resource of %llu bytes for a %u-byte view",
            (unsigned long long)r.size, s->len);
      CHECK(!ruda_binding_is_empty(&r.binding), "resource without a binding");
      mem_t *m = &t->mems[s->mem];
      /* get_resource ran on the device's worker after everything this
       * thread queued before it: the bytes are there, and no operation of
       * this thread is in flight until the next call. */
      if (s->len) {
        uint8_t *p = (uint8_t *)(uintptr_t)r.address;
        CHECK(p != NULL, "resource of a %u-byte view at address 0", s->len);
        if (m->known) compare(t, s, p, "resource");
        if (c & 1) {
          /* Written through the pointer: later reads must return it. */
          fill(p, s->len, (uint32_t)c * 7919u + a);
          memcpy(m->bytes + s->off, p, s->len);
          if (s->off == 0 && s->len == m->size) m->known = true;
        }
      }
      if ((c & 2) && t->num_resources < MAX_RESOURCES) {
        t->resources[t->num_resources++] = r; /* held: keeps the memory alive */
      } else {
        ruda_resource_release(&r);
      }
      return;
    }
    case OP_RESOURCE_RELEASE:
      if (t->num_resources) resource_drop(t, c % t->num_resources);
      return;
    case OP_EMPTY_TENSORS: {
      /* 1 to 3 tensors (some with a dim of 0) in one allocation, in slots
       * si, si + 1, ...; each is a view of its own in the model. A
       * descriptor with a zero element size is refused, allocating
       * nothing. */
      int n = 1 + c % MAX_TENSORS;
      ruda_memory_layout_descriptor_t descs[MAX_TENSORS];
      static const size_t elem_sizes[] = {1, 2, 4, 8};
      for (int i = 0; i < n; i++) {
        uint32_t x = (uint32_t)(b + 31 * i) * 2654435761u >> 8;
        ruda_shape_t shape = ruda_shape_2d(x % 5, 1 + (x >> 4) % 13);
        size_t es = elem_sizes[(x >> 9) % 4];
        descs[i] = (x >> 12) & 1 ? ruda_memory_layout_contiguous(shape, es)
                                 : ruda_memory_layout_optimized(shape, es);
      }
      ruda_memory_layout_t out[MAX_TENSORS];
      memset(out, 0, sizeof out);
      if (c & 0x80) {
        descs[n - 1].elem_size = 0;
        ruda_status_t r = ruda_client_empty_tensors(cl, descs, (size_t)n, out);
        CHECK(ruda_status_kind(r) == RUDA_ERR_INVALID_ARGUMENT,
              "empty_tensors with a zero element size: %s",
              r ? ruda_error_kind_name(ruda_status_kind(r)) : "accepted");
        ruda_status_free(r);
        return;
      }
      for (int i = 0; i < n; i++) slot_release(t, (si + i) % SLOTS);
      if (free_mems(t) < n) return;
      must_ok("empty_tensors", ruda_client_empty_tensors(cl, descs, (size_t)n, out));
      int group = n > 1 ? ++t->next_group : 0;
      uint64_t prev_end = 0;
      for (int i = 0; i < n; i++) {
        uint64_t len = ruda_handle_size_in_used(&out[i].memory);
        uint64_t want = 0;
        CHECK(ruda_shape_num_bytes(&descs[i].shape, descs[i].elem_size, &want), "tensor size");
        CHECK(len >= want && len <= MAX_SMALL, "tensor %d: a %llu-byte view for %llu bytes", i,
              (unsigned long long)len, (unsigned long long)want);
        CHECK(out[i].memory.offset_start >= prev_end, "tensor %d overlaps the one before", i);
        prev_end = out[i].memory.offset_start + len;
        int m = mem_new(t, (uint32_t)len, false);
        CHECK(m >= 0, "no model memory although %d were free", n);
        t->mems[m].group = group;
        slot_t *d = &t->slots[(si + i) % SLOTS];
        *d = (slot_t){.live = true, .h = out[i].memory, .mem = m, .off = 0, .len = (uint32_t)len};
      }
      for (int i = 0; i < n; i++) {
        slot_t *d = &t->slots[(si + i) % SLOTS];
        CHECK(ruda_handle_can_mut(&d->h) == (n == 1),
              "can_mut of one of %d tensors in one allocation says %d", n,
              (int)ruda_handle_can_mut(&d->h));
      }
      return;
    }
    case OP_STALE:
#if FUZZ_STALE_AND_STRIDES
      if (s->has_stale && s->stale_dead && !s->live) {
        /* A handle used after its release: an error, never a crash. */
        ruda_status_t r = ruda_client_read(cl, &s->stale, t->scratch, MAX_SMALL);
        CHECK(r != NULL, "read through a released handle succeeded");
        ruda_status_free(r);
        r = ruda_client_write(cl, &s->stale, t->scratch, 1);
        ruda_status_free(r);
        ruda_handle_t again = ruda_handle_clone(&s->stale);
        ruda_handle_release(&again);
        ruda_resource_t res;
        r = ruda_client_get_resource(cl, &s->stale, &res);
        CHECK(r != NULL, "get_resource through a released handle succeeded");
        ruda_status_free(r);
        ruda_resource_release(&res);
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
  for (int st = 0; st < STREAMS; st++) {
    while (t->num_tokens[st]) token_end(t, st, t->num_tokens[st] - 1);
  }
  while (t->num_resources) resource_drop(t, t->num_resources - 1);
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
  g_single_thread = nthreads == 1;
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
  /* Every thread has cleaned up: the device is back to its baseline. */
  ruda_memory_usage_t u;
  must_ok("final device usage", ruda_client_memory_usage_device(g_base, &u));
  CHECK(u.number_allocs == g_device_baseline.number_allocs &&
            u.bytes_in_use == g_device_baseline.bytes_in_use &&
            u.bytes_reserved <= g_device_baseline.bytes_reserved,
        "the device holds %llu allocations, %llu bytes in use, %llu reserved after cleanup "
        "(baseline %llu, %llu, %llu)",
        (unsigned long long)u.number_allocs, (unsigned long long)u.bytes_in_use,
        (unsigned long long)u.bytes_reserved, (unsigned long long)g_device_baseline.number_allocs,
        (unsigned long long)g_device_baseline.bytes_in_use,
        (unsigned long long)g_device_baseline.bytes_reserved);
  return 0;
}
