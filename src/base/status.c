/* The error model: see include/ruda/status.h. */
#include "ruda/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/backtrace.h"
#include "base/json.h"
#include "base/status_internal.h"
#include "base/status_kinds.h"

static const char k_no_reason[] = "No reason provided for the error";
/* What a static error (returned when its own allocation failed) says in
 * place of its lost reason or cause: what happened. */
static const char k_static_reason[] =
    "out of host memory (the details of this error could not be allocated)";

static const char *missing_reason(ruda_status_t s) {
  return s->is_static ? k_static_reason : k_no_reason;
}

/* Payload shapes: which fields a kind carries and how it serializes. */
typedef enum {
  SH_NONE,        /* {} */
  SH_REASON,      /* {"reason": ...} */
  SH_DESC,        /* {"description": ...}, stored in `reason` */
  SH_CAUSE,       /* the wrapped error */
  SH_LIMIT,       /* {"requested": n, "max": n} */
  SH_DIM,         /* {"requested": [x,y,z], "max": [x,y,z]} */
  SH_SIZE,        /* {"size": n} */
  SH_SIZE_REASON, /* {"size": n, "reason": ...} */
  SH_LIST,        /* {"errors": [...]} */
  SH_CONFIG,      /* {"reason", "file", "line", "key"} */
} shape_t;

/* The text that introduces a captured backtrace after the message, per
 * kind (BT_NONE: not printed). */
typedef enum { BT_NONE, BT_COLON, BT_PLAIN, BT_NL } trailer_t;

static const char *const k_trailers[] = {
    [BT_NONE] = NULL,
    [BT_COLON] = "\nBacktrace:\n",
    [BT_PLAIN] = "\nBacktrace\n",
    [BT_NL] = "\n",
};

typedef struct {
  ruda_error_kind_t kind;
  const char *name;
  ruda_error_family_t family;
  const char *variant;
  shape_t shape;
  const char *text;
  trailer_t trailer;
  ruda_error_kind_t default_cause;
} kind_info_t;

enum {
#define X(k, f, v, sh, t, bt, dc) KI_##k,
  RUDA__ERROR_KINDS(X)
#undef X
  KI_COUNT
};

static const kind_info_t k_kinds[KI_COUNT] = {
#define X(k, f, v, sh, t, bt, dc) \
  {k, RUDA__FAMILY_NAME_##f "::" v, RUDA_FAMILY_##f, v, sh, t, bt, (ruda_error_kind_t)(dc)},
    RUDA__ERROR_KINDS(X)
#undef X
};

/* The errors handed out when memory is exhausted: one per kind, never
 * written after initialization. */
static struct ruda_status g_static[KI_COUNT] = {
#define X(k, f, v, sh, t, bt, dc) {.kind = k, .is_static = true},
    RUDA__ERROR_KINDS(X)
#undef X
};

static int kind_index(ruda_error_kind_t kind) {
  switch (kind) {
#define X(k, f, v, sh, t, bt, dc) \
  case k:                            \
    return KI_##k;
    RUDA__ERROR_KINDS(X)
#undef X
    default:
      return -1;
  }
}

static const kind_info_t *info_of(ruda_error_kind_t kind) {
  int i = kind_index(kind);
  return i < 0 ? NULL : &k_kinds[i];
}

/* The row errors of `kind` are made from. Unknown kinds (and RUDA_OK,
 * which is not an error) become InvalidArgument: creating an error never
 * fails. */
static const kind_info_t *kind_info(ruda_error_kind_t kind) {
  int i = kind_index(kind);
  return &k_kinds[i < 0 ? KI_RUDA_ERR_INVALID_ARGUMENT : i];
}

static ruda_status_t static_of(const kind_info_t *ki) {
  return &g_static[ki - k_kinds];
}

ruda_status_t ruda__status_static(ruda_error_kind_t kind) {
  return static_of(kind_info(kind));
}

/* ---- Creation ---------------------------------------------------------- */

/* A fresh error of the row `ki`; NULL when memory is exhausted. */
static ruda_status_t status_new(const kind_info_t *ki) {
  ruda_status_t s = ruda__calloc(1, sizeof *s);
  if (!s) return NULL;
  s->kind = ki->kind;
  if (ki->shape != SH_CAUSE && ruda_backtrace_enabled()) {
    /* Skip status_new and its caller unless "full". */
    s->backtrace = ruda__backtrace_capture(ruda__backtrace_full() ? 0 : 2);
  }
  return s;
}

static void status_free_one(ruda_status_t s) {
  ruda__free(s->reason);
  for (size_t i = 0; i < s->count; i++) ruda_status_free(s->errors[i]);
  ruda__free(s->errors);
  ruda__free(s->vendor_call);
  ruda__free(s->vendor_code_name);
  ruda__free(s->file);
  ruda__free(s->key);
  ruda__free(s->backtrace);
  ruda__free(s->kernel);
  ruda__free(s);
}

RUDA__HOT
void ruda_status_free(ruda_status_t s) {
  /* Iterative along the cause chain, recursive only into unhealthy lists. */
  while (s && !s->is_static) {
    ruda_status_t cause = s->cause;
    status_free_one(s);
    s = cause;
  }
}

/* An error of the row `ki` with the formatted reason. */
static ruda_status_t with_reason(const kind_info_t *ki, const char *fmt,
                                 va_list ap) {
  ruda_status_t s = status_new(ki);
  if (s && fmt) {
    s->reason = ruda__vasprintf(fmt, ap);
    if (!s->reason) {
      ruda_status_free(s);
      s = NULL;
    }
  }
  return s ? s : static_of(ki);
}

ruda_status_t ruda_status_createv(ruda_error_kind_t kind, const char *fmt,
                                  va_list ap) {
  const kind_info_t *ki = kind_info(kind);
  if (ki->shape == SH_CAUSE && ki->default_cause) {
    /* A wrapping kind built from text: the text goes into the natural
     * leaf of the wrapped family (Launch -> LaunchError::Unknown...). */
    ruda_status_t inner = with_reason(kind_info(ki->default_cause), fmt, ap);
    return ruda_status_wrap(ki->kind, inner);
  }
  return with_reason(ki, fmt, ap);
}

ruda_status_t ruda_status_create(ruda_error_kind_t kind, const char *fmt,
                                 ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda_status_t s = ruda_status_createv(kind, fmt, ap);
  va_end(ap);
  return s;
}

ruda_status_t ruda_status_resource_limit(ruda_error_kind_t kind,
                                         uint64_t requested, uint64_t max) {
  const kind_info_t *ki = kind_info(kind);
  ruda_status_t s = status_new(ki);
  if (!s) return static_of(ki);
  s->requested = requested;
  s->max = max;
  return s;
}

static ruda_status_t with_dims(const kind_info_t *ki, const uint32_t requested[3],
                               const uint32_t max[3]) {
  ruda_status_t s = status_new(ki);
  if (!s) return static_of(ki);
  for (int i = 0; i < 3; i++) {
    s->dims_requested[i] = requested ? requested[i] : 0;
    s->dims_max[i] = max ? max[i] : 0;
  }
  return s;
}

ruda_status_t ruda_status_ruda_dim(const uint32_t requested[3],
                                   const uint32_t max[3]) {
  return with_dims(&k_kinds[KI_RUDA_ERR_RESOURCE_RUDA_DIM], requested, max);
}

ruda_status_t ruda_status_ruda_count(const uint32_t requested[3],
                                     const uint32_t max[3]) {
  return with_dims(&k_kinds[KI_RUDA_ERR_RESOURCE_RUDA_COUNT], requested, max);
}

ruda_status_t ruda_status_size(ruda_error_kind_t kind, uint64_t size) {
  const kind_info_t *ki = kind_info(kind);
  ruda_status_t s = status_new(ki);
  if (!s) return static_of(ki);
  s->size = size;
  return s;
}

ruda_status_t ruda__status_size_reason(ruda_error_kind_t kind, uint64_t size, const char *fmt,
                                       ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda_status_t s = with_reason(kind_info(kind), fmt, ap);
  va_end(ap);
  if (!s->is_static) s->size = size;
  return s;
}

/* Text of `s` without its backtrace, in a ruda__malloc()ed string. */
static char *text_of(ruda_status_t s);

/* An error of `kind` that restates `s` (owned) when no variant of `kind`
 * can hold it: the text of `s` becomes the reason, and the backtrace and
 * vendor details of `s` move over (taken off `s` before its text is made,
 * so they are neither printed twice nor lost). Never NULL. */
static ruda_status_t restate(ruda_error_kind_t kind, ruda_status_t s) {
  ruda_status_t out = ruda__calloc(1, sizeof *out);
  if (out) {
    out->kind = kind;
    if (!s->is_static) {
      out->backtrace = s->backtrace;
      out->vendor_call = s->vendor_call;
      out->vendor_code_name = s->vendor_code_name;
      out->vendor_code = s->vendor_code;
      s->backtrace = s->vendor_call = s->vendor_code_name = NULL;
    }
    out->reason = text_of(s);
  }
  ruda_status_free(s);
  if (!out || !out->reason) {
    ruda_status_free(out);
    return ruda__status_static(kind);
  }
  return out;
}

/* The variant of `family` that holds an error of family `have` as its
 * cause, or 0 where none holds it directly. */
static ruda_error_kind_t holder_of(ruda_error_family_t family, ruda_error_family_t have) {
  switch (family) {
    case RUDA_FAMILY_SERVER:
      return have == RUDA_FAMILY_LAUNCH    ? RUDA_ERR_SERVER_LAUNCH
             : have == RUDA_FAMILY_PROFILE ? RUDA_ERR_SERVER_PROFILE
             : have == RUDA_FAMILY_IO      ? RUDA_ERR_SERVER_IO
                                           : 0;
    case RUDA_FAMILY_LAUNCH:
      return have == RUDA_FAMILY_RESOURCE      ? RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES
             : have == RUDA_FAMILY_COMPILATION ? RUDA_ERR_LAUNCH_COMPILATION
             : have == RUDA_FAMILY_IO          ? RUDA_ERR_LAUNCH_IO
                                               : 0;
    case RUDA_FAMILY_PROFILE:
      return have == RUDA_FAMILY_SERVER ? RUDA_ERR_PROFILE_SERVER : 0;
    default:
      return 0;
  }
}

/* Makes `s` (owned) an error of `family`, inserting the variant that holds
 * it in that family (through the variants of another family where none
 * holds it directly). Never NULL for a non-NULL `s`. */
static ruda_status_t coerce(ruda_error_family_t family, ruda_status_t s) {
  ruda_error_family_t have = ruda_status_family(s);
  if (have == family) return s;
  ruda_error_kind_t holder = holder_of(family, have);
  if (holder) return ruda_status_wrap(holder, s);
  switch (family) {
    case RUDA_FAMILY_SERVER:
      if (have == RUDA_FAMILY_RESOURCE || have == RUDA_FAMILY_COMPILATION)
        return ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH, coerce(RUDA_FAMILY_LAUNCH, s));
      break;
    case RUDA_FAMILY_PROFILE:
      return ruda_status_wrap(RUDA_ERR_PROFILE_LAUNCH, coerce(RUDA_FAMILY_LAUNCH, s));
    case RUDA_FAMILY_IO:
      return ruda_status_wrap(RUDA_ERR_IO_EXECUTION, coerce(RUDA_FAMILY_SERVER, s));
    default:
      break;
  }
  /* No variant holds it: the family's catch-all restates it. */
  return restate(family == RUDA_FAMILY_LAUNCH        ? RUDA_ERR_LAUNCH_UNKNOWN
                 : family == RUDA_FAMILY_COMPILATION ? RUDA_ERR_COMPILATION_GENERIC
                                                     : RUDA_ERR_SERVER_GENERIC,
                 s);
}

/* The family a wrapping kind's cause must belong to. */
static ruda_error_family_t cause_family(ruda_error_kind_t kind) {
  switch (kind) {
    case RUDA_ERR_SERVER_LAUNCH:
    case RUDA_ERR_PROFILE_LAUNCH:
      return RUDA_FAMILY_LAUNCH;
    case RUDA_ERR_SERVER_PROFILE:
      return RUDA_FAMILY_PROFILE;
    case RUDA_ERR_SERVER_IO:
    case RUDA_ERR_LAUNCH_IO:
      return RUDA_FAMILY_IO;
    case RUDA_ERR_LAUNCH_COMPILATION:
      return RUDA_FAMILY_COMPILATION;
    case RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES:
      return RUDA_FAMILY_RESOURCE;
    case RUDA_ERR_PROFILE_SERVER:
    case RUDA_ERR_IO_EXECUTION:
      return RUDA_FAMILY_SERVER;
    default:
      return RUDA_FAMILY_NONE;
  }
}

ruda_status_t ruda_status_wrap(ruda_error_kind_t kind, ruda_status_t cause) {
  const kind_info_t *ki = kind_info(kind);
  kind = ki->kind;
  ruda_error_family_t want = cause_family(kind);
  if (want == RUDA_FAMILY_NONE) {
    /* Not a wrapping kind: the cause's text becomes the reason. */
    if (cause) return restate(kind, cause);
    ruda_status_t s = status_new(ki);
    return s ? s : static_of(ki);
  }
  if (cause && ruda_status_family(cause) != want) {
    if (want == RUDA_FAMILY_RESOURCE) {
      /* No ResourceLimitError can hold another error: drop the
       * TooManyResources level and keep the cause as a LaunchError. */
      return coerce(RUDA_FAMILY_LAUNCH, cause);
    }
    cause = coerce(want, cause);
  }
  ruda_status_t s = status_new(ki);
  if (!s) {
    ruda_status_free(cause);
    return static_of(ki);
  }
  s->cause = cause;
  return s;
}

ruda_status_t ruda_status_into_server(ruda_status_t s) {
  /* ruda's own kinds: a Generic restating it (coerce's catch-all). */
  return s ? coerce(RUDA_FAMILY_SERVER, s) : NULL;
}

ruda_status_t ruda_status_unhealthy(ruda_status_t *errors, size_t count) {
  const kind_info_t *ki = &k_kinds[KI_RUDA_ERR_SERVER_UNHEALTHY];
  ruda_status_t s = status_new(ki);
  size_t n = 0;
  for (size_t i = 0; errors && i < count; i++) n += errors[i] != NULL;
  if (s && n) {
    s->errors = ruda__calloc(n, sizeof *s->errors);
    if (!s->errors) {
      ruda_status_free(s);
      s = NULL;
    }
  }
  if (!s) {
    for (size_t i = 0; errors && i < count; i++) ruda_status_free(errors[i]);
    return static_of(ki);
  }
  for (size_t i = 0; errors && i < count; i++) {
    if (errors[i]) s->errors[s->count++] = ruda_status_into_server(errors[i]);
  }
  return s;
}

/* Replaces two string fields with copies of `a` and `b` (NULL clears),
 * all or nothing: when memory is exhausted both stay as they were and the
 * result is false. */
static bool set_strings(char **field_a, const char *a, char **field_b,
                        const char *b) {
  char *ca = ruda__strdup(a);
  char *cb = ruda__strdup(b);
  if ((a && !ca) || (b && !cb)) {
    ruda__free(ca);
    ruda__free(cb);
    return false;
  }
  ruda__free(*field_a);
  ruda__free(*field_b);
  *field_a = ca;
  *field_b = cb;
  return true;
}

ruda_status_t ruda_status_set_vendor(ruda_status_t s, const char *call,
                                     const char *code_name, int64_t code) {
  /* Out of memory keeps the error and leaves the details off. */
  if (s && !s->is_static &&
      set_strings(&s->vendor_call, call, &s->vendor_code_name, code_name))
    s->vendor_code = code;
  return s;
}

ruda_status_t ruda_status_set_location(ruda_status_t s, const char *file,
                                       uint32_t line, const char *key) {
  if (s && !s->is_static && set_strings(&s->file, file, &s->key, key))
    s->line = line;
  return s;
}

ruda_status_t ruda_status_set_launch(ruda_status_t s, const char *kernel,
                                     uint64_t stream) {
  if (!s || s->is_static) return s;
  char *copy = ruda__strdup(kernel);
  if (kernel && !copy) return s; /* out of memory: left as it was */
  ruda__free(s->kernel);
  s->kernel = copy;
  s->stream = stream;
  s->has_stream = true;
  return s;
}

const char *ruda_status_kernel(ruda_status_t s) { return s ? s->kernel : NULL; }

bool ruda_status_stream(ruda_status_t s, uint64_t *out) {
  if (!s || !s->has_stream) return false;
  if (out) *out = s->stream;
  return true;
}

static bool dup_field(char **dst, const char *src) {
  if (!src) return true;
  *dst = ruda__strdup(src);
  return *dst != NULL;
}

ruda_status_t ruda_status_clone(ruda_status_t s) {
  if (!s) return NULL;
  if (s->is_static) return s;
  ruda_status_t c = ruda__calloc(1, sizeof *c);
  if (!c) return ruda__status_static(s->kind);
  *c = *s;
  c->reason = c->vendor_call = c->vendor_code_name = c->file = c->key =
      c->backtrace = c->kernel = NULL;
  c->cause = NULL;
  c->errors = NULL;
  c->count = 0;
  bool ok = dup_field(&c->reason, s->reason) &&
            dup_field(&c->vendor_call, s->vendor_call) &&
            dup_field(&c->vendor_code_name, s->vendor_code_name) &&
            dup_field(&c->file, s->file) && dup_field(&c->key, s->key) &&
            dup_field(&c->backtrace, s->backtrace) &&
            dup_field(&c->kernel, s->kernel);
  if (ok && s->cause) {
    c->cause = ruda_status_clone(s->cause);
    /* A static cause stands for a failed deep copy. */
    ok = !c->cause->is_static || s->cause->is_static;
  }
  if (ok && s->count) {
    c->errors = ruda__calloc(s->count, sizeof *c->errors);
    ok = c->errors != NULL;
    for (size_t i = 0; ok && i < s->count; i++) {
      c->errors[c->count++] = ruda_status_clone(s->errors[i]);
      ok = !c->errors[i]->is_static || s->errors[i]->is_static;
    }
  }
  if (!ok) {
    ruda_status_free(c);
    return ruda__status_static(s->kind);
  }
  return c;
}

/* ---- Inspection -------------------------------------------------------- */

ruda_error_kind_t ruda_status_kind(ruda_status_t s) {
  return s ? s->kind : RUDA_OK;
}

ruda_error_family_t ruda_error_kind_family(ruda_error_kind_t kind) {
  const kind_info_t *ki = info_of(kind);
  return ki ? ki->family : RUDA_FAMILY_NONE;
}

ruda_error_family_t ruda_status_family(ruda_status_t s) {
  return ruda_error_kind_family(ruda_status_kind(s));
}

const char *ruda_error_kind_name(ruda_error_kind_t kind) {
  if (kind == RUDA_OK) return "Ok";
  const kind_info_t *ki = info_of(kind);
  return ki ? ki->name : "UnknownErrorKind";
}

ruda_status_t ruda_status_cause(ruda_status_t s) {
  return s ? s->cause : NULL;
}

ruda_status_t ruda_status_find(ruda_status_t s, ruda_error_kind_t kind) {
  for (; s; s = s->cause) {
    if (s->kind == kind) return s;
    for (size_t i = 0; i < s->count; i++) {
      ruda_status_t f = ruda_status_find(s->errors[i], kind);
      if (f) return f;
    }
  }
  return NULL;
}

ruda_status_t ruda_status_root(ruda_status_t s) {
  while (s && s->cause) s = s->cause;
  return s;
}

static bool has_reason(ruda_error_kind_t kind) {
  const kind_info_t *ki = info_of(kind);
  if (!ki) return false;
  return ki->shape == SH_REASON || ki->shape == SH_DESC ||
         ki->shape == SH_SIZE_REASON || ki->shape == SH_CONFIG;
}

const char *ruda_status_reason(ruda_status_t s) {
  if (!s || !has_reason(s->kind)) return NULL;
  return s->reason ? s->reason : missing_reason(s);
}

uint64_t ruda_status_requested(ruda_status_t s) { return s ? s->requested : 0; }
uint64_t ruda_status_max(ruda_status_t s) { return s ? s->max : 0; }
uint64_t ruda_status_size_field(ruda_status_t s) { return s ? s->size : 0; }

bool ruda_status_dims(ruda_status_t s, uint32_t out_requested[3],
                      uint32_t out_max[3]) {
  if (!s || (s->kind != RUDA_ERR_RESOURCE_RUDA_DIM && s->kind != RUDA_ERR_RESOURCE_RUDA_COUNT))
    return false;
  for (int i = 0; i < 3; i++) {
    if (out_requested) out_requested[i] = s->dims_requested[i];
    if (out_max) out_max[i] = s->dims_max[i];
  }
  return true;
}

size_t ruda_status_error_count(ruda_status_t s) { return s ? s->count : 0; }

ruda_status_t ruda_status_error_at(ruda_status_t s, size_t index) {
  return s && index < s->count ? s->errors[index] : NULL;
}

const char *ruda_status_vendor_call(ruda_status_t s) {
  return s ? s->vendor_call : NULL;
}
const char *ruda_status_vendor_code_name(ruda_status_t s) {
  return s ? s->vendor_code_name : NULL;
}
int64_t ruda_status_vendor_code(ruda_status_t s) {
  return s ? s->vendor_code : 0;
}
const char *ruda_status_file(ruda_status_t s) { return s ? s->file : NULL; }
uint32_t ruda_status_line(ruda_status_t s) { return s ? s->line : 0; }
const char *ruda_status_key(ruda_status_t s) { return s ? s->key : NULL; }
const char *ruda_status_backtrace(ruda_status_t s) {
  return s ? s->backtrace : NULL;
}
bool ruda_status_is_static(ruda_status_t s) { return s && s->is_static; }

/* ---- Rendering --------------------------------------------------------- */

/* A string builder that either writes into a fixed buffer, counting what
 * did not fit (snprintf semantics), or grows its own allocation. */
typedef struct {
  char *buf;
  size_t cap;
  size_t len;
  bool grow;
  bool failed;
} sb_t;

/* Makes room for `n` more bytes plus the terminator (growing builders
 * only) and returns the bytes writable at the end, terminator included: 0
 * when nothing more fits or the builder failed. */
static size_t sb_room(sb_t *b, size_t n) {
  if (b->grow && !b->failed && b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + n + 1) cap *= 2;
    char *nb = ruda__realloc(b->buf, cap);
    if (!nb) {
      b->failed = true;
    } else {
      b->buf = nb;
      b->cap = cap;
    }
  }
  return !b->failed && b->cap > b->len ? b->cap - b->len : 0;
}

static void sb_put(sb_t *b, const char *s, size_t n) {
  size_t room = sb_room(b, n);
  if (room > 1) memcpy(b->buf + b->len, s, n < room - 1 ? n : room - 1);
  b->len += n;
}

static void sb_str(sb_t *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(sb_t *b, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
  sb_put(b, tmp, (size_t)n);
}

static void sb_i64(sb_t *b, int64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
  sb_put(b, tmp, (size_t)n);
}

static void sb_dims(sb_t *b, const uint32_t d[3], const char *open,
                    const char *sep, const char *close) {
  sb_str(b, open);
  for (int i = 0; i < 3; i++) {
    if (i) sb_str(b, sep);
    sb_u64(b, d[i]);
  }
  sb_str(b, close);
}

/* Terminates the text; for a fixed buffer, at the truncation point. */
static void sb_finish(sb_t *b) {
  if (b->failed || b->cap == 0) return;
  b->buf[b->len < b->cap ? b->len : b->cap - 1] = '\0';
}

/* The grown text of `b` (sb_t.grow), NUL-terminated, for the caller to
 * free; NULL when growing failed (the buffer is then freed). */
static char *sb_take(sb_t *b) {
  if (b->failed || !b->buf) {
    ruda__free(b->buf);
    return NULL;
  }
  sb_finish(b);
  return b->buf;
}

static void render(sb_t *b, ruda_status_t s, bool with_backtrace);

static void render_field(sb_t *b, ruda_status_t s, const char *name,
                         size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
  if (IS("reason")) {
    sb_str(b, s->reason ? s->reason : missing_reason(s));
  } else if (IS("cause")) {
    if (s->cause)
      render(b, s->cause, true);
    else
      sb_str(b, missing_reason(s));
  } else if (IS("requested")) {
    sb_u64(b, s->requested);
  } else if (IS("max")) {
    sb_u64(b, s->max);
  } else if (IS("size")) {
    sb_u64(b, s->size);
  } else if (IS("dims_req")) {
    sb_dims(b, s->dims_requested, "(", ", ", ")");
  } else if (IS("dims_max")) {
    sb_dims(b, s->dims_max, "(", ", ", ")");
  } else if (IS("errors")) {
    sb_str(b, "[");
    for (size_t i = 0; i < s->count; i++) {
      if (i) sb_str(b, ", ");
      render(b, s->errors[i], true);
    }
    sb_str(b, "]");
  } else if (IS("launch")) {
    if (s->kernel) {
      sb_str(b, " of kernel '");
      sb_str(b, s->kernel);
      sb_str(b, "'");
    }
    if (s->has_stream) {
      sb_str(b, " on stream ");
      sb_u64(b, s->stream);
    }
  } else if (IS("location")) {
    if (s->file) {
      sb_str(b, " in ");
      sb_str(b, s->file);
      if (s->line) {
        sb_str(b, ":");
        sb_u64(b, s->line);
      }
    } else if (s->line) {
      sb_str(b, " at line ");
      sb_u64(b, s->line);
    }
    if (s->key) {
      sb_str(b, s->file || s->line ? ", key `" : " at key `");
      sb_str(b, s->key);
      sb_str(b, "`");
    }
  }
#undef IS
}

static void render(sb_t *b, ruda_status_t s, bool with_backtrace) {
  const kind_info_t *ki = info_of(s->kind);
  const char *t = ki->text;
  while (*t) {
    const char *open = strchr(t, '{');
    if (!open) {
      sb_str(b, t);
      break;
    }
    sb_put(b, t, (size_t)(open - t));
    const char *close = strchr(open, '}');
    render_field(b, s, open + 1, (size_t)(close - open - 1));
    t = close + 1;
  }
  if (s->vendor_call || s->vendor_code_name) {
    sb_str(b, "\n  ");
    if (s->vendor_call) {
      sb_str(b, s->vendor_call);
      sb_str(b, ": ");
    }
    sb_str(b, s->vendor_code_name ? s->vendor_code_name : "error");
    sb_str(b, " (");
    sb_i64(b, s->vendor_code);
    sb_str(b, ")");
  }
  if (with_backtrace && s->backtrace && k_trailers[ki->trailer]) {
    sb_str(b, k_trailers[ki->trailer]);
    sb_str(b, s->backtrace);
  }
}

size_t ruda_status_format(ruda_status_t s, char *buf, size_t cap) {
  sb_t b = {.buf = buf, .cap = buf ? cap : 0};
  if (!s)
    sb_str(&b, "OK");
  else
    render(&b, s, true);
  sb_finish(&b);
  return b.len;
}

static char *render_alloc(ruda_status_t s, bool with_backtrace) {
  sb_t b = {.grow = true};
  if (!s)
    sb_str(&b, "OK");
  else
    render(&b, s, with_backtrace);
  return sb_take(&b);
}

static char *text_of(ruda_status_t s) { return render_alloc(s, false); }

char *ruda_status_to_string(ruda_status_t s) {
  /* The caller frees with free(): ruda__malloc is malloc underneath. */
  return render_alloc(s, true);
}

static void json_str(sb_t *b, const char *s) {
  size_t n = ruda__json_escape(s, NULL, 0);
  size_t room = sb_room(b, n);
  if (room) ruda__json_escape(s, b->buf + b->len, room);
  b->len += n;
}

/* Opens the next field of a JSON object: {"key": for the first one (*first
 * then false), ,"key": after it. */
static void json_key(sb_t *b, bool *first, const char *key) {
  sb_str(b, *first ? "{\"" : ",\"");
  sb_str(b, key);
  sb_str(b, "\":");
  *first = false;
}

static void json_str_or_null(sb_t *b, const char *s) {
  if (s)
    json_str(b, s);
  else
    sb_str(b, "null");
}

static void json(sb_t *b, ruda_status_t s) {
  const kind_info_t *ki = info_of(s->kind);
  const char *reason = s->reason ? s->reason : missing_reason(s);
  sb_str(b, "{");
  json_str(b, ki->variant);
  sb_str(b, ":");
  if (ki->shape == SH_CAUSE) {
    if (s->cause)
      json(b, s->cause);
    else
      sb_str(b, "null");
    sb_str(b, "}");
    return;
  }
  /* Every other payload is an object, its fields in the order shape_t
   * lists them. */
  bool first = true;
  switch (ki->shape) {
    case SH_NONE:
    case SH_CAUSE:
      break;
    case SH_REASON:
      json_key(b, &first, "reason");
      json_str(b, reason);
      break;
    case SH_DESC:
      json_key(b, &first, "description");
      json_str(b, reason);
      break;
    case SH_LIMIT:
      json_key(b, &first, "requested");
      sb_u64(b, s->requested);
      json_key(b, &first, "max");
      sb_u64(b, s->max);
      break;
    case SH_DIM:
      json_key(b, &first, "requested");
      sb_dims(b, s->dims_requested, "[", ",", "]");
      json_key(b, &first, "max");
      sb_dims(b, s->dims_max, "[", ",", "]");
      break;
    case SH_SIZE:
    case SH_SIZE_REASON:
      json_key(b, &first, "size");
      sb_u64(b, s->size);
      if (ki->shape == SH_SIZE) break;
      json_key(b, &first, "reason");
      json_str(b, reason);
      break;
    case SH_LIST:
      json_key(b, &first, "errors");
      sb_str(b, "[");
      for (size_t i = 0; i < s->count; i++) {
        if (i) sb_str(b, ",");
        json(b, s->errors[i]);
      }
      sb_str(b, "]");
      break;
    case SH_CONFIG:
      json_key(b, &first, "reason");
      json_str(b, reason);
      json_key(b, &first, "file");
      json_str_or_null(b, s->file);
      json_key(b, &first, "line");
      sb_u64(b, s->line);
      json_key(b, &first, "key");
      json_str_or_null(b, s->key);
      break;
  }
  sb_str(b, first ? "{}}" : "}}");
}

char *ruda_status_to_json(ruda_status_t s) {
  sb_t b = {.grow = true};
  if (!s)
    sb_str(&b, "null");
  else
    json(&b, s);
  return sb_take(&b);
}
