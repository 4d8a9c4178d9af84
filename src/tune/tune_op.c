/* Tunable operations: creation and checks, the decision table, tuning a
 * key on the device, the fallback at launch, the JSON log line.
 *
 * The decision table is open addressing over pointers to immutable
 * decisions. Readers (every call) load the table and a slot with acquire
 * loads and never lock or allocate; writers (tuning, corrections, forget)
 * hold the operation's tune lock and publish a decision, or a grown table,
 * with a release store. Replaced decisions and tables are kept until the
 * operation is freed, so a reader never sees freed memory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/json.h"
#include "ruda/log.h"
#include "ruda/version.h"
#include "tune/tune_internal.h"

/* ---- keys ---- */

uint64_t ruda_tune_bucket(uint64_t v, uint32_t base) {
  if (base < 2) return v;
  uint64_t p = 1;
  while (p < v) {
    if (p > UINT64_MAX / base) return UINT64_MAX;
    p *= base;
  }
  return p;
}

uint32_t ruda_tune_alignment_class(uint64_t offset) {
  uint32_t a = 1;
  while (a < 64 && offset % (a * 2) == 0) a *= 2;
  return a;
}

void ruda__tune_bucket_key(const ruda_tune_key_t *key, const ruda_tune_dim_t *dims,
                           uint32_t bucket_power, ruda_tune_key_t *out) {
  out->len = key->len;
  for (uint32_t i = 0; i < key->len; i++) {
    uint32_t b = dims[i].base;
    if (b >= 2 && bucket_power == 2 && b <= 65535) b *= b;
    out->v[i] = ruda_tune_bucket(key->v[i], b);
  }
  for (uint32_t i = key->len; i < RUDA_TUNE_KEY_MAX; i++) out->v[i] = 0;
}

static uint64_t key_hash(const ruda_tune_key_t *k) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ k->len;
  for (uint32_t i = 0; i < k->len; i++) {
    h ^= k->v[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h ^ (h >> 31);
}

static bool key_eq(const ruda_tune_key_t *a, const ruda_tune_key_t *b) {
  if (a->len != b->len) return false;
  for (uint32_t i = 0; i < a->len; i++)
    if (a->v[i] != b->v[i]) return false;
  return true;
}

/* ---- the operation ---- */

typedef struct cand {
  char *name;
  ruda_kernel_t *kernel;
  ruda_status_t (*count)(const ruda_tune_args_t *, const void *, ruda_count_t *);
  ruda_status_t (*launch)(ruda_client_t *, ruda_kernel_t *, const ruda_tune_args_t *,
                          const void *);
  bool (*applies)(const ruda_tune_key_t *, const void *);
  const void *param;
} cand_t;

typedef struct decision {
  struct decision *next_all; /* every decision of the op, freed with it */
  ruda_tune_key_t bucket;
  uint64_t hash;
  uint32_t num_rank;
  uint32_t rank[RUDA__TUNE_MAX_CANDIDATES];
  char why_empty[200]; /* num_rank == 0: why no candidate can run */
} decision_t;

typedef struct table {
  struct table *next_retired;
  size_t cap, used;
  _Atomic(decision_t *) slots[];
} table_t;

struct ruda_tune_op {
  _Atomic size_t refs;
  char *name;
  ruda_device_id_t device;
  ruda_client_t *tune_client; /* its own stream: tuning never touches the caller's */
  cand_t *cands;
  size_t num_cands;
  ruda_tune_dim_t dims[RUDA_TUNE_KEY_MAX];
  size_t num_dims;
  ruda_tune_access_t *access;
  size_t num_access;
  /* The description's settings: default candidate, key function, check,
   * budget (RUDA_TUNE_BUDGET_CONFIG resolved); its arrays are the copies
   * above, its name is `name`. */
  ruda_tune_op_desc_t set;
  ruda_autotune_level_t level;
  ruda__tune_plan_t plan;
  int64_t pinned; /* candidate index, or -1 */
  char cand_hash[40];
  char device_ident[384];
  char device_name[32];
  char cache_dir[RUDA_CONFIG_PATH_MAX + 8];
  _Atomic(table_t *) table;
  pthread_mutex_t lock; /* tuning and every table write */
  table_t *retired;
  decision_t *all;
};

static ruda__tune_timer_fn g_timer;

void ruda__tune_set_timer(ruda__tune_timer_fn fn) { g_timer = fn; }

static ruda_status_t invalid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static ruda_status_t invalid(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda_status_t s = ruda_status_createv(RUDA_ERR_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

static bool good_name(const char *s) {
  if (!s || !*s || strlen(s) >= 64) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return false;
  return true;
}

/* Whether a backend of `type` runs code of `format`. Unknown types: yes
 * (their backend decides at launch). */
static bool runs_format(uint16_t type, ruda_kernel_format_t f) {
  switch (type) {
    case RUDA_DEVICE_TYPE_CPU: return f == RUDA_KERNEL_FORMAT_CPU || f == RUDA_KERNEL_FORMAT_PORTABLE;
    case RUDA_DEVICE_TYPE_CUDA:
      return f == RUDA_KERNEL_FORMAT_CUDA_C || f == RUDA_KERNEL_FORMAT_PTX ||
             f == RUDA_KERNEL_FORMAT_CUBIN || f == RUDA_KERNEL_FORMAT_PORTABLE;
    case RUDA_DEVICE_TYPE_OPENCL:
      return f == RUDA_KERNEL_FORMAT_OPENCL_C || f == RUDA_KERNEL_FORMAT_PORTABLE;
    default: return true;
  }
}

static bool kernel_runs_on(const ruda_kernel_t *k, uint16_t type) {
  const ruda_kernel_desc_t *d = ruda_kernel_desc(k);
  for (size_t i = 0; i < d->num_code; i++)
    if (runs_format(type, d->code[i].format)) return true;
  return false;
}

ruda_tune_op_desc_t ruda_tune_op_desc_default(void) {
  ruda_tune_op_desc_t d;
  memset(&d, 0, sizeof d);
  d.check_reference = RUDA_TUNE_NO_CHECK;
  d.check_elem = RUDA_ELEM_F32;
  d.check_rtol = 1e-4;
  d.check_atol = 1e-5;
  d.budget_ms = RUDA_TUNE_BUDGET_CONFIG;
  return d;
}

static ruda_status_t check_desc(ruda_client_t *c, const ruda_tune_op_desc_t *d) {
  if (!good_name(d->name))
    return invalid("ruda_tune_op_create: the operation's name %s%s%s is missing or not made of "
                   "letters, digits, '_', '.' and '-' (at most 63)",
                   d->name ? "'" : "", d->name ? d->name : "(NULL)", d->name ? "'" : "");
  if (!d->candidates || d->num_candidates == 0)
    return invalid("ruda_tune_op_create: operation '%s' has zero candidates", d->name);
  if (d->num_candidates > RUDA__TUNE_MAX_CANDIDATES)
    return invalid("ruda_tune_op_create: operation '%s' has %zu candidates (at most %d)", d->name,
                   d->num_candidates, RUDA__TUNE_MAX_CANDIDATES);
  ruda_device_id_t dev = ruda_client_device(c);
  char devname[32];
  ruda_device_id_format(dev, devname, sizeof devname);
  for (size_t i = 0; i < d->num_candidates; i++) {
    const ruda_tune_candidate_t *k = &d->candidates[i];
    if (!good_name(k->name))
      return invalid("ruda_tune_op_create: operation '%s', candidate %zu: the name %s%s%s is "
                     "missing or not made of letters, digits, '_', '.' and '-'",
                     d->name, i, k->name ? "'" : "", k->name ? k->name : "(NULL)",
                     k->name ? "'" : "");
    for (size_t j = 0; j < i; j++)
      if (strcmp(d->candidates[j].name, k->name) == 0)
        return invalid("ruda_tune_op_create: operation '%s': candidate name '%s' is used twice "
                       "(candidates %zu and %zu)", d->name, k->name, j, i);
    if (!k->kernel)
      return invalid("ruda_tune_op_create: operation '%s', candidate '%s': kernel is NULL",
                     d->name, k->name);
    if (!k->count && !k->launch)
      return invalid("ruda_tune_op_create: operation '%s', candidate '%s': count and launch are "
                     "NULL (one of them is required)", d->name, k->name);
    if (!kernel_runs_on(k->kernel, dev.type_id))
      return invalid("ruda_tune_op_create: operation '%s', candidate '%s': kernel '%s' is built "
                     "for another device: it has no code that %s can run", d->name, k->name,
                     ruda_kernel_desc(k->kernel)->name, devname);
  }
  if (d->default_candidate >= d->num_candidates)
    return invalid("ruda_tune_op_create: operation '%s': default_candidate %u is out of range "
                   "(%zu candidates)", d->name, d->default_candidate, d->num_candidates);
  if (d->check_reference != RUDA_TUNE_NO_CHECK && d->check_reference >= d->num_candidates)
    return invalid("ruda_tune_op_create: operation '%s': check_reference %u is out of range "
                   "(%zu candidates)", d->name, d->check_reference, d->num_candidates);
  if (d->num_dims == 0 || d->num_dims > RUDA_TUNE_KEY_MAX || !d->dims)
    return invalid("ruda_tune_op_create: operation '%s': num_dims is %zu (a key has 1 to %d "
                   "values, each with a bucketing rule in dims)", d->name, d->num_dims,
                   RUDA_TUNE_KEY_MAX);
  for (size_t i = 0; i < d->num_dims; i++)
    if (!good_name(d->dims[i].name))
      return invalid("ruda_tune_op_create: operation '%s': key value %zu has no name (or a bad "
                     "one)", d->name, i);
  if (d->budget_ms == 0)
    return invalid("ruda_tune_op_create: operation '%s': budget_ms is 0 (give a time in ms, or "
                   "RUDA_TUNE_BUDGET_CONFIG for [autotune] budget_ms)", d->name);
  if (d->num_access && !d->access)
    return invalid("ruda_tune_op_create: operation '%s': num_access is %zu but access is NULL",
                   d->name, d->num_access);
  for (size_t i = 0; i < d->num_access; i++)
    if ((unsigned)d->access[i] > RUDA_TUNE_WORKSPACE)
      return invalid("ruda_tune_op_create: operation '%s': access[%zu] is %d (not a "
                     "ruda_tune_access_t)", d->name, i, (int)d->access[i]);
  return NULL;
}

static void op_free(ruda_tune_op_t *op) {
  if (!op) return;
  for (size_t i = 0; i < op->num_cands; i++) {
    ruda__free(op->cands[i].name);
    ruda_kernel_release(op->cands[i].kernel);
  }
  ruda__free(op->cands);
  for (size_t i = 0; i < op->num_dims; i++) ruda__free((char *)op->dims[i].name);
  ruda__free(op->access);
  ruda__free(op->name);
  ruda__free(atomic_load(&op->table));
  for (table_t *t = op->retired, *n; t; t = n) {
    n = t->next_retired;
    ruda__free(t);
  }
  for (decision_t *d = op->all, *n; d; d = n) {
    n = d->next_all;
    ruda__free(d);
  }
  ruda_client_release(op->tune_client);
  pthread_mutex_destroy(&op->lock);
  ruda__free(op);
}

static table_t *table_new(size_t cap) {
  table_t *t = ruda__calloc(1, sizeof *t + cap * sizeof(t->slots[0]));
  if (t) t->cap = cap;
  return t;
}

/* Replaces newlines (and other control bytes) so a text fits on a line. */
static void one_line(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20) *s = ' ';
}

static void set_identity(ruda_tune_op_t *op, ruda_client_t *c) {
  const ruda_device_properties_t *p = ruda_client_properties(c);
  const char *info = ruda_client_info(c);
  ruda_device_id_format(op->device, op->device_name, sizeof op->device_name);
  snprintf(op->device_ident, sizeof op->device_ident, "%s | %s | %s", op->device_name,
           p ? p->name : "?", info ? info : "?");
  one_line(op->device_ident);
}

static void set_cand_hash(ruda_tune_op_t *op) {
  uint64_t lo = 0x746f, hi = 0x7475;
  for (size_t i = 0; i < op->num_cands; i++) {
    ruda_hash128_t kh = ruda_kernel_hash(op->cands[i].kernel);
    ruda_hash128_t nh = ruda_hash128(op->cands[i].name, strlen(op->cands[i].name), i);
    lo = lo * 0x100000001b3ull ^ kh.lo ^ nh.lo;
    hi = hi * 0x100000001b3ull ^ kh.hi ^ nh.hi;
  }
  for (size_t i = 0; i < op->num_dims; i++) {
    lo = lo * 0x100000001b3ull ^ op->dims[i].base;
    hi = hi * 0x100000001b3ull ^ (op->dims[i].base + i);
  }
  snprintf(op->cand_hash, sizeof op->cand_hash, "%016llx%016llx", (unsigned long long)hi,
           (unsigned long long)lo);
}

/* The pin of this operation in [autotune] pin, or -1. */
static int64_t find_pin(const ruda_tune_op_t *op, const char *pins) {
  size_t nl = strlen(op->name);
  for (const char *p = pins; *p;) {
    while (*p == ' ' || *p == ',') p++;
    const char *eq = strchr(p, '=');
    if (!eq) break;
    const char *v = eq + 1, *e = v;
    while (*e && *e != ',' && *e != ' ') e++;
    if ((size_t)(eq - p) == nl && strncmp(p, op->name, nl) == 0) {
      for (size_t i = 0; i < op->num_cands; i++)
        if (strlen(op->cands[i].name) == (size_t)(e - v) &&
            strncmp(op->cands[i].name, v, (size_t)(e - v)) == 0)
          return (int64_t)i;
      ruda_log(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC,
               "{\"op\":\"%s\",\"warning\":\"pin names candidate '%.*s', which the operation "
               "does not have; the pin is ignored\"}",
               op->name, (int)(e - v), v);
    }
    p = e;
  }
  return -1;
}

ruda_status_t ruda_tune_op_create(ruda_client_t *client, const ruda_tune_op_desc_t *desc,
                                  ruda_tune_op_t **out) {
  if (out) *out = NULL;
  if (!client || !desc || !out)
    return invalid("ruda_tune_op_create: NULL %s", !client ? "client" : !desc ? "desc" : "out");
  ruda_status_t st = check_desc(client, desc);
  if (st) return st;
  ruda_tune_op_t *op = ruda__calloc(1, sizeof *op);
  if (!op) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "ruda_tune_op_create: out of memory");
  atomic_init(&op->refs, 1);
  pthread_mutex_init(&op->lock, NULL);
  op->name = ruda__strdup(desc->name);
  op->cands = ruda__calloc(desc->num_candidates, sizeof *op->cands);
  table_t *t = table_new(16);
  atomic_init(&op->table, t);
  bool oom = !op->name || !op->cands || !t;
  for (size_t i = 0; !oom && i < desc->num_candidates; i++) {
    const ruda_tune_candidate_t *k = &desc->candidates[i];
    cand_t *cd = &op->cands[i];
    cd->name = ruda__strdup(k->name);
    if (!cd->name) oom = true;
    cd->kernel = ruda_kernel_retain(k->kernel);
    cd->count = k->count;
    cd->launch = k->launch;
    cd->applies = k->applies;
    cd->param = k->param;
    op->num_cands = i + 1;
  }
  for (size_t i = 0; !oom && i < desc->num_dims; i++) {
    op->dims[i].base = desc->dims[i].base;
    op->dims[i].name = ruda__strdup(desc->dims[i].name);
    if (!op->dims[i].name) oom = true;
    op->num_dims = i + 1;
  }
  if (!oom && desc->num_access) {
    op->access = ruda__malloc(desc->num_access * sizeof *op->access);
    if (!op->access) oom = true;
    else memcpy(op->access, desc->access, desc->num_access * sizeof *op->access);
    op->num_access = desc->num_access;
  }
  if (oom) {
    op_free(op);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "ruda_tune_op_create: out of memory");
  }
  st = ruda_client_on_stream(client, ruda_stream_id_next(), &op->tune_client);
  if (st) {
    op_free(op);
    return st;
  }
  op->device = ruda_client_device(client);
  op->set = *desc;
  op->set.name = op->name;
  op->set.candidates = NULL;
  op->set.dims = op->dims;
  op->set.access = op->access;
  const ruda_config_t *cfg = ruda_config_get();
  if (op->set.budget_ms == RUDA_TUNE_BUDGET_CONFIG) op->set.budget_ms = cfg->autotune.budget_ms;
  op->level = cfg->autotune.level;
  op->plan = ruda__tune_plan(op->level);
  set_identity(op, client);
  set_cand_hash(op);
  op->pinned = find_pin(op, cfg->autotune.pin);
  size_t n = ruda_tune_cache_dir(op->cache_dir, sizeof op->cache_dir);
  if (n >= sizeof op->cache_dir) op->cache_dir[0] = '\0';
  *out = op;
  return NULL;
}

ruda_tune_op_t *ruda_tune_op_retain(ruda_tune_op_t *op) {
  if (op) atomic_fetch_add_explicit(&op->refs, 1, memory_order_relaxed);
  return op;
}

void ruda_tune_op_release(ruda_tune_op_t *op) {
  if (op && atomic_fetch_sub_explicit(&op->refs, 1, memory_order_acq_rel) == 1) op_free(op);
}

const char *ruda_tune_op_name(const ruda_tune_op_t *op) { return op ? op->name : NULL; }
size_t ruda_tune_op_num_candidates(const ruda_tune_op_t *op) { return op ? op->num_cands : 0; }
const char *ruda_tune_op_candidate_name(const ruda_tune_op_t *op, size_t index) {
  return op && index < op->num_cands ? op->cands[index].name : NULL;
}

/* ---- the table ---- */

static decision_t *lookup(ruda_tune_op_t *op, const ruda_tune_key_t *bucket, uint64_t h) {
  table_t *t = atomic_load_explicit(&op->table, memory_order_acquire);
  size_t mask = t->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    decision_t *d = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (!d) return NULL;
    if (d->hash == h && key_eq(&d->bucket, bucket)) return d;
  }
}

/* Under the lock: stores `d` in t's slot for its key. */
static void table_put(table_t *t, decision_t *d) {
  size_t mask = t->cap - 1;
  for (size_t i = d->hash & mask;; i = (i + 1) & mask) {
    decision_t *o = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (!o) t->used++;
    if (!o || (o->hash == d->hash && key_eq(&o->bucket, &d->bucket))) {
      atomic_store_explicit(&t->slots[i], d, memory_order_release);
      return;
    }
  }
}

/* Under the lock: publishes `d` (owned by the op from now on). */
static void publish(ruda_tune_op_t *op, decision_t *d) {
  d->next_all = op->all;
  op->all = d;
  table_t *t = atomic_load_explicit(&op->table, memory_order_relaxed);
  if ((t->used + 1) * 2 > t->cap) {
    table_t *g = table_new(t->cap * 2);
    if (g) {
      for (size_t i = 0; i < t->cap; i++) {
        decision_t *o = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (o) table_put(g, o);
      }
      atomic_store_explicit(&op->table, g, memory_order_release);
      t->next_retired = op->retired;
      op->retired = t;
      t = g;
    } else if (t->used + 1 >= t->cap) {
      return; /* full and out of memory: the decision lives only in `all` */
    }
  }
  table_put(t, d);
}

void ruda_tune_op_forget(ruda_tune_op_t *op) {
  if (!op) return;
  pthread_mutex_lock(&op->lock);
  table_t *t = atomic_load_explicit(&op->table, memory_order_relaxed);
  table_t *e = table_new(16);
  if (e) {
    atomic_store_explicit(&op->table, e, memory_order_release);
    t->next_retired = op->retired;
    op->retired = t;
  }
  pthread_mutex_unlock(&op->lock);
}

/* ---- launching a candidate ---- */

/* Launches candidate i: with its dispatch count, or (`one_ruda`, a
 * candidate without its own launch function) with a single ruda, which
 * compiles the kernel at a fraction of a run's cost. */
static ruda_status_t launch_cand_as(const ruda_tune_op_t *op, ruda_client_t *c, size_t i,
                                    const ruda_tune_args_t *args, bool one_ruda) {
  const cand_t *k = &op->cands[i];
  if (k->launch) return k->launch(c, k->kernel, args, k->param);
  ruda_count_t count;
  ruda_status_t st = k->count(args, k->param, &count);
  if (st) return st;
  if (one_ruda) count = ruda_count_static(1, 1, 1);
  ruda_kernel_args_t ka;
  memset(&ka, 0, sizeof ka);
  ka.buffers = args->buffers;
  ka.num_buffers = args->num_buffers;
  ka.info.data = args->num_scalars ? args->scalars : NULL;
  ka.info.len = args->num_scalars;
  ka.info.dynamic_metadata_offset = args->num_scalars;
  return ruda_client_launch(c, k->kernel, count, &ka);
}

static ruda_status_t launch_cand(const ruda_tune_op_t *op, ruda_client_t *c, size_t i,
                                 const ruda_tune_args_t *args) {
  return launch_cand_as(op, c, i, args, false);
}

/* ---- the log line ---- */

typedef struct {
  char *p;
  size_t len, cap;
} text_t;

static void tx(text_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx(text_t *b, const char *fmt, ...) {
  if (b->len >= b->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (w > 0) b->len += (size_t)w;
  if (b->len >= b->cap) b->len = b->cap - 1;
}

static void tx_str(text_t *b, const char *s) {
  if (b->len >= b->cap) return;
  size_t w = ruda__json_escape(s, b->p + b->len, b->cap - b->len);
  b->len += w;
  if (b->len >= b->cap) b->len = b->cap - 1;
}

static void tx_key(text_t *b, const ruda_tune_op_t *op, const ruda_tune_key_t *k) {
  tx(b, "{");
  for (uint32_t i = 0; i < k->len; i++)
    tx(b, "%s\"%s\":%llu", i ? "," : "", op->dims[i].name, (unsigned long long)k->v[i]);
  tx(b, "}");
}

/* The start of every JSON line of the operation: {"op":...,"device":... */
static void tx_head(text_t *b, const ruda_tune_op_t *op) {
  tx(b, "{\"op\":");
  tx_str(b, op->name);
  tx(b, ",\"device\":");
  tx_str(b, op->device_name);
}

static void key_text(const ruda_tune_op_t *op, const ruda_tune_key_t *k, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < k->len && at < cap; i++) {
    int w = snprintf(buf + at, cap - at, "%s%s=%llu", i ? " " : "", op->dims[i].name,
                     (unsigned long long)k->v[i]);
    if (w < 0) break;
    at += (size_t)w;
  }
}

static void log_decision(const ruda_tune_op_t *op, const ruda_tune_key_t *key,
                         const ruda_tune_key_t *bucket, const char *source,
                         const ruda__tune_result_t *r, const decision_t *d, double spent_ms,
                         const char *extra) {
  if (!ruda_log_enabled(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC)) return;
  char buf[8192];
  text_t b = {buf, 0, sizeof buf};
  tx_head(&b, op);
  tx(&b, ",\"key\":");
  tx_key(&b, op, key);
  tx(&b, ",\"bucket\":");
  tx_key(&b, op, bucket);
  tx(&b, ",\"source\":\"%s\"", source);
  if (r) {
    tx(&b, ",\"candidates\":[");
    for (size_t i = 0; i < op->num_cands; i++) {
      tx(&b, "%s{\"name\":", i ? "," : "");
      tx_str(&b, op->cands[i].name);
      if (r[i].state == RUDA__TUNE_EXCLUDED) {
        tx(&b, ",\"excluded\":");
        tx_str(&b, r[i].reason);
      } else if (r[i].state == RUDA__TUNE_NOT_APPLICABLE) {
        tx(&b, ",\"not_applicable\":true");
      } else {
        tx(&b, ",\"score_ns\":%.0f,\"spread\":%.3f,\"samples\":%u%s", r[i].score, r[i].spread,
           r[i].num_samples, r[i].dropped ? ",\"dropped\":true" : "");
      }
      tx(&b, "}");
    }
    tx(&b, "]");
  }
  tx(&b, ",\"winner\":");
  tx_str(&b, d && d->num_rank ? op->cands[d->rank[0]].name : "");
  if (extra) tx(&b, ",%s", extra);
  tx(&b, ",\"spent_ms\":%.3f}", spent_ms);
  ruda_log(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC, "%s", buf);
}

/* ---- tuning ---- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static ruda_tune_access_t access_of(const ruda_tune_op_t *op, size_t i) {
  if (!op->access) return RUDA_TUNE_READ_WRITE;
  return i < op->num_access ? op->access[i] : RUDA_TUNE_READ_WRITE;
}

/* The reason text of `st` (consumed), prefixed. */
static void reason_of(ruda__tune_result_t *r, const char *prefix, ruda_status_t st) {
  char *t = ruda_status_to_string(st);
  snprintf(r->reason, sizeof r->reason, "%s: %s", prefix, t ? t : "error");
  one_line(r->reason);
  free(t);
  ruda_status_free(st);
  r->state = RUDA__TUNE_EXCLUDED;
}

/* What tuning keeps of argument buffer i besides its handle. */
typedef struct scratch_buf {
  bool own;   /* bufs[i] is a scratch buffer */
  void *orig; /* a read-write buffer: its contents */
  void *out;  /* a written buffer: the candidate's output (check) */
  void *ref;  /* a written buffer: the reference's output */
  uint64_t size;
} scratch_buf_t;

typedef struct scratch {
  ruda_handle_t *bufs; /* the arguments' buffers while tuning */
  scratch_buf_t *b;    /* n of them */
  size_t n;
} scratch_t;

static void scratch_free(scratch_t *s) {
  for (size_t i = 0; s->b && i < s->n; i++) {
    if (s->b[i].own) ruda_handle_release(&s->bufs[i]);
    ruda__free(s->b[i].orig);
    ruda__free(s->b[i].out);
    ruda__free(s->b[i].ref);
  }
  ruda__free(s->bufs);
  ruda__free(s->b);
}

static ruda_status_t scratch_make(ruda_tune_op_t *op, const ruda_tune_args_t *args, bool check,
                                  scratch_t *s) {
  ruda_client_t *tc = op->tune_client;
  memset(s, 0, sizeof *s);
  size_t n = args->num_buffers;
  s->n = n;
  if (n == 0) return NULL;
  s->bufs = ruda__calloc(n, sizeof *s->bufs);
  s->b = ruda__calloc(n, sizeof *s->b);
  if (!s->bufs || !s->b)
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "autotune: out of memory");
  for (size_t i = 0; i < n; i++) {
    ruda_tune_access_t a = access_of(op, i);
    uint64_t size = ruda_handle_size_in_used(&args->buffers[i]);
    scratch_buf_t *sb = &s->b[i];
    sb->size = size;
    if (a == RUDA_TUNE_READ) {
      s->bufs[i] = args->buffers[i];
      continue;
    }
    if (check && a != RUDA_TUNE_WORKSPACE) {
      sb->out = ruda__malloc(size ? size : 1);
      sb->ref = ruda__malloc(size ? size : 1);
      if (!sb->out || !sb->ref)
        return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "autotune: out of memory");
    }
    ruda_status_t st;
    if (a == RUDA_TUNE_READ_WRITE) {
      sb->orig = ruda__malloc(size ? size : 1);
      if (!sb->orig)
        return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "autotune: out of memory");
      st = ruda_client_read(tc, &args->buffers[i], sb->orig, size);
      if (!st) st = ruda_client_create_buffer(tc, sb->orig, size, &s->bufs[i]);
    } else {
      /* Written now (zeros), so that no candidate's run pays for the first
       * touch of its pages. */
      void *zeros = ruda__calloc(1, size ? size : 1);
      if (!zeros)
        return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "autotune: out of memory");
      st = ruda_client_create_buffer(tc, zeros, size, &s->bufs[i]);
      ruda__free(zeros);
    }
    if (st) return st;
    sb->own = true;
  }
  return NULL;
}

/* Restores the read-write scratch buffers to the caller's contents. */
static ruda_status_t scratch_restore(ruda_tune_op_t *op, scratch_t *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->b[i].orig) {
      ruda_status_t st =
          ruda_client_write(op->tune_client, &s->bufs[i], s->b[i].orig, s->b[i].size);
      if (st) return st;
    }
  return NULL;
}

/* Compares the written buffers with the reference's; NULL when equal
 * within the tolerance, else a description into `why`. */
static bool outputs_match(const ruda_tune_op_t *op, const scratch_t *s, char *why, size_t cap) {
  for (size_t b = 0; b < s->n; b++) {
    const scratch_buf_t *sb = &s->b[b];
    if (!sb->out) continue;
    if (op->set.check_elem == RUDA_ELEM_F32 || op->set.check_elem == RUDA_ELEM_F64) {
      bool f32 = op->set.check_elem == RUDA_ELEM_F32;
      size_t n = sb->size / (f32 ? 4 : 8);
      for (size_t i = 0; i < n; i++) {
        double got, want;
        if (f32) {
          float g, w;
          memcpy(&g, (const char *)sb->out + i * 4, 4);
          memcpy(&w, (const char *)sb->ref + i * 4, 4);
          got = g;
          want = w;
        } else {
          memcpy(&got, (const char *)sb->out + i * 8, 8);
          memcpy(&want, (const char *)sb->ref + i * 8, 8);
        }
        if (isnan(got) && isnan(want)) continue;
        if (!(fabs(got - want) <= op->set.check_atol + op->set.check_rtol * fabs(want))) {
          snprintf(why, cap, "buffer %zu element %zu is %g, the reference gives %g", b, i, got,
                   want);
          return false;
        }
      }
    } else if (memcmp(sb->out, sb->ref, sb->size) != 0) {
      size_t i = 0;
      while (((const char *)sb->out)[i] == ((const char *)sb->ref)[i]) i++;
      snprintf(why, cap, "buffer %zu differs from the reference at byte %zu", b, i);
      return false;
    }
  }
  return true;
}

/* The written buffers' contents into their `ref` copies (the reference
 * candidate) or their `out` copies. */
static ruda_status_t read_outputs(ruda_tune_op_t *op, scratch_t *s, bool into_ref) {
  for (size_t i = 0; i < s->n; i++)
    if (s->b[i].out) {
      ruda_status_t st = ruda_client_read(op->tune_client, &s->bufs[i],
                                          into_ref ? s->b[i].ref : s->b[i].out, s->b[i].size);
      if (st) return st;
    }
  return NULL;
}

typedef struct measure_ctx {
  const ruda_tune_op_t *op;
  size_t cand;
  const ruda_tune_args_t *args;
} measure_ctx_t;

static ruda_status_t measured_launch(ruda_client_t *c, void *arg) {
  measure_ctx_t *m = arg;
  return launch_cand(m->op, c, m->cand, m->args);
}

/* After a launch of candidate `r` that returned `st` (consumed): waits
 * for its work; a refused launch or failed work excludes the candidate
 * (false). */
static bool settled(ruda_client_t *tc, ruda_status_t st, ruda__tune_result_t *r) {
  ruda_status_t done = ruda_client_sync(tc);
  if (st && done) {
    ruda_status_free(st);
    reason_of(r, "failed on the device", done);
  } else if (st) {
    reason_of(r, "refused at launch", st);
  } else if (done) {
    reason_of(r, "failed on the device", done);
  }
  return r->state == RUDA__TUNE_MEASURED;
}

/* The first run of candidate i: refused, failing, or wrong excludes it.
 * With `timed`, the run is measured and its time is the candidate's
 * first sample. */
static void try_candidate(ruda_tune_op_t *op, size_t i, const ruda_tune_args_t *sargs,
                          scratch_t *s, bool check, bool timed, bool *have_ref,
                          ruda__tune_result_t *r) {
  ruda_client_t *tc = op->tune_client;
  ruda_status_t st = scratch_restore(op, s);
  if (st) {
    reason_of(r, "could not prepare its scratch buffers", st);
    return;
  }
  ruda_profile_duration_t dur;
  if (timed) {
    measure_ctx_t m = {op, i, sargs};
    st = ruda_client_profile(tc, op->cands[i].name, measured_launch, &m, &dur);
  } else {
    st = launch_cand(op, tc, i, sargs);
  }
  if (!settled(tc, st, r)) return;
  if (timed) r->samples[r->num_samples++] = (double)ruda_profile_duration_ns(dur);
  if (!check) return;
  bool is_ref = i == op->set.check_reference;
  st = read_outputs(op, s, is_ref);
  if (st) {
    reason_of(r, "its output could not be read", st);
    return;
  }
  if (is_ref) {
    *have_ref = true;
    return;
  }
  if (!*have_ref) return;
  char why[200];
  if (!outputs_match(op, s, why, sizeof why)) {
    snprintf(r->reason, sizeof r->reason, "fails the check against '%s': %s",
             op->cands[op->set.check_reference].name, why);
    r->state = RUDA__TUNE_EXCLUDED;
  }
}

/* Whether candidate i's kernel runs without being compiled first: on the
 * CPU, a CPU function or a portable entry with its natively compiled
 * function. A kernel of text alone (ruda_kernel_from_text, _from_file),
 * and every kernel on a GPU, is compiled (or loaded) at its first launch,
 * and that run says nothing of its speed. */
static bool code_ready(const ruda_tune_op_t *op, size_t i) {
  if (op->device.type_id != RUDA_DEVICE_TYPE_CPU) return false;
  const ruda_kernel_desc_t *d = ruda_kernel_desc(op->cands[i].kernel);
  for (size_t j = 0; j < d->num_code; j++) {
    const ruda_kernel_code_t *c = &d->code[j];
    if (c->format == RUDA_KERNEL_FORMAT_CPU ||
        (c->format == RUDA_KERNEL_FORMAT_PORTABLE && c->cpu_fn != NULL))
      return true;
  }
  return false;
}

/* Runs the candidates still measured in turn, unmeasured, for
 * RUDA__TUNE_SETTLE_MS; one that fails is excluded. */
static void settle(ruda_tune_op_t *op, const ruda_tune_args_t *sargs, ruda__tune_result_t *r) {
  double t0 = now_ms();
  bool any = true;
  while (any && now_ms() - t0 < RUDA__TUNE_SETTLE_MS) {
    any = false;
    for (size_t i = 0; i < op->num_cands; i++)
      if (r[i].state == RUDA__TUNE_MEASURED && !r[i].dropped &&
          settled(op->tune_client, launch_cand(op, op->tune_client, i, sargs), &r[i]))
        any = true;
  }
}

/* Tunes `key` (bucket `bucket`): fills r[] and the decision's ranking. */
static ruda_status_t tune_key(ruda_tune_op_t *op, const ruda_tune_args_t *args,
                              const ruda_tune_key_t *key, ruda__tune_result_t *r,
                              decision_t *d, double *spent_ms) {
  double t0 = now_ms();
  ruda_client_t *tc = op->tune_client;
  bool check = op->set.check_reference != RUDA_TUNE_NO_CHECK;
  scratch_t s;
  ruda_status_t st = scratch_make(op, args, check, &s);
  if (st) {
    scratch_free(&s);
    return st;
  }
  ruda_tune_args_t sargs = *args;
  sargs.buffers = s.bufs;
  memset(r, 0, op->num_cands * sizeof *r);
  bool have_ref = false;
  /* At one warm-up, a candidate's first run is measured and is its first
   * sample when its code is ready: compiled in, or compiled by a launch of
   * one ruda before (a candidate with its own launch function cannot be
   * launched smaller: its first run compiles it and is not measured). */
  bool first_is_sample = op->plan.warmups == 1 && !g_timer;
  double compile_ms = 0; /* the launches of one ruda that compiled */
  /* The reference first, so every other candidate can be checked. */
  size_t order[RUDA__TUNE_MAX_CANDIDATES], n = 0;
  if (check) order[n++] = op->set.check_reference;
  for (size_t i = 0; i < op->num_cands; i++)
    if (!check || i != op->set.check_reference) order[n++] = i;
  for (size_t o = 0; o < n; o++) {
    size_t i = order[o];
    if (op->cands[i].applies && !op->cands[i].applies(key, op->cands[i].param)) {
      r[i].state = RUDA__TUNE_NOT_APPLICABLE;
      continue;
    }
    bool ready = code_ready(op, i);
    if (!ready && !op->cands[i].launch) {
      double c0 = now_ms();
      bool ok = settled(tc, launch_cand_as(op, tc, i, &sargs, true), &r[i]);
      compile_ms += now_ms() - c0;
      if (!ok) continue;
      ready = true;
    }
    try_candidate(op, i, &sargs, &s, check, first_is_sample && ready, &have_ref, &r[i]);
    for (uint32_t w = 1; w < op->plan.warmups && r[i].state == RUDA__TUNE_MEASURED; w++)
      settled(tc, launch_cand(op, tc, i, &sargs), &r[i]);
  }
  /* Right after compiles (on the CPU the C compiler's processes) the
   * machine runs every kernel slower and at random for a while: samples
   * taken then, 30 us runs all scored 34-41 us instead of 28-33, could
   * not tell apart candidates 10-15% apart. The candidates run, unmeasured,
   * for RUDA__TUNE_SETTLE_MS first. */
  if (compile_ms >= RUDA__TUNE_SETTLE_MS && !g_timer) settle(op, &sargs, r);
  /* The budget bounds the repetitions: every candidate's first run (which
   * compiles it, and checks it) comes before, and compiles never count. */
  double t_measure = now_ms();
  if (first_is_sample && op->plan.early_drop)
    ruda__tune_drop_slow(r, op->num_cands, RUDA__TUNE_DROP_FACTOR_FIRST);
  bool spent = false;
  /* The level's repetitions; short kernels get more rounds (up to the
   * samples kept) while the rounds' measured time stays short: a noisy
   * 30 us run costs little to measure again. */
  double measured_ns = 0;
  for (uint32_t rep = 0;
       !spent && (rep < op->plan.reps ||
                  (rep < RUDA__TUNE_MAX_SAMPLES && measured_ns < RUDA__TUNE_SHORT_NS));
       rep++) {
    uint32_t round[RUDA__TUNE_MAX_CANDIDATES];
    size_t in_round = ruda__tune_round_order(r, op->num_cands, round);
    for (size_t o = 0; o < in_round; o++) {
      size_t i = round[o];
      if (r[i].num_samples > rep) continue;
      if (!ruda__tune_budget_allows(&r[i], now_ms() - t_measure, op->set.budget_ms)) {
        spent = true;
        break;
      }
      double ns;
      if (g_timer) {
        ns = g_timer(op->name, op->cands[i].name, rep);
      } else {
        /* A short run is measured right after a run of the same candidate,
         * as a program calling the operation runs it: after another
         * candidate's run, 30 us kernels ranked otherwise (the one
         * measured fastest so ran 0.87-0.93x of the best back to back). */
        if (ruda__tune_fastest(&r[i]) < RUDA__TUNE_WARM_NS &&
            !settled(tc, launch_cand(op, tc, i, &sargs), &r[i]))
          continue;
        measure_ctx_t m = {op, i, &sargs};
        ruda_profile_duration_t dur;
        st = ruda_client_profile(tc, op->cands[i].name, measured_launch, &m, &dur);
        if (st) {
          ruda_status_free(ruda_client_sync(tc));
          reason_of(&r[i], "failed while measured", st);
          continue;
        }
        ns = (double)ruda_profile_duration_ns(dur);
      }
      measured_ns += ns;
      if (r[i].num_samples < RUDA__TUNE_MAX_SAMPLES) r[i].samples[r[i].num_samples++] = ns;
    }
    /* Dropping saves time only where runs are long; among short ones a
     * burst of load over a few rounds would drop a close contender. */
    if (op->plan.early_drop && measured_ns >= RUDA__TUNE_SHORT_NS)
      ruda__tune_drop_slow(r, op->num_cands,
                           rep == 0 ? RUDA__TUNE_DROP_FACTOR_FIRST : RUDA__TUNE_DROP_FACTOR);
  }
  for (size_t i = 0; i < op->num_cands; i++) ruda__tune_score(&r[i]);
  uint32_t rank[RUDA__TUNE_MAX_CANDIDATES];
  d->num_rank = (uint32_t)ruda__tune_rank(r, op->num_cands, rank);
  memcpy(d->rank, rank, d->num_rank * sizeof rank[0]);
  if (!d->num_rank)
    snprintf(d->why_empty, sizeof d->why_empty, "every candidate was excluded or does not apply");
  scratch_free(&s);
  /* The scratch buffers' pages go back: the tuning stream holds nothing
   * between keys. */
  ruda_status_free(ruda_client_memory_cleanup(tc));
  *spent_ms = now_ms() - t0;
  return NULL;
}

/* ---- the cache record ---- */

static void record_from(const ruda_tune_op_t *op, const decision_t *d,
                        const ruda__tune_result_t *r, double spent_ms, ruda__tune_record_t *rec) {
  memset(rec, 0, sizeof *rec);
  snprintf(rec->version, sizeof rec->version, "%s", ruda_version_string());
  snprintf(rec->device, sizeof rec->device, "%s", op->device_ident);
  snprintf(rec->op, sizeof rec->op, "%s", op->name);
  snprintf(rec->candidates, sizeof rec->candidates, "%s", op->cand_hash);
  rec->bucket = d->bucket;
  key_text(op, &d->bucket, rec->key_text, sizeof rec->key_text);
  rec->num_rank = d->num_rank;
  for (uint32_t i = 0; i < d->num_rank; i++)
    snprintf(rec->rank[i], sizeof rec->rank[i], "%s", op->cands[d->rank[i]].name);
  size_t at = 0;
  for (size_t i = 0; r && i < op->num_cands && at < sizeof rec->scores; i++) {
    int w;
    if (r[i].state == RUDA__TUNE_EXCLUDED)
      w = snprintf(rec->scores + at, sizeof rec->scores - at, "%s%s=excluded(%s)", at ? " " : "",
                   op->cands[i].name, r[i].reason);
    else if (r[i].state == RUDA__TUNE_NOT_APPLICABLE)
      w = snprintf(rec->scores + at, sizeof rec->scores - at, "%s%s=not-applicable",
                   at ? " " : "", op->cands[i].name);
    else
      w = snprintf(rec->scores + at, sizeof rec->scores - at, "%s%s=%.4gms(+%.0f%%)%s",
                   at ? " " : "", op->cands[i].name, r[i].score / 1e6, r[i].spread * 100,
                   r[i].dropped ? "dropped" : "");
    if (w < 0) break;
    at += (size_t)w;
  }
  if (at >= sizeof rec->scores) rec->scores[sizeof rec->scores - 1] = '\0';
  one_line(rec->scores);
  rec->spent_ms = spent_ms;
}

/* A decision from the cache record at `path`, or NULL (absent, stale,
 * corrupt: logged). */
static decision_t *from_cache(ruda_tune_op_t *op, const char *path,
                              const ruda_tune_key_t *bucket, const ruda_tune_key_t *key,
                              bool *stale) {
  *stale = false;
  ruda__tune_record_t *rec = ruda__malloc(sizeof *rec);
  if (!rec) return NULL;
  decision_t *d = NULL;
  int got = ruda__tune_cache_read(path, rec);
  if (got == 1) {
    const char *why = NULL;
    if (strcmp(rec->version, ruda_version_string()) != 0) why = "written by another ruda version";
    else if (strcmp(rec->candidates, op->cand_hash) != 0) why = "made for another candidate set";
    else if (strcmp(rec->device, op->device_ident) != 0 || strcmp(rec->op, op->name) != 0 ||
             !key_eq(&rec->bucket, bucket))
      why = "made for another device, operation or key";
    if (!why) {
      d = ruda__calloc(1, sizeof *d);
      if (d) {
        for (uint32_t i = 0; i < rec->num_rank && !why; i++) {
          size_t j = 0;
          while (j < op->num_cands && strcmp(op->cands[j].name, rec->rank[i]) != 0) j++;
          if (j == op->num_cands) why = "names a candidate the operation does not have";
          else d->rank[d->num_rank++] = (uint32_t)j;
        }
        if (why) {
          ruda__free(d);
          d = NULL;
        }
      }
    }
    if (why) {
      *stale = true;
      if (ruda_log_enabled(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC)) {
        char msg[RUDA_CONFIG_PATH_MAX + 600], line[2 * RUDA_CONFIG_PATH_MAX + 1400];
        snprintf(msg, sizeof msg,
                 "tune cache entry %s ignored: %s (version %s); the key is tuned again and the "
                 "entry replaced",
                 path, why, rec->version);
        text_t b = {line, 0, sizeof line};
        tx_head(&b, op);
        tx(&b, ",\"warning\":");
        tx_str(&b, msg);
        tx(&b, "}");
        ruda_log(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC, "%s", line);
      }
    } else if (d) {
      char extra[2300];
      text_t b = {extra, 0, sizeof extra};
      tx(&b, "\"cached_scores\":");
      tx_str(&b, rec->scores);
      d->bucket = *bucket;
      log_decision(op, key, bucket, "cache", NULL, d, rec->spent_ms, extra);
    }
  }
  ruda__free(rec);
  return d;
}

/* Under no lock: the decision of `bucket`, tuned or read on a miss. */
static ruda_status_t decide(ruda_tune_op_t *op, const ruda_tune_args_t *args,
                            const ruda_tune_key_t *key, const ruda_tune_key_t *bucket,
                            uint64_t h, bool force, double *spent_ms, decision_t **out) {
  pthread_mutex_lock(&op->lock);
  decision_t *d = force ? NULL : lookup(op, bucket, h);
  if (d) {
    pthread_mutex_unlock(&op->lock);
    *out = d;
    return NULL;
  }
  char path[RUDA_CONFIG_PATH_MAX + 300];
  bool cache = op->cache_dir[0] &&
               ruda__tune_cache_path(op->cache_dir, op->device_ident, op->name, bucket, path,
                                     sizeof path);
  bool stale = false;
  if (cache && !force) d = from_cache(op, path, bucket, key, &stale);
  if (!d) {
    ruda__tune_result_t *r = ruda__calloc(op->num_cands, sizeof *r);
    d = ruda__calloc(1, sizeof *d);
    if (!r || !d) {
      ruda__free(r);
      ruda__free(d);
      pthread_mutex_unlock(&op->lock);
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "autotune: out of memory");
    }
    d->bucket = *bucket;
    double spent = 0;
    ruda_status_t st = tune_key(op, args, key, r, d, &spent);
    if (spent_ms) *spent_ms = spent;
    if (st) {
      ruda__free(r);
      ruda__free(d);
      pthread_mutex_unlock(&op->lock);
      return st;
    }
    log_decision(op, key, bucket, stale ? "tuned (stale cache entry replaced)" : "tuned", r, d,
                 spent, NULL);
    if (cache && d->num_rank) {
      ruda__tune_record_t *rec = ruda__malloc(sizeof *rec);
      if (rec) {
        record_from(op, d, r, spent, rec);
        ruda__tune_cache_write(op->cache_dir, path, rec);
        ruda__free(rec);
      }
    }
    ruda__free(r);
  }
  d->bucket = *bucket;
  d->hash = h;
  publish(op, d);
  pthread_mutex_unlock(&op->lock);
  *out = d;
  return NULL;
}

/* After candidate rank[failed_pos]'s launch was refused and rank[ok_pos]
 * ran: the failing ones move to the end of the ranking. */
static void correct(ruda_tune_op_t *op, const decision_t *d, const ruda_tune_key_t *key,
                    size_t ok_pos, const char *error) {
  pthread_mutex_lock(&op->lock);
  decision_t *cur = lookup(op, &d->bucket, d->hash);
  if (cur == d) {
    decision_t *nd = ruda__malloc(sizeof *nd);
    if (nd) {
      *nd = *d;
      nd->num_rank = 0;
      for (size_t i = ok_pos; i < d->num_rank; i++) nd->rank[nd->num_rank++] = d->rank[i];
      for (size_t i = 0; i < ok_pos; i++) nd->rank[nd->num_rank++] = d->rank[i];
      publish(op, nd);
      char extra[600];
      text_t b = {extra, 0, sizeof extra};
      tx(&b, "\"failed\":");
      tx_str(&b, op->cands[d->rank[0]].name);
      tx(&b, ",\"error\":");
      tx_str(&b, error);
      log_decision(op, key, &d->bucket, "fallback", NULL, nd, 0, extra);
      char path[RUDA_CONFIG_PATH_MAX + 300];
      if (op->cache_dir[0] && ruda__tune_cache_path(op->cache_dir, op->device_ident, op->name,
                                                    &d->bucket, path, sizeof path)) {
        ruda__tune_record_t *rec = ruda__malloc(sizeof *rec);
        if (rec) {
          record_from(op, nd, NULL, 0, rec);
          snprintf(rec->scores, sizeof rec->scores, "corrected: %s refused at launch",
                   op->cands[d->rank[0]].name);
          ruda__tune_cache_write(op->cache_dir, path, rec);
          ruda__free(rec);
        }
      }
    }
  }
  pthread_mutex_unlock(&op->lock);
}

/* ---- calls ---- */

static ruda_status_t check_call(const ruda_tune_op_t *op, ruda_client_t *c,
                                const ruda_tune_args_t *args, const char *fn) {
  if (!op || !c || !args)
    return invalid("%s: NULL %s", fn, !op ? "op" : !c ? "client" : "args");
  if (!ruda_device_id_eq(ruda_client_device(c), op->device)) {
    char a[32];
    ruda_device_id_format(ruda_client_device(c), a, sizeof a);
    return invalid("%s: operation '%s' was made for %s; the client is of %s", fn, op->name,
                   op->device_name, a);
  }
  if ((args->num_buffers && !args->buffers) || (args->num_scalars && !args->scalars) ||
      (args->num_sizes && !args->sizes))
    return invalid("%s: operation '%s': args has a count with a NULL array", fn, op->name);
  return NULL;
}

static ruda_status_t make_key(const ruda_tune_op_t *op, const ruda_tune_args_t *args,
                              ruda_tune_key_t *key) {
  memset(key, 0, sizeof *key);
  if (op->set.key) {
    ruda_status_t st = op->set.key(args, op->set.key_ctx, key);
    if (st) {
      char *t = ruda_status_to_string(st);
      ruda_status_free(st);
      ruda_status_t e = invalid("operation '%s': its key function failed: %s", op->name,
                                t ? t : "error");
      free(t);
      return e;
    }
  } else {
    if (args->num_sizes < op->num_dims)
      return invalid("operation '%s': the call gives %zu sizes; its key takes %zu", op->name,
                     args->num_sizes, op->num_dims);
    key->len = (uint32_t)op->num_dims;
    memcpy(key->v, args->sizes, op->num_dims * sizeof key->v[0]);
  }
  if (key->len != op->num_dims)
    return invalid("operation '%s': the key function made a key of %u values; the operation "
                   "declares %zu", op->name, key->len, op->num_dims);
  return NULL;
}

/* Checks the call (`fn` names it), then finds its decision, or a fixed
 * candidate (off, pinned): *fixed. */
static ruda_status_t resolve(ruda_tune_op_t *op, ruda_client_t *client,
                             const ruda_tune_args_t *args, const char *fn, ruda_tune_key_t *key,
                             decision_t **d, int64_t *fixed) {
  *d = NULL;
  ruda_status_t checked = check_call(op, client, args, fn);
  if (checked) return checked;
  *fixed = -1;
  if (op->pinned >= 0) {
    *fixed = op->pinned;
    return NULL;
  }
  if (op->level == RUDA_AUTOTUNE_OFF) {
    *fixed = op->set.default_candidate;
    return NULL;
  }
  ruda_status_t st = make_key(op, args, key);
  if (st) return st;
  ruda_tune_key_t bucket;
  ruda__tune_bucket_key(key, op->dims, op->plan.bucket_power, &bucket);
  uint64_t h = key_hash(&bucket);
  *d = lookup(op, &bucket, h);
  if (*d) return NULL;
  return decide(op, args, key, &bucket, h, false, NULL, d);
}

RUDA__HOT ruda_status_t ruda_tune_op_launch(ruda_tune_op_t *op, ruda_client_t *client,
                                            const ruda_tune_args_t *args) {
  ruda_tune_key_t key;
  decision_t *d;
  int64_t fixed;
  ruda_status_t st = resolve(op, client, args, "ruda_tune_op_launch", &key, &d, &fixed);
  if (st) return st;
  if (fixed >= 0) return launch_cand(op, client, (size_t)fixed, args);
  ruda_status_t last = NULL;
  for (size_t i = 0; i < d->num_rank; i++) {
    const cand_t *k = &op->cands[d->rank[i]];
    if (k->applies && !k->applies(&key, k->param)) continue;
    st = launch_cand(op, client, d->rank[i], args);
    if (!st) {
      if (last) {
        char *t = ruda_status_to_string(last);
        correct(op, d, &key, i, t ? t : "error");
        free(t);
        ruda_status_free(last);
      }
      return NULL;
    }
    ruda_status_free(last);
    last = st;
  }
  if (last) return last;
  char kt[200];
  key_text(op, &key, kt, sizeof kt);
  return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                            "operation '%s' on %s: no candidate can run the key %s (%s)",
                            op->name, op->device_name, kt,
                            d->num_rank ? "none applies to it" : d->why_empty);
}

ruda_status_t ruda_tune_op_select(ruda_tune_op_t *op, ruda_client_t *client,
                                  const ruda_tune_args_t *args, size_t *out_index,
                                  const char **out_name) {
  ruda_tune_key_t key;
  decision_t *d;
  int64_t fixed;
  ruda_status_t st = resolve(op, client, args, "ruda_tune_op_select", &key, &d, &fixed);
  if (st) return st;
  size_t pick = SIZE_MAX;
  if (fixed >= 0) {
    pick = (size_t)fixed;
  } else {
    for (size_t i = 0; i < d->num_rank && pick == SIZE_MAX; i++) {
      const cand_t *k = &op->cands[d->rank[i]];
      if (!k->applies || k->applies(&key, k->param)) pick = d->rank[i];
    }
  }
  if (pick == SIZE_MAX) {
    char kt[200];
    key_text(op, &key, kt, sizeof kt);
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "operation '%s' on %s: no candidate can run the key %s", op->name,
                              op->device_name, kt);
  }
  if (out_index) *out_index = pick;
  if (out_name) *out_name = op->cands[pick].name;
  return NULL;
}

ruda_status_t ruda_tune_op_tune(ruda_tune_op_t *op, ruda_client_t *client,
                                const ruda_tune_args_t *args, bool force,
                                double *out_spent_ms) {
  if (out_spent_ms) *out_spent_ms = 0;
  ruda_status_t st = check_call(op, client, args, "ruda_tune_op_tune");
  if (st) return st;
  if (op->pinned >= 0 || op->level == RUDA_AUTOTUNE_OFF) return NULL;
  ruda_tune_key_t key, bucket;
  st = make_key(op, args, &key);
  if (st) return st;
  ruda__tune_bucket_key(&key, op->dims, op->plan.bucket_power, &bucket);
  uint64_t h = key_hash(&bucket);
  decision_t *d;
  if (!force && lookup(op, &bucket, h)) return NULL;
  return decide(op, args, &key, &bucket, h, force, out_spent_ms, &d);
}

ruda_status_t ruda_tune_op_launch_candidate(ruda_tune_op_t *op, ruda_client_t *client,
                                            const ruda_tune_args_t *args, size_t index) {
  ruda_status_t st = check_call(op, client, args, "ruda_tune_op_launch_candidate");
  if (st) return st;
  if (index >= op->num_cands)
    return invalid("ruda_tune_op_launch_candidate: operation '%s' has %zu candidates; index %zu",
                   op->name, op->num_cands, index);
  return launch_cand(op, client, index, args);
}
