/* The profiling summary table (see profile_summary.h). */
#include "base/alloc.h"
#include "server/profile_summary.h"
#include "ruda/profiling.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/log.h"

#define NAME_MAX_LEN 256

typedef struct summary_row {
  char *name;       /* shortened: the row's key */
  char *raw;        /* the name as first recorded, for the fast path */
  uint64_t raw_hash;
  uint64_t total_ns;
  uint64_t count;
} summary_row_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static summary_row_t *g_rows;
static size_t g_len, g_cap;
static void (*g_sink)(const char *text, void *ctx);
static void *g_sink_ctx;

/* ---- Names ---- */

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; ++s) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

/* Appends `len` bytes of `src` to buf at *pos, counting what would not fit. */
static void put(char *buf, size_t cap, size_t *pos, const char *src, size_t len) {
  if (*pos < cap) {
    size_t room = cap - *pos;
    memcpy(buf + *pos, src, len < room ? len : room);
  }
  *pos += len;
}

static void terminate(char *buf, size_t cap, size_t pos) {
  if (cap == 0) return;
  buf[pos < cap ? pos : cap - 1] = '\0';
}

size_t ruda__profile_name_balanced(const char *name, char *buf, size_t cap) {
  if (!name) name = "unknown";
  /* Only the first line names the kernel (the rest is detail). */
  size_t end = strcspn(name, "\r\n");
  if (name[end] == '\0') return ruda_name_balanced(name, buf, cap);
  char first[NAME_MAX_LEN];
  if (end >= sizeof first) end = sizeof first - 1;
  memcpy(first, name, end);
  first[end] = '\0';
  return ruda_name_balanced(first, buf, cap);
}

size_t ruda__profile_duration_format(uint64_t ns, char *buf, size_t cap) {
  static const struct {
    uint64_t div;
    const char *unit;
    int digits;
  } units[] = {{1000000000ull, "s", 9}, {1000000ull, "ms", 6}, {1000ull, "\xC2\xB5s", 3}};
  for (size_t u = 0; u < sizeof units / sizeof units[0]; ++u) {
    if (ns < units[u].div) continue;
    uint64_t whole = ns / units[u].div, frac = ns % units[u].div;
    if (frac == 0) return (size_t)snprintf(buf, cap, "%llu%s", (unsigned long long)whole, units[u].unit);
    char digits[16];
    snprintf(digits, sizeof digits, "%0*llu", units[u].digits, (unsigned long long)frac);
    size_t n = strlen(digits);
    while (n > 0 && digits[n - 1] == '0') digits[--n] = '\0';
    return (size_t)snprintf(buf, cap, "%llu.%s%s", (unsigned long long)whole, digits,
                            units[u].unit);
  }
  return (size_t)snprintf(buf, cap, "%lluns", (unsigned long long)ns);
}

/* ---- Recording ---- */

/* Under g_lock: the row first recorded as `raw`, or NULL. */
static summary_row_t *find_row_raw(const char *raw, uint64_t raw_hash) {
  for (size_t i = 0; i < g_len; ++i)
    if (g_rows[i].raw_hash == raw_hash && strcmp(g_rows[i].raw, raw) == 0) return &g_rows[i];
  return NULL;
}

/* Under g_lock: the row of a shortened name, or NULL. */
static summary_row_t *find_row_short(const char *short_name) {
  for (size_t i = 0; i < g_len; ++i)
    if (strcmp(g_rows[i].name, short_name) == 0) return &g_rows[i];
  return NULL;
}

static char *dup_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = ruda__malloc(n);
  if (copy) memcpy(copy, s, n);
  return copy;
}

/* A launch site records the same name over and over: a row is found by the
 * name as given, and only a name not seen before is shortened (outside the
 * lock) and matched by its short form. */
void ruda__profile_summary_record(const char *name, uint64_t duration_ns) {
  if (!name) name = "unknown";
  uint64_t raw_hash = name_hash(name);

  pthread_mutex_lock(&g_lock);
  summary_row_t *row = find_row_raw(name, raw_hash);
  if (row) {
    row->total_ns += duration_ns;
    row->count += 1;
    pthread_mutex_unlock(&g_lock);
    return;
  }
  pthread_mutex_unlock(&g_lock);

  char short_name[NAME_MAX_LEN];
  ruda__profile_name_balanced(name, short_name, sizeof short_name);
  pthread_mutex_lock(&g_lock);
  row = find_row_short(short_name);
  if (row) {
    row->total_ns += duration_ns;
    row->count += 1;
    goto out_unlock;
  }
  summary_row_t *rows = ruda__grow(g_rows, &g_cap, g_len, sizeof *rows, 16);
  if (!rows) goto out_unlock;
  g_rows = rows;
  char *copy = dup_text(short_name), *raw = dup_text(name);
  if (!copy || !raw) {
    ruda__free(copy);
    ruda__free(raw);
    goto out_unlock;
  }
  g_rows[g_len++] = (summary_row_t){copy, raw, raw_hash, duration_ns, 1};
out_unlock:
  pthread_mutex_unlock(&g_lock);
}

static void free_rows(summary_row_t *rows, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    ruda__free(rows[i].name);
    ruda__free(rows[i].raw);
  }
  ruda__free(rows);
}

static void reset_locked(void) {
  free_rows(g_rows, g_len);
  g_rows = NULL;
  g_len = g_cap = 0;
}

void ruda__profile_summary_reset(void) {
  pthread_mutex_lock(&g_lock);
  reset_locked();
  pthread_mutex_unlock(&g_lock);
}

void ruda__profile_summary_set_sink(void (*fn)(const char *text, void *ctx), void *ctx) {
  pthread_mutex_lock(&g_lock);
  g_sink = fn;
  g_sink_ctx = ctx;
  pthread_mutex_unlock(&g_lock);
}

/* ---- Formatting ---- */

static int cmp_rows(const void *a, const void *b) {
  const summary_row_t *x = a, *y = b;
  if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* Display width of UTF-8 text: continuation bytes take no column. */
static size_t text_width(const char *s) {
  size_t w = 0;
  for (; *s; ++s) w += ((unsigned char)*s & 0xC0) != 0x80;
  return w;
}

static void put_cell(char *buf, size_t cap, size_t *pos, const char *text, size_t width) {
  put(buf, cap, pos, " ", 1);
  put(buf, cap, pos, text, strlen(text));
  for (size_t w = text_width(text); w < width; ++w) put(buf, cap, pos, " ", 1);
  put(buf, cap, pos, " |", 2);
}

static void put_rule(char *buf, size_t cap, size_t *pos, const size_t widths[4]) {
  put(buf, cap, pos, "|", 1);
  for (int c = 0; c < 4; ++c) {
    for (size_t w = 0; w < widths[c] + 2; ++w) put(buf, cap, pos, "-", 1);
    put(buf, cap, pos, "|", 1);
  }
  put(buf, cap, pos, "\n", 1);
}

typedef struct cells {
  char duration[32], count[24], ratio[24];
} cells_t;

static void fill_cells(cells_t *c, uint64_t ns, uint64_t count, uint64_t total) {
  ruda__profile_duration_format(ns, c->duration, sizeof c->duration);
  snprintf(c->count, sizeof c->count, "%llu", (unsigned long long)count);
  double share = total ? 100.0 * (double)ns / (double)total : 0.0;
  snprintf(c->ratio, sizeof c->ratio, "%.2f %%", share);
}

/* Formats `rows` (sorted in place). */
static size_t format_rows(summary_row_t *rows, size_t n, char *buf, size_t cap) {
  size_t pos = 0;
  if (n == 0) {
    terminate(buf, cap, 0);
    return 0;
  }
  qsort(rows, n, sizeof *rows, cmp_rows);
  uint64_t total = 0, total_count = 0;
  for (size_t i = 0; i < n; ++i) {
    total += rows[i].total_ns;
    total_count += rows[i].count;
  }
  static const char *headers[4] = {"Name", "Duration", "Num Computed", "Ratio"};
  size_t widths[4];
  for (int c = 0; c < 4; ++c) widths[c] = strlen(headers[c]);
  cells_t cells;
  for (size_t i = 0; i <= n; ++i) {
    const char *name = i < n ? rows[i].name : "Total";
    fill_cells(&cells, i < n ? rows[i].total_ns : total, i < n ? rows[i].count : total_count,
               total);
    size_t w[4] = {text_width(name), text_width(cells.duration), strlen(cells.count),
                   strlen(cells.ratio)};
    for (int c = 0; c < 4; ++c)
      if (w[c] > widths[c]) widths[c] = w[c];
  }
  put(buf, cap, &pos, "|", 1);
  for (int c = 0; c < 4; ++c) put_cell(buf, cap, &pos, headers[c], widths[c]);
  put(buf, cap, &pos, "\n", 1);
  put_rule(buf, cap, &pos, widths);
  for (size_t i = 0; i <= n; ++i) {
    if (i == n) put_rule(buf, cap, &pos, widths);
    const char *name = i < n ? rows[i].name : "Total";
    fill_cells(&cells, i < n ? rows[i].total_ns : total, i < n ? rows[i].count : total_count,
               total);
    put(buf, cap, &pos, "|", 1);
    put_cell(buf, cap, &pos, name, widths[0]);
    put_cell(buf, cap, &pos, cells.duration, widths[1]);
    put_cell(buf, cap, &pos, cells.count, widths[2]);
    put_cell(buf, cap, &pos, cells.ratio, widths[3]);
    put(buf, cap, &pos, "\n", 1);
  }
  terminate(buf, cap, pos);
  return pos;
}

size_t ruda__profile_summary_format(char *buf, size_t cap) {
  pthread_mutex_lock(&g_lock);
  /* Sorting reorders the table, which is harmless: lookups are by name. */
  size_t n = format_rows(g_rows, g_len, buf, cap);
  pthread_mutex_unlock(&g_lock);
  return n;
}

void ruda__profile_summary_print_and_reset(void) {
  pthread_mutex_lock(&g_lock);
  if (g_len == 0) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  /* Take the rows so formatting and printing happen outside the lock. */
  summary_row_t *rows = g_rows;
  size_t n = g_len;
  void (*sink)(const char *, void *) = g_sink;
  void *sink_ctx = g_sink_ctx;
  g_rows = NULL;
  g_len = g_cap = 0;
  pthread_mutex_unlock(&g_lock);

  size_t need = format_rows(rows, n, NULL, 0) + 1;
  char *text = ruda__malloc(need);
  if (text) {
    format_rows(rows, n, text, need);
    if (sink) {
      sink(text, sink_ctx);
    } else if (ruda_log_enabled(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_BASIC)) {
      /* One log line per row: every row gets the same prefix and the
       * columns stay aligned. */
      for (char *line = text; *line;) {
        size_t line_len = strcspn(line, "\n");
        ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_BASIC, "%.*s", (int)line_len, line);
        line += line_len + (line[line_len] == '\n');
      }
    } else {
      fputs(text, stdout);
      fflush(stdout);
    }
    ruda__free(text);
  }
  free_rows(rows, n);
}

/* ---- The public face (ruda/profiling.h) ---- */

void ruda_profile_summary_record(const char *name, uint64_t duration_ns) {
  ruda__profile_summary_record(name, duration_ns);
}

size_t ruda_profile_summary_format(char *buf, size_t cap) {
  return ruda__profile_summary_format(buf, cap);
}

void ruda_profile_summary_reset(void) { ruda__profile_summary_reset(); }
