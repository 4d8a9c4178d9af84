/* Configuration: ruda.toml schema, search, environment, process-wide copy. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* PATH_MAX, getcwd */
#endif
#include "ruda/config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/config_internal.h"
#include "base/toml.h"

/* ---- names ------------------------------------------------------------- */

typedef struct {
  const char *name;
  int value;
} name_value_t;

static const name_value_t k_levels_profiling[] = {
    {"disabled", RUDA_LOG_LEVEL_DISABLED}, {"minimal", RUDA_LOG_LEVEL_MINIMAL},
    {"basic", RUDA_LOG_LEVEL_BASIC},       {"medium", RUDA_LOG_LEVEL_MEDIUM},
    {"full", RUDA_LOG_LEVEL_FULL},         {NULL, 0}};
static const name_value_t k_levels_other[] = {{"disabled", RUDA_LOG_LEVEL_DISABLED},
                                              {"basic", RUDA_LOG_LEVEL_BASIC},
                                              {"full", RUDA_LOG_LEVEL_FULL},
                                              {NULL, 0}};
static const name_value_t k_check_modes[] = {{"enforce", RUDA_BOUNDS_ENFORCE},
                                             {"validate", RUDA_BOUNDS_VALIDATE},
                                             {"auto", RUDA_BOUNDS_AUTO},
                                             {NULL, 0}};
static const name_value_t k_fp_contract[] = {{"fast", RUDA_FP_CONTRACT_FAST},
                                             {"off", RUDA_FP_CONTRACT_OFF},
                                             {NULL, 0}};
static const name_value_t k_priorities[] = {{"default", RUDA_STREAM_PRIORITY_DEFAULT},
                                            {"low", RUDA_STREAM_PRIORITY_LOW},
                                            {"high", RUDA_STREAM_PRIORITY_HIGH},
                                            {NULL, 0}};
static const name_value_t k_persistent[] = {{"enabled", RUDA_PERSISTENT_MEMORY_ENABLED},
                                            {"disabled", RUDA_PERSISTENT_MEMORY_DISABLED},
                                            {"enforced", RUDA_PERSISTENT_MEMORY_ENFORCED},
                                            {NULL, 0}};
static const name_value_t k_cache_names[] = {{"user", RUDA_CACHE_LOCATION_USER},
                                             {"local", RUDA_CACHE_LOCATION_LOCAL},
                                             {"target", RUDA_CACHE_LOCATION_TARGET},
                                             {"global", RUDA_CACHE_LOCATION_GLOBAL},
                                             {"none", RUDA_CACHE_LOCATION_NONE},
                                             {NULL, 0}};
static const name_value_t k_autotune_levels[] = {{"off", RUDA_AUTOTUNE_OFF},
                                                  {"minimal", RUDA_AUTOTUNE_MINIMAL},
                                                  {"balanced", RUDA_AUTOTUNE_BALANCED},
                                                  {"full", RUDA_AUTOTUNE_FULL},
                                                  {NULL, 0}};

static const char *const k_channel_names[RUDA_LOG_CHANNEL_COUNT_] = {
    "compilation", "memory", "streaming", "profiling", "autotune"};

const char *ruda_log_level_name(ruda_log_level_t level) {
  for (const name_value_t *n = k_levels_profiling; n->name; n++)
    if (n->value == (int)level) return n->name;
  return "invalid";
}

const char *ruda_log_channel_name(ruda_log_channel_t channel) {
  if ((unsigned)channel >= RUDA_LOG_CHANNEL_COUNT_) return "invalid";
  return k_channel_names[channel];
}

static bool lookup_name(const name_value_t *names, const char *s, int *out) {
  for (; names->name; names++) {
    if (strcmp(names->name, s) == 0) {
      *out = names->value;
      return true;
    }
  }
  return false;
}

/* "a, b or c" (each item in `quote`s) into buf; a list too long for it is
 * cut at an item. */
static const char *join_list(const char *const *items, size_t n, const char *quote,
                             char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    int w = snprintf(buf + at, cap - at, "%s%s%s%s",
                     i == 0 ? "" : (i + 1 == n ? " or " : ", "), quote, items[i], quote);
    if (w < 0 || (size_t)w >= cap - at) break;
    at += (size_t)w;
  }
  return buf;
}

enum { LIST_MAX = 16 };

/* "\"a\", \"b\" or \"c\"" into buf. */
static const char *expected_list(const name_value_t *names, char *buf, size_t cap) {
  const char *items[LIST_MAX];
  size_t n = 0;
  for (; names[n].name && n < LIST_MAX; n++) items[n] = names[n].name;
  return join_list(items, n, "\"", buf, cap);
}

/* ---- defaults ---------------------------------------------------------- */

static void logger_default(ruda_logger_config_t *l) {
  memset(l, 0, sizeof *l);
  l->level = RUDA_LOG_LEVEL_DISABLED;
  l->append = true;
}

void ruda_config_default(ruda_config_t *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  logger_default(&out->profiling.logger);
  logger_default(&out->compilation.logger);
  logger_default(&out->streaming.logger);
  logger_default(&out->memory.logger);
  out->compilation.cache.location = RUDA_CACHE_LOCATION_USER;
  out->compilation.check_mode = RUDA_BOUNDS_AUTO;
  out->compilation.fp_contract = RUDA_FP_CONTRACT_FAST;
  snprintf(out->compilation.cpu_flags, sizeof out->compilation.cpu_flags, "-O3 -march=native");
  out->streaming.max_streams = 128;
  out->streaming.priority = RUDA_STREAM_PRIORITY_DEFAULT;
  out->memory.persistent_memory = RUDA_PERSISTENT_MEMORY_ENABLED;
  out->cpu.threads = 0;
  out->cpu.devices = 1;
  out->cpu.spin = RUDA_CPU_SPIN_AUTO;
  out->cpu.memory_limit = 0;
  logger_default(&out->autotune.logger);
  out->autotune.level = RUDA_AUTOTUNE_BALANCED;
  out->autotune.budget_ms = 1000;
  out->autotune.cache = true;
}

const ruda_logger_config_t *ruda_config_logger(const ruda_config_t *cfg,
                                               ruda_log_channel_t channel) {
  if (!cfg) return NULL;
  switch (channel) {
    case RUDA_LOG_CHANNEL_COMPILATION: return &cfg->compilation.logger;
    case RUDA_LOG_CHANNEL_MEMORY: return &cfg->memory.logger;
    case RUDA_LOG_CHANNEL_STREAMING: return &cfg->streaming.logger;
    case RUDA_LOG_CHANNEL_PROFILING: return &cfg->profiling.logger;
    case RUDA_LOG_CHANNEL_AUTOTUNE: return &cfg->autotune.logger;
    default: return NULL;
  }
}

/* ---- options ----------------------------------------------------------- */

/* How an option's value is read and stored. */
typedef enum {
  OPT_LOGGER,    /* ruda_logger_config_t: a table, or RUDA_LOG_*=level[:sink] */
  OPT_CACHE,     /* ruda_cache_config_t: a name, { file = ... } or a path */
  OPT_CACHE_DIR, /* ruda_cache_config_t: a path (environment only) */
  OPT_ENUM,      /* an enum field, from `names` */
  OPT_UINT,      /* uint32_t, from `min` to `max` (or "auto", with has_auto) */
  OPT_BYTES,     /* uint64_t bytes: an integer, or text with a unit ("64MiB") */
  OPT_PATH,      /* char[RUDA_CONFIG_PATH_MAX]; an empty variable clears it */
  OPT_BOOL,      /* bool: true/false (environment: also 1/0, on/off) */
  OPT_PINS,      /* char[RUDA_CONFIG_PATH_MAX]: "op=candidate,..." (may be empty) */
} opt_kind_t;

/* One row per option: where it lives in ruda.toml and in the environment,
 * and where it is stored. Environment variables are applied in this
 * order. */
typedef struct {
  const char *section;
  const char *key; /* NULL: not in ruda.toml */
  const char *env;
  opt_kind_t kind;
  size_t offset; /* of the field in ruda_config_t */
  const name_value_t *names; /* OPT_ENUM: values; OPT_LOGGER: levels */
  uint32_t min, max;         /* OPT_UINT */
  bool has_auto;             /* OPT_UINT: "auto" (stored as UINT32_MAX) allowed */
} option_t;

#define RUDA__STR_(x) #x
#define RUDA__STR(x) RUDA__STR_(x)
#define AT(field) offsetof(ruda_config_t, field)
static const option_t k_options[] = {
    {"profiling", "logger", "RUDA_LOG_PROFILING", OPT_LOGGER, AT(profiling.logger),
     k_levels_profiling, 0, 0, false},
    {"compilation", "logger", "RUDA_LOG_COMPILATION", OPT_LOGGER, AT(compilation.logger),
     k_levels_other, 0, 0, false},
    {"compilation", "cache", "RUDA_COMPILATION_CACHE", OPT_CACHE, AT(compilation.cache), NULL,
     0, 0, false},
    {"compilation", NULL, "RUDA_CACHE_DIR", OPT_CACHE_DIR, AT(compilation.cache), NULL, 0, 0, false},
    {"compilation", "check_mode", "RUDA_CHECK_MODE", OPT_ENUM, AT(compilation.check_mode),
     k_check_modes, 0, 0, false},
    {"compilation", "fp_contract", "RUDA_FP_CONTRACT", OPT_ENUM, AT(compilation.fp_contract),
     k_fp_contract, 0, 0, false},
    {"compilation", "cpu_compiler", "RUDA_CPU_COMPILER", OPT_PATH, AT(compilation.cpu_compiler),
     NULL, 0, 0, false},
    {"compilation", "cpu_flags", "RUDA_CPU_FLAGS", OPT_PATH, AT(compilation.cpu_flags), NULL, 0,
     0, false},
    {"streaming", "logger", "RUDA_LOG_STREAMING", OPT_LOGGER, AT(streaming.logger),
     k_levels_other, 0, 0, false},
    {"streaming", "max_streams", "RUDA_MAX_STREAMS", OPT_UINT, AT(streaming.max_streams), NULL,
     1, 255, false},
    {"streaming", "priority", "RUDA_STREAM_PRIORITY", OPT_ENUM, AT(streaming.priority),
     k_priorities, 0, 0, false},
    {"memory", "logger", "RUDA_LOG_MEMORY", OPT_LOGGER, AT(memory.logger), k_levels_other, 0,
     0, false},
    {"memory", "persistent_memory", "RUDA_PERSISTENT_MEMORY", OPT_ENUM,
     AT(memory.persistent_memory), k_persistent, 0, 0, false},
    {"cpu", "threads", "RUDA_CPU_THREADS", OPT_UINT, AT(cpu.threads), NULL, 0, 65535, false},
    {"cpu", "devices", "RUDA_CPU_DEVICES", OPT_UINT, AT(cpu.devices), NULL, 1, 64, false},
    {"cpu", "spin", "RUDA_CPU_SPIN", OPT_UINT, AT(cpu.spin), NULL, 0, 100000000, true},
    {"cpu", "memory_limit", "RUDA_CPU_MEMORY_LIMIT", OPT_BYTES, AT(cpu.memory_limit), NULL, 0,
     0, false},
    {"trace", "file", "RUDA_TRACE", OPT_PATH, AT(trace.file), NULL, 0, 0, false},
    {"autotune", "logger", "RUDA_LOG_AUTOTUNE", OPT_LOGGER, AT(autotune.logger), k_levels_other,
     0, 0, false},
    {"autotune", "level", "RUDA_AUTOTUNE_LEVEL", OPT_ENUM, AT(autotune.level), k_autotune_levels,
     0, 0, false},
    {"autotune", "budget_ms", "RUDA_AUTOTUNE_BUDGET_MS", OPT_UINT, AT(autotune.budget_ms), NULL,
     1, 3600000, false},
    {"autotune", "cache", "RUDA_AUTOTUNE_CACHE", OPT_BOOL, AT(autotune.cache), NULL, 0, 0, false},
    {"autotune", "pin", "RUDA_AUTOTUNE_PIN", OPT_PINS, AT(autotune.pin), NULL, 0, 0, false},
};
#undef AT
enum { NUM_OPTIONS = sizeof k_options / sizeof k_options[0] };

/* OPT_ENUM fields are stored as an int. */
_Static_assert(sizeof(ruda_bounds_check_mode_t) == sizeof(int), "enum size");
_Static_assert(sizeof(ruda_stream_priority_t) == sizeof(int), "enum size");
_Static_assert(sizeof(ruda_fp_contract_t) == sizeof(int), "enum size");
_Static_assert(sizeof(ruda_persistent_memory_t) == sizeof(int), "enum size");
_Static_assert(sizeof(ruda_autotune_level_t) == sizeof(int), "enum size");

static void *option_field(ruda_config_t *cfg, const option_t *o) {
  return (char *)cfg + o->offset;
}

/* The option at `section`.`key` in ruda.toml; NULL if there is none. */
static const option_t *find_option(const char *section, const char *key) {
  for (size_t i = 0; i < NUM_OPTIONS; i++) {
    const option_t *o = &k_options[i];
    if (o->key && strcmp(o->section, section) == 0 && strcmp(o->key, key) == 0) return o;
  }
  return NULL;
}

/* "a, b or c": the ruda.toml keys of `section`, or every section when
 * `section` is NULL. Empty when there are none. */
static const char *expected_options(const char *section, char *buf, size_t cap) {
  const char *items[LIST_MAX];
  size_t n = 0;
  for (size_t i = 0; i < NUM_OPTIONS && n < LIST_MAX; i++) {
    const option_t *o = &k_options[i];
    const char *item = !section ? o->section : strcmp(o->section, section) == 0 ? o->key : NULL;
    if (item && (n == 0 || strcmp(items[n - 1], item) != 0)) items[n++] = item;
  }
  return join_list(items, n, "", buf, cap);
}

/* ---- the rules of each value ----------------------------------------------
 * One check per kind of value, used by the file, the environment and
 * ruda_config_set() alike: each returns NULL when the value is valid, else
 * what was expected, for the caller's message. */

_Static_assert(RUDA_CPU_SPIN_AUTO == UINT32_MAX, "auto is stored as UINT32_MAX");

/* "an integer from 1 to 255" (+ " or \"auto\""). */
static const char *uint_expected(const option_t *o, char *buf, size_t cap) {
  snprintf(buf, cap, "an integer from %u to %u%s", o->min, o->max,
           o->has_auto ? " or \"auto\"" : "");
  return buf;
}

static const char *check_uint(const option_t *o, uint64_t v, char *buf, size_t cap) {
  if ((v >= o->min && v <= o->max) || (o->has_auto && v == UINT32_MAX)) return NULL;
  return uint_expected(o, buf, cap);
}

static const char *check_enum(const name_value_t *names, int v, char *buf, size_t cap) {
  for (const name_value_t *n = names; n->name; n++)
    if (n->value == v) return NULL;
  return expected_list(names, buf, cap);
}

/* A path field: terminated inside its array, and non-empty unless `may_be_empty`. */
static const char *check_path(const char *p, bool may_be_empty) {
  size_t n = strnlen(p, RUDA_CONFIG_PATH_MAX);
  if (n == RUDA_CONFIG_PATH_MAX) return "a NUL-terminated path shorter than " RUDA__STR(RUDA_CONFIG_PATH_MAX) " bytes";
  if (n == 0 && !may_be_empty) return "a path";
  return NULL;
}

static const char k_pins_expected[] =
    "a list of op=candidate pairs separated by commas (\"matmul_f32=t32x4\"), names of "
    "letters, digits, '_', '.' and '-'";

static bool pin_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-';
}

/* "op=cand,op=cand" (spaces around items allowed), or empty. */
static const char *check_pins(const char *p) {
  if (strnlen(p, RUDA_CONFIG_PATH_MAX) == RUDA_CONFIG_PATH_MAX) return k_pins_expected;
  while (*p == ' ') p++;
  if (!*p) return NULL;
  for (;;) {
    while (*p == ' ') p++;
    const char *s = p;
    while (pin_name_char(*p)) p++;
    if (p == s || *p != '=') return k_pins_expected;
    s = ++p;
    while (pin_name_char(*p)) p++;
    if (p == s) return k_pins_expected;
    while (*p == ' ') p++;
    if (!*p) return NULL;
    if (*p++ != ',') return k_pins_expected;
  }
}

static const char k_bytes_expected[] =
    "a size in bytes: a whole number, optionally followed by K, M, G or T "
    "(or KiB, MiB, GiB, TiB: powers of 1024)";

/* "1048576", "64MiB", "1M": bytes. False on anything else or overflow. */
static bool parse_bytes(const char *s, uint64_t *out) {
  static const struct {
    const char *unit;
    unsigned shift;
  } k_units[] = {{"", 0},   {"B", 0},   {"K", 10},  {"KiB", 10}, {"M", 20},
                 {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},  {"TiB", 40}};
  if (*s < '0' || *s > '9') return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  for (size_t i = 0; i < sizeof k_units / sizeof k_units[0]; i++) {
    if (strcmp(s, k_units[i].unit) != 0) continue;
    if (k_units[i].shift && v > (UINT64_MAX >> k_units[i].shift)) return false;
    *out = v << k_units[i].shift;
    return true;
  }
  return false;
}

/* A bool field must hold 0 or 1 (ruda_config_set gets raw memory). */
static bool bool_ok(const bool *b) {
  unsigned char c;
  memcpy(&c, b, 1);
  return c <= 1;
}

/* ---- schema ------------------------------------------------------------ */

typedef struct {
  const char *file;
  ruda_status_t err;
} ctx_t;

enum { KEY_MAX = 256 };

static void fail(ctx_t *c, uint32_t line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(ctx_t *c, uint32_t line, const char *key, const char *fmt, ...) {
  if (c->err) return;
  va_list ap;
  va_start(ap, fmt);
  c->err = ruda_status_createv(RUDA_ERR_CONFIG, fmt, ap);
  va_end(ap);
  ruda_status_set_location(c->err, c->file, line, key);
}

static const char *type_name(ruda__toml_type_t t) {
  switch (t) {
    case RUDA__TOML_TABLE: return "a table";
    case RUDA__TOML_STRING: return "a string";
    case RUDA__TOML_INTEGER: return "an integer";
    case RUDA__TOML_BOOLEAN: return "a boolean";
  }
  return "a value";
}

static bool want_type(ctx_t *c, const ruda__toml_entry_t *e, const char *key,
                      ruda__toml_type_t t) {
  if (e->value.type == t) return true;
  fail(c, e->line, key, "expected %s, found %s", type_name(t), type_name(e->value.type));
  return false;
}

static bool get_enum(ctx_t *c, const ruda__toml_entry_t *e, const char *key,
                     const name_value_t *names, int *out) {
  if (!want_type(c, e, key, RUDA__TOML_STRING)) return false;
  if (lookup_name(names, e->value.string, out)) return true;
  char list[160];
  fail(c, e->line, key, "expected %s, found \"%s\"", expected_list(names, list, sizeof list),
       e->value.string);
  return false;
}

static void get_bool(ctx_t *c, const ruda__toml_entry_t *e, const char *key, bool *out) {
  if (want_type(c, e, key, RUDA__TOML_BOOLEAN)) *out = e->value.boolean;
}

static void get_uint(ctx_t *c, const ruda__toml_entry_t *e, const char *key, const option_t *o,
                     uint32_t *out) {
  char why[96];
  if (o->has_auto && e->value.type == RUDA__TOML_STRING &&
      strcmp(e->value.string, "auto") == 0) {
    *out = UINT32_MAX;
    return;
  }
  if (e->value.type != RUDA__TOML_INTEGER) {
    fail(c, e->line, key, "expected an integer%s, found %s", o->has_auto ? " or \"auto\"" : "",
         type_name(e->value.type));
    return;
  }
  int64_t v = e->value.integer;
  /* UINT32_MAX, the stored form of "auto", is written "auto" in a file. */
  if (v < 0 || v >= UINT32_MAX || check_uint(o, (uint64_t)v, why, sizeof why)) {
    fail(c, e->line, key, "expected %s, found %lld", uint_expected(o, why, sizeof why),
         (long long)v);
    return;
  }
  *out = (uint32_t)v;
}

static void get_bytes(ctx_t *c, const ruda__toml_entry_t *e, const char *key, uint64_t *out) {
  if (e->value.type == RUDA__TOML_INTEGER && e->value.integer >= 0) {
    *out = (uint64_t)e->value.integer;
  } else if (e->value.type == RUDA__TOML_STRING) {
    if (!parse_bytes(e->value.string, out))
      fail(c, e->line, key, "expected %s, found \"%s\"", k_bytes_expected, e->value.string);
  } else if (e->value.type == RUDA__TOML_INTEGER) {
    fail(c, e->line, key, "expected %s, found %lld", k_bytes_expected,
         (long long)e->value.integer);
  } else {
    fail(c, e->line, key, "expected %s, found %s", k_bytes_expected, type_name(e->value.type));
  }
}

static void get_path(ctx_t *c, const ruda__toml_entry_t *e, const char *key,
                     char out[RUDA_CONFIG_PATH_MAX]) {
  if (!want_type(c, e, key, RUDA__TOML_STRING)) return;
  size_t n = strlen(e->value.string);
  if (n == 0) {
    fail(c, e->line, key, "expected a path, found an empty string");
    return;
  }
  if (n >= RUDA_CONFIG_PATH_MAX) {
    fail(c, e->line, key, "path longer than %d bytes", RUDA_CONFIG_PATH_MAX - 1);
    return;
  }
  memcpy(out, e->value.string, n + 1);
}

/* "prefix.key" into a KEY_MAX buffer; a long user key is cut short, which
 * only shortens the key named in an error. */
static void key_join(char *buf, const char *prefix, const char *key) {
  size_t at = 0;
  for (const char *p = prefix; *p && at + 1 < KEY_MAX; p++) buf[at++] = *p;
  if (at + 1 < KEY_MAX) buf[at++] = '.';
  for (const char *p = key; *p && at + 1 < KEY_MAX; p++) buf[at++] = *p;
  buf[at] = '\0';
}

static void unknown_key(ctx_t *c, const ruda__toml_entry_t *e, const char *key,
                        const char *known) {
  fail(c, e->line, key, "unknown key (expected %s)", known);
}

static void parse_logger(ctx_t *c, const ruda__toml_entry_t *le, const char *prefix,
                         const name_value_t *levels, ruda_logger_config_t *out) {
  char key[KEY_MAX];
  if (!want_type(c, le, prefix, RUDA__TOML_TABLE)) return;
  for (size_t i = 0; i < le->value.count && !c->err; i++) {
    const ruda__toml_entry_t *e = &le->value.entries[i];
    key_join(key, prefix, e->key);
    int v;
    if (strcmp(e->key, "level") == 0) {
      if (get_enum(c, e, key, levels, &v)) out->level = (ruda_log_level_t)v;
    } else if (strcmp(e->key, "file") == 0) {
      get_path(c, e, key, out->file);
    } else if (strcmp(e->key, "append") == 0) {
      get_bool(c, e, key, &out->append);
    } else if (strcmp(e->key, "stdout") == 0) {
      get_bool(c, e, key, &out->to_stdout);
    } else if (strcmp(e->key, "stderr") == 0) {
      get_bool(c, e, key, &out->to_stderr);
    } else {
      unknown_key(c, e, key, "level, file, append, stdout or stderr");
    }
  }
}

static void parse_cache(ctx_t *c, const ruda__toml_entry_t *e, const char *key,
                        ruda_cache_config_t *out) {
  if (e->value.type == RUDA__TOML_STRING) {
    int v;
    if (get_enum(c, e, key, k_cache_names, &v)) out->location = (ruda_cache_location_t)v;
    return;
  }
  if (e->value.type != RUDA__TOML_TABLE) {
    fail(c, e->line, key,
         "expected \"user\", \"local\", \"target\", \"global\", \"none\" or { file = "
         "\"path\" }, found %s",
         type_name(e->value.type));
    return;
  }
  const ruda__toml_entry_t *f = ruda__toml_find(&e->value, "file");
  char sub[KEY_MAX];
  for (size_t i = 0; i < e->value.count; i++) {
    if (strcmp(e->value.entries[i].key, "file") != 0) {
      key_join(sub, key, e->value.entries[i].key);
      unknown_key(c, &e->value.entries[i], sub, "file");
      return;
    }
  }
  if (!f) {
    fail(c, e->line, key, "a cache table needs a `file` key");
    return;
  }
  key_join(sub, key, "file");
  get_path(c, f, sub, out->file);
  if (!c->err) out->location = RUDA_CACHE_LOCATION_FILE;
}

static void set_from_toml(ctx_t *c, const option_t *o, const ruda__toml_entry_t *e,
                          const char *key, ruda_config_t *cfg) {
  void *f = option_field(cfg, o);
  int v;
  switch (o->kind) {
    case OPT_LOGGER: parse_logger(c, e, key, o->names, f); break;
    case OPT_CACHE: parse_cache(c, e, key, f); break;
    case OPT_ENUM:
      if (get_enum(c, e, key, o->names, &v)) memcpy(f, &v, sizeof v);
      break;
    case OPT_UINT: get_uint(c, e, key, o, f); break;
    case OPT_BYTES: get_bytes(c, e, key, f); break;
    case OPT_PATH: get_path(c, e, key, f); break;
    case OPT_BOOL: get_bool(c, e, key, f); break;
    case OPT_PINS:
      if (!want_type(c, e, key, RUDA__TOML_STRING)) break;
      if (check_pins(e->value.string) || strlen(e->value.string) >= RUDA_CONFIG_PATH_MAX)
        fail(c, e->line, key, "expected %s, found \"%s\"", k_pins_expected, e->value.string);
      else
        memcpy(f, e->value.string, strlen(e->value.string) + 1);
      break;
    case OPT_CACHE_DIR: break; /* not in ruda.toml: find_option() never gives it */
  }
}

static void parse_section(ctx_t *c, const ruda__toml_entry_t *se, ruda_config_t *cfg) {
  char key[KEY_MAX], list[160];
  if (!want_type(c, se, se->key, RUDA__TOML_TABLE)) return;
  for (size_t i = 0; i < se->value.count && !c->err; i++) {
    const ruda__toml_entry_t *e = &se->value.entries[i];
    key_join(key, se->key, e->key);
    const option_t *o = find_option(se->key, e->key);
    if (o)
      set_from_toml(c, o, e, key, cfg);
    else
      unknown_key(c, e, key, expected_options(se->key, list, sizeof list));
  }
}

ruda_status_t ruda_config_parse(const char *text, size_t len, const char *file_name,
                                ruda_config_t *out) {
  if (!out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_parse: out is NULL");
  ruda_config_default(out);
  ruda__toml_value_t root;
  ruda_status_t st = ruda__toml_parse(text, len, file_name, &root);
  if (st) return st;
  ctx_t c = {.file = file_name ? file_name : "<string>"};
  char list[160];
  for (size_t i = 0; i < root.count && !c.err; i++) {
    const ruda__toml_entry_t *e = &root.entries[i];
    if (expected_options(e->key, list, sizeof list)[0])
      parse_section(&c, e, out);
    else
      fail(&c, e->line, e->key, "unknown section (expected %s)",
           expected_options(NULL, list, sizeof list));
  }
  ruda__toml_free(&root);
  if (c.err) {
    ruda_config_default(out);
    return c.err;
  }
  if (file_name) {
    size_t n = strlen(file_name);
    if (n < RUDA_CONFIG_PATH_MAX) memcpy(out->source, file_name, n + 1);
  }
  return NULL;
}

/* ---- files ------------------------------------------------------------- */

enum { MAX_FILE_SIZE = 1 << 20 };

ruda_status_t ruda_config_load_file(const char *path, ruda_config_t *out) {
  if (!out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_load_file: out is NULL");
  ruda_config_default(out);
  if (!path)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_load_file: path is NULL");
  FILE *f = fopen(path, "rb");
  ruda_status_t st = NULL;
  if (!f) {
    st = ruda_status_create(RUDA_ERR_CONFIG, "cannot open the file: %s", strerror(errno));
    return ruda_status_set_location(st, path, 0, NULL);
  }
  char *text = ruda__malloc(MAX_FILE_SIZE + 1);
  size_t n = text ? fread(text, 1, MAX_FILE_SIZE + 1, f) : 0;
  if (!text) {
    st = ruda_status_create(RUDA_ERR_CONFIG, "out of memory reading the file");
  } else if (ferror(f)) {
    st = ruda_status_create(RUDA_ERR_CONFIG, "cannot read the file");
  } else if (n > MAX_FILE_SIZE) {
    st = ruda_status_create(RUDA_ERR_CONFIG, "file larger than %d bytes", MAX_FILE_SIZE);
  }
  fclose(f);
  if (st) {
    ruda__free(text);
    return ruda_status_set_location(st, path, 0, NULL);
  }
  st = ruda_config_parse(text, n, path, out);
  ruda__free(text);
  return st;
}

bool ruda__config_find(const char *start_dir, char *out, size_t cap) {
  if (!start_dir || !*start_dir || !out || cap == 0) return false;
  size_t n = strlen(start_dir);
  char *dir = ruda__malloc(n + 1);
  if (!dir) return false;
  memcpy(dir, start_dir, n + 1);
  while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0';
  bool found = false;
  for (;;) {
    int w = snprintf(out, cap, "%s/ruda.toml", strcmp(dir, "/") == 0 ? "" : dir);
    struct stat sb;
    if (w > 0 && (size_t)w < cap && stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
      found = true;
      break;
    }
    char *slash = strrchr(dir, '/');
    if (!slash) break;
    if (slash == dir) {
      if (dir[1] == '\0') break; /* tried "/" */
      dir[1] = '\0';
    } else {
      *slash = '\0';
    }
  }
  ruda__free(dir);
  if (!found) out[0] = '\0';
  return found;
}

/* Loads the file part: RUDA_CONFIG, else the search, else defaults. */
static ruda_status_t load_file_part(ruda_config_t *out) {
  const char *explicit_path = getenv("RUDA_CONFIG");
  if (explicit_path && *explicit_path) return ruda_config_load_file(explicit_path, out);
  ruda_config_default(out);
  char cwd[PATH_MAX];
  char path[PATH_MAX + 16];
  if (!getcwd(cwd, sizeof cwd)) return NULL; /* no directory to search */
  if (!ruda__config_find(cwd, path, sizeof path)) return NULL;
  return ruda_config_load_file(path, out);
}

/* ---- environment ------------------------------------------------------- */

static ruda_status_t env_fail(const char *var, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ruda_status_t env_fail(const char *var, const char *value, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *why = ruda__vasprintf(fmt, ap);
  va_end(ap);
  ruda_status_t st = ruda_status_create(RUDA_ERR_CONFIG, "environment variable %s=\"%s\": %s",
                                        var, value, why ? why : "invalid value");
  ruda__free(why);
  return ruda_status_set_location(st, NULL, 0, var);
}

static ruda_status_t env_enum(const char *var, const char *value, const name_value_t *names,
                              int *out) {
  if (lookup_name(names, value, out)) return NULL;
  char list[160];
  return env_fail(var, value, "expected %s", expected_list(names, list, sizeof list));
}

static ruda_status_t env_uint(const option_t *o, const char *value, uint32_t *out) {
  char why[96];
  if (o->has_auto && strcmp(value, "auto") == 0) {
    *out = UINT32_MAX;
    return NULL;
  }
  char *end = NULL;
  errno = 0;
  if (*value < '0' || *value > '9') goto bad;
  unsigned long long v = strtoull(value, &end, 10);
  if (errno || *end || v >= UINT32_MAX || check_uint(o, v, why, sizeof why)) goto bad;
  *out = (uint32_t)v;
  return NULL;
bad:
  return env_fail(o->env, value, "expected %s", uint_expected(o, why, sizeof why));
}

static ruda_status_t env_bytes(const char *var, const char *value, uint64_t *out) {
  if (parse_bytes(value, out)) return NULL;
  return env_fail(var, value, "expected %s", k_bytes_expected);
}

static ruda_status_t env_path(const char *var, const char *value, char out[RUDA_CONFIG_PATH_MAX]) {
  size_t n = strlen(value);
  if (n >= RUDA_CONFIG_PATH_MAX)
    return env_fail(var, value, "path longer than %d bytes", RUDA_CONFIG_PATH_MAX - 1);
  memcpy(out, value, n + 1);
  return NULL;
}

/* RUDA_LOG_<CHANNEL>=level[:sink], sink = stdout | stderr | file path. */
static ruda_status_t env_logger(const char *var, const char *value, const name_value_t *levels,
                                ruda_logger_config_t *l) {
  const char *colon = strchr(value, ':');
  size_t ln = colon ? (size_t)(colon - value) : strlen(value);
  char level[16];
  int v = 0;
  if (ln >= sizeof level) goto bad_level;
  memcpy(level, value, ln);
  level[ln] = '\0';
  if (!lookup_name(levels, level, &v)) goto bad_level;
  if (colon) {
    const char *sink = colon + 1;
    ruda_logger_config_t nl;
    logger_default(&nl);
    nl.level = (ruda_log_level_t)v;
    if (strcmp(sink, "stdout") == 0) {
      nl.to_stdout = true;
    } else if (strcmp(sink, "stderr") == 0) {
      nl.to_stderr = true;
    } else if (*sink == '\0') {
      return env_fail(var, value, "empty sink after ':' (stdout, stderr or a file path)");
    } else {
      ruda_status_t st = env_path(var, sink, nl.file);
      if (st) return st;
    }
    *l = nl;
  } else {
    l->level = (ruda_log_level_t)v;
  }
  return NULL;
bad_level : {
  char list[160];
  return env_fail(var, value, "expected level[:sink] with level %s",
                  expected_list(levels, list, sizeof list));
}
}

/* RUDA_CACHE_DIR, and RUDA_COMPILATION_CACHE given a path. */
static ruda_status_t env_cache_file(const char *var, const char *v, ruda_cache_config_t *c) {
  ruda_status_t st = env_path(var, v, c->file);
  if (!st) c->location = RUDA_CACHE_LOCATION_FILE;
  return st;
}

static ruda_status_t env_cache(const char *var, const char *v, ruda_cache_config_t *c) {
  int x = 0;
  if (lookup_name(k_cache_names, v, &x)) {
    c->location = (ruda_cache_location_t)x;
    return NULL;
  }
  if (*v != '/' && *v != '.')
    return env_fail(var, v,
                    "expected \"user\", \"local\", \"target\", \"global\", \"none\" or "
                    "a path starting with '/' or '.'");
  return env_cache_file(var, v, c);
}

static ruda_status_t set_from_env(const option_t *o, const char *v, ruda_config_t *cfg) {
  void *f = option_field(cfg, o);
  int x = 0;
  ruda_status_t st = NULL;
  switch (o->kind) {
    case OPT_LOGGER: return env_logger(o->env, v, o->names, f);
    case OPT_CACHE: return env_cache(o->env, v, f);
    case OPT_CACHE_DIR: return env_cache_file(o->env, v, f);
    case OPT_ENUM:
      st = env_enum(o->env, v, o->names, &x);
      if (!st) memcpy(f, &x, sizeof x);
      return st;
    case OPT_UINT: return env_uint(o, v, f);
    case OPT_BYTES: return env_bytes(o->env, v, f);
    case OPT_PATH: return env_path(o->env, v, f);
    case OPT_BOOL: {
      static const name_value_t k_bools[] = {{"true", 1}, {"false", 0}, {"1", 1}, {"0", 0},
                                             {"on", 1},   {"off", 0},   {NULL, 0}};
      st = env_enum(o->env, v, k_bools, &x);
      if (!st) *(bool *)f = x != 0;
      return st;
    }
    case OPT_PINS:
      if (check_pins(v) || strlen(v) >= RUDA_CONFIG_PATH_MAX)
        return env_fail(o->env, v, "expected %s", k_pins_expected);
      memcpy(f, v, strlen(v) + 1);
      return NULL;
  }
  return NULL;
}

/* With `keep_going`, bad variables are reported on stderr and skipped. */
/* An empty variable counts as unset, except for a path option (RUDA_TRACE),
 * where it turns the option off. */
static ruda_status_t apply_env(ruda_config_t *cfg, bool keep_going) {
  for (size_t i = 0; i < NUM_OPTIONS; i++) {
    const option_t *o = &k_options[i];
    const char *v = getenv(o->env);
    if (!v || (!*v && o->kind != OPT_PATH)) continue;
    ruda_status_t st = set_from_env(o, v, cfg);
    if (!st) continue;
    if (!keep_going) return st;
    char *text = ruda_status_to_string(st);
    fprintf(stderr, "ruda: ignoring %s: %s\n", o->env, text ? text : "invalid value");
    ruda__free(text);
    ruda_status_free(st);
  }
  return NULL;
}

ruda_status_t ruda_config_apply_env(ruda_config_t *cfg) {
  if (!cfg)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_apply_env: cfg is NULL");
  return apply_env(cfg, false);
}

ruda_status_t ruda_config_load(ruda_config_t *out) {
  if (!out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_load: out is NULL");
  ruda_status_t st = load_file_part(out);
  if (st) return st;
  return apply_env(out, false);
}

/* ---- the process-wide configuration ------------------------------------ */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ruda_config_t g_config;
static bool g_set;                           /* ruda_config_set() ran */
static _Atomic(const ruda_config_t *) g_ptr; /* non-NULL once frozen */

const ruda_config_t *ruda_config_get(void) {
  const ruda_config_t *p = atomic_load_explicit(&g_ptr, memory_order_acquire);
  if (p) return p;
  pthread_mutex_lock(&g_lock);
  p = atomic_load_explicit(&g_ptr, memory_order_relaxed);
  if (!p) {
    if (!g_set) {
      ruda_status_t st = load_file_part(&g_config);
      if (st) {
        char *text = ruda_status_to_string(st);
        fprintf(stderr, "ruda: ignoring the configuration file, using the defaults: %s\n",
                text ? text : "invalid configuration");
        ruda__free(text);
        ruda_status_free(st);
        ruda_config_default(&g_config);
      }
      apply_env(&g_config, true);
    }
    p = &g_config;
    atomic_store_explicit(&g_ptr, p, memory_order_release);
  }
  pthread_mutex_unlock(&g_lock);
  return p;
}

static ruda_status_t set_fail(const char *key, const char *expected, const char *found) {
  ruda_status_t st = ruda_status_create(RUDA_ERR_CONFIG, "ruda_config_set: %s: expected %s%s%s",
                                        key, expected, found ? ", found " : "", found ? found : "");
  return ruda_status_set_location(st, NULL, 0, key);
}

/* The checks of the file and the environment, applied to a given value. */
static ruda_status_t validate_logger(const ruda_logger_config_t *l, const char *prefix,
                                     const name_value_t *levels) {
  char key[KEY_MAX], why[160], found[32];
  const char *bad;
  if ((bad = check_enum(levels, (int)l->level, why, sizeof why))) {
    key_join(key, prefix, "level");
    snprintf(found, sizeof found, "%d", (int)l->level);
    return set_fail(key, bad, found);
  }
  if ((bad = check_path(l->file, true))) {
    key_join(key, prefix, "file");
    return set_fail(key, bad, NULL);
  }
  const struct {
    const bool *b;
    const char *name;
  } flags[] = {{&l->append, "append"}, {&l->to_stdout, "stdout"}, {&l->to_stderr, "stderr"}};
  for (size_t i = 0; i < 3; i++) {
    if (!bool_ok(flags[i].b)) {
      key_join(key, prefix, flags[i].name);
      return set_fail(key, "a boolean (0 or 1)", NULL);
    }
  }
  return NULL;
}

static ruda_status_t validate_option(const ruda_config_t *cfg, const option_t *o) {
  const void *f = (const char *)cfg + o->offset;
  char key[KEY_MAX], why[160], found[32];
  const char *bad = NULL;
  key_join(key, o->section, o->key);
  switch (o->kind) {
    case OPT_LOGGER: return validate_logger(f, key, o->names);
    case OPT_CACHE: {
      const ruda_cache_config_t *c = f;
      if (c->location < RUDA_CACHE_LOCATION_NONE || c->location > RUDA_CACHE_LOCATION_USER) {
        snprintf(found, sizeof found, "location %d", (int)c->location);
        return set_fail(key, "\"user\", \"local\", \"target\", \"global\", \"none\" or { file = \"path\" }", found);
      }
      bad = check_path(c->file, c->location != RUDA_CACHE_LOCATION_FILE);
      if (bad) {
        key_join(key, key, "file");
        return set_fail(key, bad, NULL);
      }
      return NULL;
    }
    case OPT_ENUM: {
      int v;
      memcpy(&v, f, sizeof v);
      snprintf(found, sizeof found, "%d", v);
      bad = check_enum(o->names, v, why, sizeof why);
      break;
    }
    case OPT_UINT: {
      uint32_t v;
      memcpy(&v, f, sizeof v);
      snprintf(found, sizeof found, "%u", v);
      bad = check_uint(o, v, why, sizeof why);
      break;
    }
    case OPT_PATH: bad = check_path(f, true); found[0] = '\0'; break;
    case OPT_BOOL:
      bad = bool_ok(f) ? NULL : "a boolean (0 or 1)";
      found[0] = '\0';
      break;
    case OPT_PINS: bad = check_pins(f); found[0] = '\0'; break;
    case OPT_BYTES: /* every value is a size */
    case OPT_CACHE_DIR: /* the same field as OPT_CACHE */
      return NULL;
  }
  return bad ? set_fail(key, bad, found[0] ? found : NULL) : NULL;
}

ruda_status_t ruda__config_validate(const ruda_config_t *cfg) {
  for (size_t i = 0; i < NUM_OPTIONS; i++) {
    if (!k_options[i].key) continue;
    ruda_status_t st = validate_option(cfg, &k_options[i]);
    if (st) return st;
  }
  const char *bad = check_path(cfg->source, true);
  return bad ? set_fail("source", bad, NULL) : NULL;
}

ruda_status_t ruda_config_set(const ruda_config_t *cfg) {
  if (!cfg) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_config_set: cfg is NULL");
  ruda_status_t st = ruda__config_validate(cfg);
  if (st) return st;
  pthread_mutex_lock(&g_lock);
  if (atomic_load_explicit(&g_ptr, memory_order_relaxed))
    st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "ruda_config_set: the configuration is already in use "
                            "(ruda_config_get() ran first)");
  else if (g_set)
    st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "Cannot set the configuration multiple times.");
  else {
    g_config = *cfg;
    g_set = true;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

void ruda__config_reset_for_test(void) {
  pthread_mutex_lock(&g_lock);
  atomic_store(&g_ptr, NULL);
  g_set = false;
  ruda_config_default(&g_config);
  pthread_mutex_unlock(&g_lock);
}

/* ---- cache directory --------------------------------------------------- */

static size_t put_path(char *buf, size_t cap, const char *a, const char *b) {
  int n = snprintf(buf, cap, "%s%s", a, b);
  if (n < 0) {
    if (cap) buf[0] = '\0';
    return 0;
  }
  return (size_t)n;
}

size_t ruda_config_cache_dir(const ruda_config_t *cfg, char *buf, size_t cap) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, ".");
  const char *home = getenv("HOME");
  const char *xdg;
  if (!cfg) return put_path(buf, cap, "", "");
  switch (cfg->compilation.cache.location) {
    case RUDA_CACHE_LOCATION_LOCAL:
      return put_path(buf, cap, cwd, "/.ruda-cache");
    case RUDA_CACHE_LOCATION_TARGET:
      if (cfg->source[0]) {
        char dir[RUDA_CONFIG_PATH_MAX];
        memcpy(dir, cfg->source, sizeof dir);
        char *slash = strrchr(dir, '/');
        if (slash) {
          *slash = '\0';
          return put_path(buf, cap, slash == dir ? "" : dir, "/target/ruda-cache");
        }
        return put_path(buf, cap, cwd, "/target/ruda-cache");
      }
      xdg = getenv("XDG_CACHE_HOME");
      if (xdg && *xdg == '/') return put_path(buf, cap, xdg, "/ruda");
      if (home && *home) return put_path(buf, cap, home, "/.cache/ruda");
      return put_path(buf, cap, cwd, "/target/ruda-cache");
    case RUDA_CACHE_LOCATION_USER:
      xdg = getenv("XDG_CACHE_HOME");
      if (xdg && *xdg == '/') return put_path(buf, cap, xdg, "/ruda");
      if (home && *home) return put_path(buf, cap, home, "/.cache/ruda");
      return put_path(buf, cap, cwd, "/.ruda-cache");
    case RUDA_CACHE_LOCATION_GLOBAL:
      xdg = getenv("XDG_CONFIG_HOME");
      if (xdg && *xdg == '/') return put_path(buf, cap, xdg, "/ruda/cache");
      if (home && *home) return put_path(buf, cap, home, "/.config/ruda/cache");
      return put_path(buf, cap, cwd, "/.ruda-cache");
    case RUDA_CACHE_LOCATION_FILE:
      return put_path(buf, cap, cfg->compilation.cache.file, "");
    case RUDA_CACHE_LOCATION_NONE:
    default:
      return put_path(buf, cap, "", "");
  }
}
