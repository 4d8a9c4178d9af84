/* Log channels, sinks and the balanced name format; see ruda/log.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* PATH_MAX */
#endif
#include "ruda/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log_internal.h"

enum { SINK_STDOUT, SINK_STDERR, SINK_FILE };
enum { MAX_SINKS = RUDA_LOG_CHANNEL_COUNT_ * 3, LEVEL_UNSET = -1 };

typedef struct {
  int kind;
  FILE *fp;
  char path[RUDA_CONFIG_PATH_MAX];
  dev_t dev;
  ino_t ino;
} sink_t;

/* Levels are read without the lock; everything else is under g_lock. All
 * levels are LEVEL_UNSET until the logger is set up, and none after. */
static _Atomic int g_levels[RUDA_LOG_CHANNEL_COUNT_] = {LEVEL_UNSET, LEVEL_UNSET, LEVEL_UNSET,
                                                       LEVEL_UNSET, LEVEL_UNSET};
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static sink_t g_sinks[MAX_SINKS];
static size_t g_nsinks;
static unsigned g_channel_sinks[RUDA_LOG_CHANNEL_COUNT_]; /* bit i: g_sinks[i] */

static void close_sinks_locked(void) {
  for (size_t i = 0; i < g_nsinks; i++)
    if (g_sinks[i].kind == SINK_FILE && g_sinks[i].fp) fclose(g_sinks[i].fp);
  g_nsinks = 0;
  memset(g_channel_sinks, 0, sizeof g_channel_sinks);
}

/* mkdir -p of the directory part of `path`. */
static void make_parent_dirs(const char *path) {
  char dir[RUDA_CONFIG_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(dir, 0777);
    *p = '/';
  }
  mkdir(dir, 0777);
}

/* Index of the sink for a target, opening it if new; -1 if it cannot be
 * opened (*err then describes why). */
static int sink_for_locked(int kind, const ruda_logger_config_t *l, ruda_status_t *err) {
  struct stat sb;
  bool have_id = false;
  if (kind == SINK_FILE && stat(l->file, &sb) == 0) have_id = true;
  for (size_t i = 0; i < g_nsinks; i++) {
    if (g_sinks[i].kind != kind) continue;
    if (kind != SINK_FILE) return (int)i;
    /* The same file under two spellings is still one sink. */
    if (strcmp(g_sinks[i].path, l->file) == 0 ||
        (have_id && g_sinks[i].dev == sb.st_dev && g_sinks[i].ino == sb.st_ino))
      return (int)i;
  }
  if (g_nsinks == MAX_SINKS) return -1;
  sink_t *s = &g_sinks[g_nsinks];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  if (kind == SINK_FILE) {
    make_parent_dirs(l->file);
    s->fp = fopen(l->file, l->append ? "a" : "w");
    if (!s->fp) {
      if (!*err) {
        *err = ruda_status_create(RUDA_ERR_CONFIG, "cannot open the log file: %s", strerror(errno));
        ruda_status_set_location(*err, l->file, 0, NULL);
      }
      return -1;
    }
    snprintf(s->path, sizeof s->path, "%s", l->file);
    if (fstat(fileno(s->fp), &sb) == 0) {
      s->dev = sb.st_dev;
      s->ino = sb.st_ino;
    }
  }
  return (int)g_nsinks++;
}

static ruda_status_t configure_locked(const ruda_config_t *cfg) {
  ruda_status_t err = NULL;
  close_sinks_locked();
  for (int ch = 0; ch < RUDA_LOG_CHANNEL_COUNT_; ch++) {
    const ruda_logger_config_t *l = ruda_config_logger(cfg, (ruda_log_channel_t)ch);
    int level = l ? (int)l->level : 0;
    if (level < RUDA_LOG_LEVEL_DISABLED || level > RUDA_LOG_LEVEL_FULL) level = 0;
    if (level > RUDA_LOG_LEVEL_DISABLED) {
      unsigned mask = 0;
      int i;
      if (l->to_stdout && (i = sink_for_locked(SINK_STDOUT, l, &err)) >= 0) mask |= 1u << i;
      if (l->to_stderr && (i = sink_for_locked(SINK_STDERR, l, &err)) >= 0) mask |= 1u << i;
      if (l->file[0] && (i = sink_for_locked(SINK_FILE, l, &err)) >= 0) mask |= 1u << i;
      /* A level with no sink at all writes to stderr. */
      if (!l->to_stdout && !l->to_stderr && !l->file[0] &&
          (i = sink_for_locked(SINK_STDERR, l, &err)) >= 0)
        mask |= 1u << i;
      g_channel_sinks[ch] = mask;
    }
    atomic_store_explicit(&g_levels[ch], level, memory_order_release);
  }
  return err;
}

ruda_status_t ruda_log_configure(const ruda_config_t *cfg) {
  if (!cfg) cfg = ruda_config_get();
  pthread_mutex_lock(&g_lock);
  ruda_status_t err = configure_locked(cfg);
  pthread_mutex_unlock(&g_lock);
  return err;
}

/* First use: set up from the process-wide configuration. Problems go to
 * stderr once; logging must never fail the caller. */
static void ensure_ready(void) {
  pthread_mutex_lock(&g_lock);
  if (atomic_load_explicit(&g_levels[0], memory_order_relaxed) == LEVEL_UNSET) {
    ruda_status_t err = configure_locked(ruda_config_get());
    if (err) {
      char *text = ruda_status_to_string(err);
      fprintf(stderr, "ruda: logging: %s\n", text ? text : "cannot open a log sink");
      ruda__free(text);
      ruda_status_free(err);
    }
  }
  pthread_mutex_unlock(&g_lock);
}

void ruda_log_shutdown(void) {
  pthread_mutex_lock(&g_lock);
  close_sinks_locked();
  for (int ch = 0; ch < RUDA_LOG_CHANNEL_COUNT_; ch++)
    atomic_store_explicit(&g_levels[ch], LEVEL_UNSET, memory_order_release);
  pthread_mutex_unlock(&g_lock);
}

static int level_of(ruda_log_channel_t channel) {
  int cur = atomic_load_explicit(&g_levels[channel], memory_order_relaxed);
  if (__builtin_expect(cur == LEVEL_UNSET, 0)) {
    ensure_ready();
    cur = atomic_load_explicit(&g_levels[channel], memory_order_acquire);
    if (cur == LEVEL_UNSET) cur = RUDA_LOG_LEVEL_DISABLED; /* raced a shutdown */
  }
  return cur;
}

bool ruda_log_enabled(ruda_log_channel_t channel, ruda_log_level_t level) {
  if ((unsigned)channel >= RUDA_LOG_CHANNEL_COUNT_ || level <= RUDA_LOG_LEVEL_DISABLED)
    return false;
  return (int)level <= level_of(channel);
}

ruda_log_level_t ruda_log_level(ruda_log_channel_t channel) {
  if ((unsigned)channel >= RUDA_LOG_CHANNEL_COUNT_) return RUDA_LOG_LEVEL_DISABLED;
  return (ruda_log_level_t)level_of(channel);
}

/* Where sink i writes (NULL: a file that could not be opened); under
 * g_lock. */
static FILE *sink_file(size_t i) {
  return g_sinks[i].kind == SINK_STDOUT   ? stdout
         : g_sinks[i].kind == SINK_STDERR ? stderr
                                          : g_sinks[i].fp;
}

void ruda_logv(ruda_log_channel_t channel, ruda_log_level_t level, const char *fmt, va_list ap) {
  if (!fmt || !ruda_log_enabled(channel, level)) return;
  char stack[512];
  char *line = stack;
  int prefix = snprintf(stack, sizeof stack, "[ruda %s] ", ruda_log_channel_name(channel));
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(stack + prefix, sizeof stack - (size_t)prefix, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  size_t len = (size_t)prefix + (size_t)n;
  if (len + 2 > sizeof stack) {
    line = ruda__malloc(len + 2);
    if (!line) {
      /* Out of memory: write what fit rather than nothing. */
      line = stack;
      len = sizeof stack - 2;
    } else {
      memcpy(line, stack, (size_t)prefix);
      vsnprintf(line + prefix, (size_t)n + 1, fmt, ap);
    }
  }
  if (len == 0 || line[len - 1] != '\n') line[len++] = '\n';
  line[len] = '\0';
  pthread_mutex_lock(&g_lock);
  unsigned mask = g_channel_sinks[channel];
  for (size_t i = 0; i < g_nsinks; i++) {
    if (!(mask & (1u << i))) continue;
    FILE *fp = sink_file(i);
    if (!fp) continue;
    fwrite(line, 1, len, fp);
    fflush(fp);
  }
  pthread_mutex_unlock(&g_lock);
  if (line != stack) ruda__free(line);
}

void ruda__log_always(ruda_log_channel_t channel, const char *text) {
  if ((unsigned)channel >= RUDA_LOG_CHANNEL_COUNT_ || !text) return;
  bool enabled = level_of(channel) > RUDA_LOG_LEVEL_DISABLED;
  size_t n = strlen(text);
  const char *nl = n && text[n - 1] == '\n' ? "" : "\n";
  pthread_mutex_lock(&g_lock);
  unsigned mask = enabled ? g_channel_sinks[channel] : 0;
  bool written = false;
  for (size_t i = 0; i < g_nsinks; i++) {
    if (!(mask & (1u << i))) continue;
    FILE *fp = sink_file(i);
    if (!fp) continue;
    fprintf(fp, "[ruda %s] %s%s", ruda_log_channel_name(channel), text, nl);
    fflush(fp);
    written = true;
  }
  if (!written) {
    fprintf(stderr, "[ruda %s] %s%s", ruda_log_channel_name(channel), text, nl);
    fflush(stderr);
  }
  pthread_mutex_unlock(&g_lock);
}

void ruda__log_taggedv(ruda_log_channel_t channel, ruda_log_level_t level, const char *tag,
                       const char *fmt, va_list ap) {
  if (!ruda_log_enabled(channel, level)) return;
  char text[1200];
  vsnprintf(text, sizeof text, fmt, ap);
  ruda_log(channel, level, "[%s] %s", tag, text);
}

void ruda_log(ruda_log_channel_t channel, ruda_log_level_t level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda_logv(channel, level, fmt, ap);
  va_end(ap);
}

void ruda__log_tagged(ruda_log_channel_t channel, ruda_log_level_t level, const char *tag,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda__log_taggedv(channel, level, tag, fmt, ap);
  va_end(ap);
}

void ruda__stderr_linev(const char *who, const char *kind, const char *fmt, va_list ap) {
  char line[1200];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "ruda[%s] %s%s\n", who, kind, line);
}

void ruda__warn(const char *who, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda__stderr_linev(who, "warning: ", fmt, ap);
  va_end(ap);
}

/* ---- balanced names ----------------------------------------------------- */

static bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

size_t ruda_name_balanced(const char *name, char *buf, size_t cap) {
  size_t len = 0;
  bool first = true;
  const char *p = name ? name : "";
  while (*p) {
    if (!is_ident(*p) && *p != ':') {
      p++;
      continue;
    }
    /* A path: identifiers joined by "::"; keep its last segment. */
    const char *seg = NULL, *seg_end = NULL;
    while (*p && (is_ident(*p) || *p == ':')) {
      if (*p == ':') {
        p++;
        continue;
      }
      const char *s = p;
      while (*p && is_ident(*p)) p++;
      seg = s;
      seg_end = p;
    }
    /* A lifetime ('a) or a placeholder (_) names nothing. */
    if (!seg || (seg_end - seg == 1 && *seg == '_') || (seg > name && seg[-1] == '\''))
      continue;
    const char *sep = first ? "" : " | ";
    for (const char *q = sep; *q; q++, len++)
      if (len + 1 < cap) buf[len] = *q;
    for (const char *q = seg; q < seg_end; q++, len++)
      if (len + 1 < cap) buf[len] = *q;
    first = false;
  }
  if (cap) buf[len < cap ? len : cap - 1] = '\0';
  return len;
}
