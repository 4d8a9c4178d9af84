/* Per-stream state: error lists, profilers, and the table of stream states
 * keyed by stream id with bounded, least-recently-used reclaim. See
 * stream_table.h for the design. */
#include "server/stream_table.h"

#include <string.h>

#include "base/alloc.h"

/* ---- Stream errors ---- */

void ruda__stream_errors_push(ruda__stream_errors_t *e, ruda_status_t err) {
  if (!err) return;
  err = ruda_status_into_server(err);
  if (e->cap == 0) {
    e->items = e->first;
    e->cap = 1;
  }
  if (e->len == e->cap) {
    size_t cap = e->cap < 4 ? 4 : e->cap * 2;
    ruda_status_t *items = e->items == e->first ? ruda__malloc(cap * sizeof *items)
                                                : ruda__realloc(e->items, cap * sizeof *items);
    if (items && e->items == e->first) memcpy(items, e->first, e->len * sizeof *items);
    if (!items) {
      /* Keep the newest error visible: replace the last one. */
      if (e->len) {
        ruda_status_free(e->items[e->len - 1]);
        e->items[e->len - 1] = err;
      } else {
        ruda_status_free(err);
      }
      return;
    }
    e->items = items;
    e->cap = cap;
  }
  e->items[e->len++] = err;
  if (e->counter) atomic_fetch_add_explicit(e->counter, 1, memory_order_relaxed);
}

bool ruda__stream_errors_empty(const ruda__stream_errors_t *e) { return e->len == 0; }

ruda_status_t ruda__stream_errors_check(ruda__stream_errors_t *e,
                                        ruda__stream_error_mode_t mode) {
  if (e->len == 0) return NULL;
  if (mode.flush) {
    ruda_status_t s = ruda_status_unhealthy(e->items, e->len);
    if (e->counter) atomic_fetch_sub_explicit(e->counter, e->len, memory_order_relaxed);
    e->len = 0;
    if (mode.ignore) {
      ruda_status_free(s);
      return NULL;
    }
    return s;
  }
  if (mode.ignore) return NULL;
  /* Errors stay queued; report them without draining. */
  ruda_status_t copies[16];
  size_t n = e->len < 16 ? e->len : 16;
  for (size_t i = 0; i < n; i++) copies[i] = ruda_status_clone(e->items[i]);
  return ruda_status_unhealthy(copies, n);
}

void ruda__stream_errors_deinit(ruda__stream_errors_t *e) {
  if (e->counter) atomic_fetch_sub_explicit(e->counter, e->len, memory_order_relaxed);
  for (size_t i = 0; i < e->len; i++) ruda_status_free(e->items[i]);
  if (e->items != e->first) ruda__free(e->items);
  memset(e, 0, sizeof *e);
}

/* ---- Profiler ---- */

ruda_status_t ruda__profiler_start(ruda__profiler_t *p, uint64_t token, uint64_t start_ns,
                                   void *mark) {
  ruda__profiler_entry_t *grown = ruda__grow(p->entries, &p->cap, p->len, sizeof *grown, 4);
  if (!grown)
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "out of host memory starting a profile");
  p->entries = grown;
  p->entries[p->len++] = (ruda__profiler_entry_t){token, start_ns, mark, NULL};
  return NULL;
}

bool ruda__profiler_take(ruda__profiler_t *p, uint64_t token, ruda__profiler_entry_t *out) {
  for (size_t i = 0; i < p->len; i++) {
    if (p->entries[i].token != token) continue;
    *out = p->entries[i];
    p->entries[i] = p->entries[--p->len];
    return true;
  }
  return false;
}

ruda_status_t ruda__profiler_finish(ruda__profiler_entry_t *e, uint64_t end_ns,
                                    ruda_timing_method_t method,
                                    ruda_profile_duration_t *out) {
  if (e->error) {
    ruda_status_t err = e->error;
    e->error = NULL;
    return err;
  }
  out->start_ns = e->start_ns;
  out->end_ns = end_ns;
  out->method = method;
  return NULL;
}

ruda_status_t ruda__profiler_stop(ruda__profiler_t *p, ruda_profiling_token_t token,
                                  uint64_t end_ns, ruda_timing_method_t method,
                                  ruda_profile_duration_t *out) {
  ruda__profiler_entry_t e;
  if (!ruda__profiler_take(p, token.id, &e)) {
    return ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED,
                              "token %llu is not open on this stream",
                              (unsigned long long)token.id);
  }
  return ruda__profiler_finish(&e, end_ns, method, out);
}

/* The ProfileError that a failure `err` (borrowed) of a profiled stream
 * becomes. */
static ruda_status_t profile_error_of(ruda_status_t err) {
  ruda_status_t copy = ruda_status_clone(err);
  switch (ruda_status_family(copy)) {
    case RUDA_FAMILY_SERVER: return ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, copy);
    case RUDA_FAMILY_LAUNCH: return ruda_status_wrap(RUDA_ERR_PROFILE_LAUNCH, copy);
    case RUDA_FAMILY_PROFILE: return copy;
    default: return ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_into_server(copy));
  }
}

void ruda__profiler_error(ruda__profiler_t *p, ruda_status_t err) {
  if (!err) return;
  for (size_t i = 0; i < p->len; i++) {
    if (!p->entries[i].error) p->entries[i].error = profile_error_of(err);
  }
}

void ruda__profiler_deinit(ruda__profiler_t *p) {
  for (size_t i = 0; i < p->len; i++) ruda_status_free(p->entries[i].error);
  ruda__free(p->entries);
  memset(p, 0, sizeof *p);
}

/* ---- The table ---- */

enum { FIRST_BUCKETS = 64 };

static size_t state_size(const ruda__stream_table_t *t) {
  return RUDA__STREAM_EXT_OFFSET + t->ops.ext_size;
}

static uint32_t bucket_of(const ruda__stream_table_t *t, uint64_t id) {
  /* Fibonacci hashing: consecutive ids (the usual case) spread evenly. */
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> t->shift);
}

ruda_status_t ruda__stream_table_init(ruda__stream_table_t *t, uint32_t max_streams,
                                      const ruda__stream_table_ops_t *ops,
                                      atomic_size_t *queued_errors) {
  memset(t, 0, sizeof *t);
  if (ops) t->ops = *ops;
  t->max_streams = max_streams ? max_streams : 128;
  t->queued_errors = queued_errors;
  t->nbuckets = FIRST_BUCKETS;
  t->shift = 64 - 6;
  t->buckets = ruda__calloc(t->nbuckets, sizeof *t->buckets);
  t->next_token = 1;
  if (!t->buckets) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating a stream table");
  }
  return NULL;
}

static void lru_unlink(ruda__stream_table_t *t, ruda__stream_t *st) {
  if (st->lru_prev) st->lru_prev->lru_next = st->lru_next;
  else t->lru_head = st->lru_next;
  if (st->lru_next) st->lru_next->lru_prev = st->lru_prev;
  else t->lru_tail = st->lru_prev;
  st->lru_prev = st->lru_next = NULL;
}

static void lru_push_front(ruda__stream_table_t *t, ruda__stream_t *st) {
  st->lru_prev = NULL;
  st->lru_next = t->lru_head;
  if (t->lru_head) t->lru_head->lru_prev = st;
  t->lru_head = st;
  if (!t->lru_tail) t->lru_tail = st;
}

static void hash_unlink(ruda__stream_table_t *t, ruda__stream_t *st) {
  ruda__stream_t **pp = &t->buckets[bucket_of(t, st->id)];
  while (*pp && *pp != st) pp = &(*pp)->hash_next;
  if (*pp) *pp = st->hash_next;
  st->hash_next = NULL;
}

/* Doubles the bucket array; on failure the table keeps working with longer
 * chains. */
static void hash_grow(ruda__stream_table_t *t) {
  uint32_t n = t->nbuckets * 2;
  ruda__stream_t **b = ruda__calloc(n, sizeof *b);
  if (!b) return;
  uint32_t old_n = t->nbuckets;
  ruda__stream_t **old = t->buckets;
  t->buckets = b;
  t->nbuckets = n;
  t->shift--;
  for (uint32_t i = 0; i < old_n; i++) {
    for (ruda__stream_t *st = old[i], *next; st; st = next) {
      next = st->hash_next;
      uint32_t k = bucket_of(t, st->id);
      st->hash_next = b[k];
      b[k] = st;
    }
  }
  ruda__free(old);
}

static void index_put(ruda__stream_table_t *t, uint32_t index) {
  if (t->nfree_index == t->cap_free_index) {
    uint32_t cap = t->cap_free_index ? t->cap_free_index * 2 : 16;
    uint32_t *f = ruda__realloc(t->free_index, cap * sizeof *f);
    if (!f) return; /* the index is not reused: harmless */
    t->free_index = f;
    t->cap_free_index = cap;
  }
  t->free_index[t->nfree_index++] = index;
}

static uint32_t index_get(ruda__stream_table_t *t) {
  if (t->nfree_index) return t->free_index[--t->nfree_index];
  return t->next_index++;
}

/* Frees what a state holds (the state itself is kept by the caller). */
static void state_clear(ruda__stream_table_t *t, ruda__stream_t *st) {
  if (t->ops.release) t->ops.release(t->ops.ctx, st);
  ruda__stream_errors_deinit(&st->errors);
  ruda__profiler_deinit(&st->profiler);
}

static void state_remove(ruda__stream_table_t *t, ruda__stream_t *st) {
  if (t->last == st) t->last = NULL;
  hash_unlink(t, st);
  lru_unlink(t, st);
  index_put(t, st->index);
  state_clear(t, st);
  t->count--;
  t->reclaimed++;
  if (!t->spare) t->spare = st;
  else ruda__free(st);
}

static bool state_idle(ruda__stream_table_t *t, ruda__stream_t *st) {
  if (st->errors.len || st->profiler.len) return false;
  return !t->ops.quiesce || t->ops.quiesce(t->ops.ctx, st);
}

/* Reclaims idle states, least recently used first, until at most
 * max_streams remain or RUDA__STREAM_RECLAIM_SCAN states were examined.
 * `keep` (the state just created) is never examined. */
static void reclaim(ruda__stream_table_t *t, ruda__stream_t *keep) {
  uint32_t scanned = 0;
  ruda__stream_t *st = t->lru_tail;
  while (st && t->count > t->max_streams && scanned < RUDA__STREAM_RECLAIM_SCAN) {
    ruda__stream_t *prev = st->lru_prev;
    if (st != keep) {
      scanned++;
      if (state_idle(t, st)) {
        state_remove(t, st);
      } else {
        /* Busy: look at others first next time. */
        lru_unlink(t, st);
        lru_push_front(t, st);
      }
    }
    st = prev;
  }
}

RUDA__HOT
ruda__stream_t *ruda__stream_find(ruda__stream_table_t *t, ruda_stream_id_t id) {
  ruda__stream_t *st = t->last;
  if (st && st->id == id.value) return st;
  if (!t->buckets) return NULL; /* never initialised: no state exists */
  for (st = t->buckets[bucket_of(t, id.value)]; st; st = st->hash_next) {
    if (st->id == id.value) return st;
  }
  return NULL;
}

RUDA__HOT
ruda__stream_t *ruda__stream_get(ruda__stream_table_t *t, ruda_stream_id_t id) {
  ruda__stream_t *st = t->last;
  if (st && st->id == id.value) return st;
  if (!t->buckets) {
    /* A backend that never set its table up gets one without an
     * extension, so the server layer can still queue its errors. */
    ruda_status_t err = ruda__stream_table_init(t, 0, NULL, NULL);
    if (err) {
      ruda_status_free(err);
      return NULL;
    }
  }
  st = ruda__stream_find(t, id);
  if (st) {
    if (t->lru_head != st) {
      lru_unlink(t, st);
      lru_push_front(t, st);
    }
    t->last = st;
    return st;
  }
  size_t size = state_size(t);
  st = ruda__calloc(1, size);
  if (!st) {
    /* The spare keeps a stream's errors reportable through one failure. */
    st = t->spare;
    t->spare = NULL;
    if (!st) return NULL;
    memset(st, 0, size);
  } else if (!t->spare) {
    t->spare = ruda__calloc(1, size); /* may fail: then there is none */
  }
  st->id = id.value;
  st->index = index_get(t);
  st->cursor = ++t->clock;
  st->errors.counter = t->queued_errors;
  uint32_t k = bucket_of(t, id.value);
  st->hash_next = t->buckets[k];
  t->buckets[k] = st;
  lru_push_front(t, st);
  t->count++;
  t->created++;
  t->last = st;
  if (t->count > t->nbuckets) hash_grow(t);
  if (t->count > t->max_streams) reclaim(t, st);
  return st;
}

void ruda__stream_push_error(ruda__stream_t *st, ruda_status_t err) {
  if (!err) return;
  if (st->profiler.len) ruda__profiler_error(&st->profiler, err);
  ruda__stream_errors_push(&st->errors, err);
}

RUDA__HOT
void ruda__stream_push_launch_error(ruda__stream_t *st, ruda_status_t err, const char *kernel) {
  if (!err) return;
  ruda__stream_push_error(st, ruda_status_set_launch(ruda_status_into_server(err), kernel,
                                                     st->id));
}

ruda_status_t ruda__stream_profile_start(ruda__stream_table_t *t, ruda__stream_t *st,
                                         uint64_t start_ns, void *mark,
                                         ruda_profiling_token_t *out) {
  uint64_t token = t->next_token;
  ruda_status_t err = ruda__profiler_start(&st->profiler, token, start_ns, mark);
  if (err) return err;
  t->next_token++;
  out->id = token;
  return NULL;
}

void ruda__stream_table_foreach(ruda__stream_table_t *t,
                                void (*fn)(void *ctx, ruda__stream_t *st), void *ctx) {
  for (ruda__stream_t *st = t->lru_head; st; st = st->lru_next) fn(ctx, st);
}

ruda_memory_usage_t ruda__stream_table_usage(ruda__stream_table_t *t) {
  ruda_memory_usage_t total = {0, 0, 0, 0};
  if (!t->ops.usage) return total;
  for (ruda__stream_t *st = t->lru_head; st; st = st->lru_next) {
    total = ruda_memory_usage_combine(total, t->ops.usage(t->ops.ctx, st));
  }
  return total;
}

void ruda__stream_table_deinit(ruda__stream_table_t *t) {
  for (ruda__stream_t *st = t->lru_head, *next; st; st = next) {
    next = st->lru_next;
    state_clear(t, st);
    ruda__free(st);
  }
  ruda__free(t->spare);
  ruda__free(t->buckets);
  ruda__free(t->free_index);
  memset(t, 0, sizeof *t);
}
