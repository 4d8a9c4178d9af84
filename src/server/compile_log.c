/* Failed builds of portable kernels, as users read them
 * (src/server/compile_log.h), and the keyword hints (ruda/kernel.h). */
#include "server/compile_log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ruda/kernel.h"
#include "ruda/log.h"

/* ---- Keyword hints ---- */

/* Words C accepts as names that OpenCL C or C++ (NVRTC) reserve. */
static const char *const k_reserved[] = {
    "global",   "local",     "constant", "private", "kernel",  "half",   "__global",
    "__local",  "__kernel",  "new",      "delete",  "class",   "this",   "template",
    "typename", "namespace", "operator", "public",  "virtual", "friend", "throw",
    "try",      "catch",     "using",    "explicit", "mutable", "export", "nullptr"};
enum { NUM_RESERVED = sizeof k_reserved / sizeof k_reserved[0] };

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Appends to out[0..cap) at *used, counting what does not fit. */
static void put(char *out, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t cap, size_t *used, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(*used < cap ? out + *used : NULL, *used < cap ? cap - *used : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

size_t ruda_kernel_text_hints(const char *text, size_t len, char *out, size_t cap) {
  size_t used = 0;
  if (out && cap) out[0] = '\0';
  if (!out) cap = 0;
  if (!text) return 0;
  const char *p = text, *end = text + len;
  bool said[NUM_RESERVED] = {false};
  bool line_start = true;
  while (p < end) {
    char c = *p;
    if (c == '\n') {
      line_start = true;
      p++;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      p++;
    } else if (line_start && c == '#') {
      while (p < end && (*p != '\n' || p[-1] == '\\')) p++;
    } else if (c == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
      p += 2;
      while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) p++;
      p = p + 2 < end ? p + 2 : end;
    } else if (c == '"' || c == '\'') {
      line_start = false;
      p++;
      while (p < end && *p != c && *p != '\n') p += *p == '\\' ? 2 : 1;
      if (p < end) p++;
    } else if (word_char(c)) {
      line_start = false;
      const char *w = p;
      while (p < end && word_char(*p)) p++;
      size_t n = (size_t)(p - w);
      for (size_t i = 0; i < NUM_RESERVED; i++) {
        if (!said[i] && strlen(k_reserved[i]) == n && memcmp(k_reserved[i], w, n) == 0) {
          put(out, cap, &used,
              "hint: '%s' is a keyword of OpenCL C or C++; kernels must not use it as a name "
              "(docs/kernels.md, the rules)\n",
              k_reserved[i]);
          said[i] = true;
        }
      }
    } else {
      line_start = false;
      p++;
    }
  }
  return used;
}

/* ---- The compiler's log ---- */

static bool starts_with(const char *s, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  return len >= n && memcmp(s, prefix, n) == 0;
}

/* A line's text from its first non-blank. */
static const char *skip_spaces(const char *s, const char *end) {
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  return s;
}

bool ruda__compile_log_is_summary(const char *line, size_t len) {
  const char *p = skip_spaces(line, line + len), *end = line + len;
  if (p >= end || !isdigit((unsigned char)*p)) return false;
  while (end > p && (end[-1] == '\r' || end[-1] == ' ')) end--;
  size_t n = (size_t)(end - p);
  static const char generated[] = " generated.";
  size_t gl = sizeof generated - 1;
  if (n > gl && memcmp(end - gl, generated, gl) == 0) return true;
  static const char detected[] = " detected in the compilation of";
  for (const char *q = p; q + sizeof detected - 1 <= end; q++)
    if (memcmp(q, detected, sizeof detected - 1) == 0) return true;
  return false;
}

/* Where a message line points: the path of "PATH:LINE:COL: kind: ...",
 * "kind: PATH:LINE:COL ...", "PATH(LINE): kind: ..." or "In file included
 * from PATH:LINE"; false for snippet, caret and other lines. */
static bool message_path(const char *line, size_t len, const char **path, size_t *path_len) {
  const char *p = line, *end = line + len;
  static const char *const kinds[] = {"fatal error: ", "error: ", "warning: ", "note: ",
                                      "remark: "};
  static const char included[] = "In file included from ";
  bool kind_first = false;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (starts_with(p, (size_t)(end - p), kinds[i])) {
      p += strlen(kinds[i]);
      kind_first = true;
      break;
    }
  }
  if (!kind_first && starts_with(p, (size_t)(end - p), included)) {
    p += sizeof included - 1;
    kind_first = true;
  }
  /* The path runs to the ':' or '(' followed by a line number. */
  for (const char *q = p; q < end; q++) {
    if ((*q == ':' || *q == '(') && q > p && q + 1 < end && isdigit((unsigned char)q[1])) {
      const char *r = q + 1;
      while (r < end && isdigit((unsigned char)*r)) r++;
      bool located = *q == '(' ? r < end && *r == ')' : r >= end || *r == ':' || *r == ',' ||
                                                            *r == ' ';
      if (!located) continue;
      if (!kind_first) {
        /* "PATH:L:C: kind:" or "PATH(L): kind:" must name a kind after it. */
        const char *rest = r;
        while (rest < end && (*rest == ':' || *rest == ')' || isdigit((unsigned char)*rest))) rest++;
        rest = skip_spaces(rest, end);
        bool kind = false;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !kind; i++)
          kind = starts_with(rest, (size_t)(end - rest), kinds[i]);
        if (!kind) return false;
      }
      *path = p;
      *path_len = (size_t)(q - p);
      return true;
    }
    if (*q == ' ' && !kind_first) return false;
  }
  return false;
}

static const char k_prelude_dir[] = "ruda/dialect/";

static bool in_prelude(const char *path, size_t len) {
  return starts_with(path, len, k_prelude_dir);
}

/* Copies a kept line with " <Spelling=ruda/dialect/...>" (PoCL's note of
 * where a macro's text was written, in the prelude) left out. */
static void put_line(char *out, size_t cap, size_t *used, const char *line, size_t len) {
  static const char spelling[] = " <Spelling=";
  put(out, cap, used, "    ");
  const char *p = line, *end = line + len;
  while (p < end) {
    const char *s = NULL;
    for (const char *q = p; q + sizeof spelling - 1 <= end; q++) {
      if (memcmp(q, spelling, sizeof spelling - 1) == 0) {
        s = q;
        break;
      }
    }
    if (!s) break;
    const char *close = memchr(s, '>', (size_t)(end - s));
    if (!close) break;
    const char *sp = s + sizeof spelling - 1;
    bool drop = in_prelude(sp, (size_t)(close - sp));
    size_t keep = (size_t)((drop ? s : close + 1) - p);
    put(out, cap, used, "%.*s", (int)keep, p);
    p = close + 1;
  }
  put(out, cap, used, "%.*s\n", (int)(end - p), p);
}

/* The line at `p`: its length without the newline in *len; returns where
 * the next line starts (the terminating NUL after the last one). */
static const char *line_at(const char *p, size_t *len) {
  const char *nl = strchr(p, '\n');
  *len = nl ? (size_t)(nl - p) : strlen(p);
  return nl ? nl + 1 : p + *len;
}

/* One line of a compiler's log, and the path of the message it opens. */
typedef struct log_line {
  const char *text;
  size_t len;      /* without the newline */
  bool message;    /* the line opens a message about `path` */
  const char *path;
  size_t path_len;
} log_line_t;

/* Reads the line at *at into *l and steps *at past it; false at the end of
 * the log (or for a NULL log). */
static bool next_log_line(const char **at, log_line_t *l) {
  const char *p = *at;
  if (!p || !*p) return false;
  l->text = p;
  *at = line_at(p, &l->len);
  l->path = NULL;
  l->path_len = 0;
  l->message = message_path(p, l->len, &l->path, &l->path_len);
  return true;
}

enum { MAX_SHOWN_LINES = 60 };

/* Writes the user's messages of `log` (or, with `prelude_too`, every
 * message); returns the number of prelude messages left out. */
static size_t put_messages(char *out, size_t cap, size_t *used, const char *log,
                           bool prelude_too, size_t *shown_lines) {
  size_t left_out = 0;
  bool keep = true; /* the current message's lines are shown */
  log_line_t l;
  for (const char *at = log; next_log_line(&at, &l);) {
    if (l.len == 0 || ruda__compile_log_is_summary(l.text, l.len)) {
      /* blank, or the closing count */
    } else if (l.message) {
      keep = prelude_too || !in_prelude(l.path, l.path_len);
      if (!keep && !starts_with(l.text, l.len, "In file included from ")) left_out++;
      if (keep && (*shown_lines)++ < MAX_SHOWN_LINES) put_line(out, cap, used, l.text, l.len);
    } else if (keep && (*shown_lines)++ < MAX_SHOWN_LINES) {
      put_line(out, cap, used, l.text, l.len);
    }
  }
  return left_out;
}

static bool has_user_message(const char *log) {
  log_line_t l;
  for (const char *at = log; next_log_line(&at, &l);)
    if (l.message && !in_prelude(l.path, l.path_len)) return true;
  return false;
}

/* The reason, written into out[0..cap); returns its full length. */
static size_t compose(const ruda__compile_failure_t *f, char *out, size_t cap) {
  size_t used = 0;
  put(out, cap, &used, "[Compilation Error] portable kernel '%s' (%s), compiled by %s:\n",
      f->kernel ? f->kernel : "?", f->origin && f->origin[0] ? f->origin : "its embedded text",
      f->compiler ? f->compiler : "the run-time compiler");
  const char *log = f->log && f->log[0] ? f->log : NULL;
  size_t shown = 0, left_out = 0;
  if (!log) {
    put(out, cap, &used, "    (the compiler gave no log)\n");
  } else {
    left_out = put_messages(out, cap, &used, log, !has_user_message(log), &shown);
  }
  if (shown > MAX_SHOWN_LINES)
    put(out, cap, &used, "    (%zu more lines)\n", shown - MAX_SHOWN_LINES);
  size_t hl = ruda_kernel_text_hints(f->text, f->text_len, NULL, 0);
  if (hl) {
    char *hints = ruda__malloc(hl + 1);
    if (hints) {
      ruda_kernel_text_hints(f->text, f->text_len, hints, hl + 1);
      const char *p = hints;
      while (*p) {
        size_t len;
        const char *next = line_at(p, &len);
        put_line(out, cap, &used, p, len);
        p = next;
      }
      ruda__free(hints);
    }
  }
  if (left_out)
    put(out, cap, &used,
        "    (%zu message%s about ruda's prelude left out: RUDA_LOG_COMPILATION=basic prints "
        "the whole log)\n",
        left_out, left_out == 1 ? "" : "s");
  return used;
}

ruda_status_t ruda__compile_failure_status(const ruda__compile_failure_t *f) {
  const char *name = f->kernel ? f->kernel : "?";
  if (f->log && f->log[0] && ruda_log_enabled(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC))
    ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC,
             "kernel '%s' failed to compile (%s); the compiler's whole log:\n%s", name,
             f->compiler ? f->compiler : "?", f->log);
  if (f->source && ruda_log_enabled(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_FULL))
    ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_FULL,
             "kernel '%s': the source the compiler was given:\n%.*s", name,
             (int)(f->source_len < (size_t)1 << 30 ? f->source_len : (size_t)1 << 30), f->source);
  size_t need = compose(f, NULL, 0);
  char *text = ruda__malloc(need + 1);
  ruda_status_t s;
  if (text) {
    size_t len = compose(f, text, need + 1);
    /* No trailing newline: the error's text goes on after it. */
    if (len > 0 && len <= need && text[len - 1] == '\n') text[len - 1] = '\0';
    s = ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "%s", text);
    ruda__free(text);
  } else {
    s = ruda_status_create(RUDA_ERR_COMPILATION_GENERIC,
                           "[Compilation Error] portable kernel '%s' (no memory for the log)", name);
  }
  return ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION, s);
}
