/* The kernel embed step (tools/kernel_text.h). */
#include "kernel_text.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INCLUDE_DEPTH = 32 };

typedef struct buf {
  char *p;
  size_t len, cap;
  bool oom;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf_t *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    buf_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf_add(b, big, (size_t)n);
  free(big);
}

/* A path inside a #line directive or a C string: `\` and `"` escaped. */
static void buf_quoted_path(buf_t *b, const char *path) {
  buf_str(b, "\"");
  for (const char *c = path; *c; c++) {
    if (*c == '\\' || *c == '"') buf_add(b, "\\", 1);
    buf_add(b, c, 1);
  }
  buf_str(b, "\"");
}

static bool read_file(const char *path, char **out, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  buf_t b = {0};
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
  bool ok = !ferror(f) && !b.oom;
  fclose(f);
  if (!ok) {
    free(b.p);
    return false;
  }
  if (!b.p) buf_add(&b, "", 0);
  if (b.oom) {
    free(b.p);
    return false;
  }
  *out = b.p;
  *out_len = b.len;
  return true;
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  size_t n = (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, path, n);
  d[n] = '\0';
  return d;
}

/* ---- Loading ---- */

typedef struct loader {
  const char *const *dirs;
  size_t num_dirs;
  buf_t out;
  ruda_tools_kernel_text_t *t;
  char **once;  /* files that said #pragma once and were inlined */
  size_t num_once;
  char *err;
  size_t err_cap;
  bool failed;
} loader_t;

static void fail(loader_t *l, const char *file, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(loader_t *l, const char *file, unsigned line, const char *fmt, ...) {
  if (l->failed) return;
  l->failed = true;
  int n = line ? snprintf(l->err, l->err_cap, "%s:%u: ", file, line)
               : snprintf(l->err, l->err_cap, "%s: ", file);
  if (n < 0 || (size_t)n >= l->err_cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->err + n, l->err_cap - (size_t)n, fmt, ap);
  va_end(ap);
}

static bool add_dep(loader_t *l, const char *abs) {
  for (size_t i = 0; i < l->t->num_deps; i++)
    if (strcmp(l->t->deps[i], abs) == 0) return true;
  char **d = realloc(l->t->deps, (l->t->num_deps + 1) * sizeof *d);
  if (!d) return false;
  l->t->deps = d;
  d[l->t->num_deps] = strdup(abs);
  if (!d[l->t->num_deps]) return false;
  l->t->num_deps++;
  return true;
}

static bool in_once(const loader_t *l, const char *abs) {
  for (size_t i = 0; i < l->num_once; i++)
    if (strcmp(l->once[i], abs) == 0) return true;
  return false;
}

static const char *skip_blank(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  return p;
}

/* Headers the dialect stands for: their include becomes an empty line. */
static bool dropped_header(const char *name, bool quoted) {
  static const char *const std_headers[] = {"stdint.h", "stddef.h", "stdbool.h",
                                            "math.h",   "float.h",  "limits.h"};
  if (strcmp(name, "ruda/kernel_dialect.h") == 0) return true;
  if (quoted) return false;
  for (size_t i = 0; i < sizeof std_headers / sizeof std_headers[0]; i++)
    if (strcmp(name, std_headers[i]) == 0) return true;
  return false;
}

/* Classifies a line that starts outside any comment: an #include (name in
 * `name`, quoted or angled), a #pragma once, or anything else. */
typedef enum { LINE_OTHER, LINE_INCLUDE, LINE_PRAGMA_ONCE } line_kind_t;

static line_kind_t classify(const char *p, const char *end, char *name, size_t cap,
                            bool *quoted) {
  p = skip_blank(p, end);
  if (p >= end || *p != '#') return LINE_OTHER;
  p = skip_blank(p + 1, end);
  if ((size_t)(end - p) >= 7 && strncmp(p, "include", 7) == 0) {
    p = skip_blank(p + 7, end);
    if (p >= end || (*p != '"' && *p != '<')) return LINE_OTHER;
    char close = *p == '"' ? '"' : '>';
    *quoted = close == '"';
    const char *s = ++p;
    while (p < end && *p != close) p++;
    if (p >= end || (size_t)(p - s) >= cap || p == s) return LINE_OTHER;
    memcpy(name, s, (size_t)(p - s));
    name[p - s] = '\0';
    return LINE_INCLUDE;
  }
  if ((size_t)(end - p) >= 6 && strncmp(p, "pragma", 6) == 0) {
    p = skip_blank(p + 6, end);
    if ((size_t)(end - p) >= 4 && strncmp(p, "once", 4) == 0) {
      p = skip_blank(p + 4, end);
      if (p == end || *p == '\r' || (p + 1 < end && p[0] == '/' && (p[1] == '/' || p[1] == '*')))
        return LINE_PRAGMA_ONCE;
    }
  }
  return LINE_OTHER;
}

/* Tracks block comments across a line; returns whether one is open at its
 * end. */
static bool scan_comments(const char *p, const char *end, bool in_comment) {
  char quote = 0;
  for (; p < end; p++) {
    if (in_comment) {
      if (p + 1 < end && p[0] == '*' && p[1] == '/') {
        in_comment = false;
        p++;
      }
    } else if (quote) {
      if (*p == '\\') p++;
      else if (*p == quote) quote = 0;
    } else if (*p == '"' || *p == '\'') {
      quote = *p;
    } else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
      return false;
    } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
      in_comment = true;
      p++;
    }
  }
  return in_comment;
}

static char *real_in(const char *dir, const char *name) {
  char cand[PATH_MAX + 1];
  int n = snprintf(cand, sizeof cand, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= sizeof cand) return NULL;
  return realpath(cand, NULL);
}

static char *resolve(loader_t *l, const char *including_dir, const char *name) {
  if (name[0] == '/') return realpath(name, NULL);
  char *abs = real_in(including_dir, name);
  for (size_t i = 0; !abs && i < l->num_dirs; i++) abs = real_in(l->dirs[i], name);
  return abs;
}

static void load_source(loader_t *l, const char *abs, char *src, size_t len, char *dir,
                        unsigned depth);

static void load_file(loader_t *l, const char *abs, unsigned depth) {
  if (l->failed) return;
  char *src = NULL;
  size_t len = 0;
  if (!read_file(abs, &src, &len)) {
    fail(l, abs, 0, "cannot read: %s", strerror(errno ? errno : EIO));
    return;
  }
  if (!add_dep(l, abs)) {
    free(src);
    fail(l, abs, 0, "out of memory");
    return;
  }
  char *dir = dir_of(abs);
  if (!dir) {
    free(src);
    fail(l, abs, 0, "out of memory");
    return;
  }
  load_source(l, abs, src, len, dir, depth);
}

/* The text `src` of `abs` (both freed here), includes searched from `dir`. */
static void load_source(loader_t *l, const char *abs, char *src, size_t len, char *dir,
                        unsigned depth) {
  buf_str(&l->out, "#line 1 ");
  buf_quoted_path(&l->out, abs);
  buf_str(&l->out, "\n");
  bool in_comment = false;
  unsigned line = 0;
  const char *p = src, *end = src + len;
  while (p < end && !l->failed) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    line++;
    line_kind_t kind = LINE_OTHER;
    char name[PATH_MAX];
    bool quoted = false;
    if (!in_comment) kind = classify(p, le, name, sizeof name, &quoted);
    if (kind == LINE_INCLUDE && dropped_header(name, quoted)) {
      buf_str(&l->out, "\n");
    } else if (kind == LINE_INCLUDE && quoted) {
      char *inc = resolve(l, dir, name);
      if (!inc) {
        fail(l, abs, line, "cannot find \"%s\" (searched next to the file and in %zu -I folder%s)",
             name, l->num_dirs, l->num_dirs == 1 ? "" : "s");
      } else if (depth + 1 > MAX_INCLUDE_DEPTH) {
        fail(l, abs, line, "includes nested deeper than %d (a cycle?)", MAX_INCLUDE_DEPTH);
      } else if (in_once(l, inc)) {
        buf_str(&l->out, "\n");
      } else {
        load_file(l, inc, depth + 1);
        buf_printf(&l->out, "#line %u ", line + 1);
        buf_quoted_path(&l->out, abs);
        buf_str(&l->out, "\n");
      }
      free(inc);
    } else if (kind == LINE_PRAGMA_ONCE) {
      if (!in_once(l, abs)) {
        char **o = realloc(l->once, (l->num_once + 1) * sizeof *o);
        if (o) {
          l->once = o;
          o[l->num_once] = strdup(abs);
          if (o[l->num_once]) l->num_once++;
        }
      }
      buf_str(&l->out, "\n");
    } else {
      buf_add(&l->out, p, (size_t)(le - p));
      buf_str(&l->out, "\n");
    }
    in_comment = scan_comments(p, le, in_comment);
    p = eol ? eol + 1 : end;
  }
  free(dir);
  free(src);
  if (l->out.oom) fail(l, abs, 0, "out of memory");
}

/* ---- Kernel names ---- */

static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Finds RUDA_KERNEL(name, ...) outside comments, strings and preprocessor
 * lines. */
static bool scan_kernels(ruda_tools_kernel_text_t *t, const char *src, size_t len, char *err,
                         size_t err_cap) {
  const char *p = src, *end = src + len;
  unsigned line = 1;
  bool line_start = true, in_directive = false;
  while (p < end) {
    char c = *p;
    if (c == '\n') {
      line++;
      line_start = true;
      if (!(p > src && p[-1] == '\\')) in_directive = false;
      p++;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t' || c == '\r')) {
      p++;
      continue;
    }
    if (line_start && c == '#') in_directive = true;
    line_start = false;
    if (p + 1 < end && c == '/' && p[1] == '*') {
      p += 2;
      while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) {
        if (*p == '\n') line++;
        p++;
      }
      p += 2;
      continue;
    }
    if (p + 1 < end && c == '/' && p[1] == '/') {
      while (p < end && *p != '\n') p++;
      continue;
    }
    if (c == '"' || c == '\'') {
      p++;
      while (p < end && *p != c && *p != '\n') p += *p == '\\' ? 2 : 1;
      p++;
      continue;
    }
    if (is_ident(c)) {
      const char *s = p;
      while (p < end && is_ident(*p)) p++;
      if (in_directive || (size_t)(p - s) != 11 || strncmp(s, "RUDA_KERNEL", 11) != 0 ||
          (s > src && is_ident(s[-1])))
        continue;
      unsigned decl_line = line;
      const char *q = p;
      while (q < end && isspace((unsigned char)*q)) q++;
      if (q >= end || *q != '(') continue;
      q++;
      while (q < end && isspace((unsigned char)*q)) q++;
      const char *ns = q;
      while (q < end && is_ident(*q)) q++;
      if (q == ns || isdigit((unsigned char)*ns)) {
        snprintf(err, err_cap, "%s:%u: RUDA_KERNEL needs the kernel's name as its first argument",
                 t->path, decl_line);
        return false;
      }
      size_t nlen = (size_t)(q - ns);
      for (size_t i = 0; i < t->num_kernels; i++) {
        if (strlen(t->kernels[i].name) == nlen && strncmp(t->kernels[i].name, ns, nlen) == 0) {
          snprintf(err, err_cap, "%s:%u: kernel '%.*s' is declared twice (first at line %u)",
                   t->path, decl_line, (int)nlen, ns, t->kernels[i].line);
          return false;
        }
      }
      /* The second argument, the dims, as written (up to the comma or
       * parenthesis that ends it). */
      const char *ds = q, *de = q;
      while (ds < end && isspace((unsigned char)*ds)) ds++;
      if (ds < end && *ds == ',') {
        ds++;
        int depth = 0;
        for (de = ds; de < end; de++) {
          if (*de == '(') depth++;
          else if (*de == ')' && depth-- == 0) break;
          else if (*de == ',' && depth == 0) break;
        }
        if (de >= end) de = ds;
      } else {
        ds = de = q;
      }
      ruda_tools_kernel_decl_t *k = realloc(t->kernels, (t->num_kernels + 1) * sizeof *k);
      if (!k) {
        snprintf(err, err_cap, "out of memory");
        return false;
      }
      t->kernels = k;
      k[t->num_kernels].name = strndup(ns, nlen);
      k[t->num_kernels].line = decl_line;
      k[t->num_kernels].dims = strndup(ds, (size_t)(de - ds));
      if (!k[t->num_kernels].name || !k[t->num_kernels].dims) {
        free(k[t->num_kernels].name);
        free(k[t->num_kernels].dims);
        snprintf(err, err_cap, "out of memory");
        return false;
      }
      t->num_kernels++;
      continue;
    }
    p++;
  }
  return true;
}

static loader_t loader_for(ruda_tools_kernel_text_t *out, const char *const *include_dirs,
                           size_t num_include_dirs, char *err, size_t err_cap) {
  loader_t l = {0};
  l.dirs = include_dirs;
  l.num_dirs = num_include_dirs;
  l.t = out;
  l.err = err;
  l.err_cap = err_cap;
  return l;
}

/* Ends a load: hands the inlined text to out, or on failure frees it and
 * out's other parts. */
static bool loader_finish(loader_t *l, ruda_tools_kernel_text_t *out) {
  for (size_t i = 0; i < l->num_once; i++) free(l->once[i]);
  free(l->once);
  if (l->failed) {
    free(l->out.p);
    ruda_tools_kernel_text_free(out);
    return false;
  }
  out->text = l->out.p;
  out->len = l->out.len;
  return true;
}

bool ruda_tools_kernel_text_load(const char *path, const char *const *include_dirs,
                                 size_t num_include_dirs, ruda_tools_kernel_text_t *out,
                                 char *err, size_t err_cap) {
  memset(out, 0, sizeof *out);
  if (err_cap) err[0] = '\0';
  out->path = realpath(path, NULL);
  if (!out->path) {
    snprintf(err, err_cap, "%s: %s", path, strerror(errno));
    return false;
  }
  loader_t l = loader_for(out, include_dirs, num_include_dirs, err, err_cap);
  load_file(&l, out->path, 0);
  if (!loader_finish(&l, out)) return false;
  char *src = NULL;
  size_t len = 0;
  if (!read_file(out->path, &src, &len)) {
    snprintf(err, err_cap, "%s: cannot read", out->path);
    ruda_tools_kernel_text_free(out);
    return false;
  }
  bool ok = scan_kernels(out, src, len, err, err_cap);
  free(src);
  if (!ok) ruda_tools_kernel_text_free(out);
  return ok;
}

bool ruda_tools_kernel_text_from_memory(const char *text, size_t len, const char *origin,
                                        const char *const *include_dirs,
                                        size_t num_include_dirs, ruda_tools_kernel_text_t *out,
                                        char *err, size_t err_cap) {
  memset(out, 0, sizeof *out);
  if (err_cap) err[0] = '\0';
  out->path = strdup(origin && origin[0] ? origin : "<kernel text>");
  char *src = malloc(len + 1);
  char *dir = origin && strchr(origin, '/') ? dir_of(origin) : strdup(".");
  if (!out->path || !src || !dir) {
    free(src);
    free(dir);
    ruda_tools_kernel_text_free(out);
    snprintf(err, err_cap, "out of memory");
    return false;
  }
  memcpy(src, text, len);
  src[len] = '\0';
  loader_t l = loader_for(out, include_dirs, num_include_dirs, err, err_cap);
  load_source(&l, out->path, src, len, dir, 0);
  if (!loader_finish(&l, out)) return false;
  bool ok = scan_kernels(out, text, len, err, err_cap);
  if (!ok) ruda_tools_kernel_text_free(out);
  return ok;
}

void ruda_tools_kernel_text_free(ruda_tools_kernel_text_t *t) {
  if (!t) return;
  free(t->path);
  free(t->text);
  for (size_t i = 0; i < t->num_kernels; i++) {
    free(t->kernels[i].name);
    free(t->kernels[i].dims);
  }
  free(t->kernels);
  for (size_t i = 0; i < t->num_deps; i++) free(t->deps[i]);
  free(t->deps);
  memset(t, 0, sizeof *t);
}

const ruda_tools_kernel_decl_t *ruda_tools_kernel_text_kernel_at(const ruda_tools_kernel_text_t *t,
                                                                 unsigned line) {
  const ruda_tools_kernel_decl_t *best = NULL;
  for (size_t i = 0; i < t->num_kernels; i++)
    if (t->kernels[i].line <= line && (!best || t->kernels[i].line > best->line))
      best = &t->kernels[i];
  return best;
}

/* ---- Writing C ---- */

/* One C string literal per line of `s`, each output line ending with
 * `line_end` (a backslash-newline inside a macro); `?` escaped against
 * trigraphs. */
static void write_literal(FILE *f, const char *s, size_t len, const char *line_end) {
  fputs("    \"", f);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '\n':
        fputs("\\n", f);
        if (i + 1 < len) fprintf(f, "\"%s    \"", line_end);
        break;
      case '\\': fputs("\\\\", f); break;
      case '"': fputs("\\\"", f); break;
      case '?': fputs("\\?", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (c < 0x20 || c >= 0x7f) fprintf(f, "\\%03o", c);
        else fputc(c, f);
    }
  }
  fputs("\"", f);
}

bool ruda_tools_kernel_text_write_c(const ruda_tools_kernel_text_t *t, FILE *f) {
  fprintf(f,
          "/* Generated by ruda's kernel embed step from %s: the text ruda\n"
          " * compiles for cuda:N and opencl:N, once per kernel declared in it\n"
          " * (the CPU mapping refers to ruda_kernel_text__NAME). Do not edit. */\n"
          "#if defined(__GNUC__)\n"
          "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
          "#endif\n\n"
          "#define RUDA_KERNEL_FILE_TEXT \\\n",
          t->path);
  write_literal(f, t->text, t->len, " \\\n");
  fputs("\n\n", f);
  for (size_t i = 0; i < t->num_kernels; i++) {
    const char *k = t->kernels[i].name;
    fprintf(f,
            "extern const char ruda_kernel_text__%s[];\n"
            "const char ruda_kernel_text__%s[] = RUDA_KERNEL_FILE_TEXT;\n",
            k, k);
  }
  if (t->num_kernels == 0) fputs("typedef int ruda_kernel_file_without_kernels;\n", f);
  return !ferror(f);
}

static void write_make_path(FILE *f, const char *p) {
  for (; *p; p++) {
    if (*p == ' ' || *p == '#') fputc('\\', f);
    if (*p == '$') fputc('$', f);
    fputc(*p, f);
  }
}

bool ruda_tools_kernel_text_write_depfile(const ruda_tools_kernel_text_t *t, const char *target,
                                          FILE *f) {
  write_make_path(f, target);
  fputc(':', f);
  for (size_t i = 0; i < t->num_deps; i++) {
    fputs(" \\\n  ", f);
    write_make_path(f, t->deps[i]);
  }
  fputc('\n', f);
  return !ferror(f);
}

bool ruda_tools_prelude_write_c(const char *symbol, const char *const *files, size_t num_files,
                                FILE *f, char *err, size_t err_cap) {
  buf_t b = {0};
  for (size_t i = 0; i < num_files; i++) {
    char *src = NULL;
    size_t len = 0;
    if (!read_file(files[i], &src, &len)) {
      snprintf(err, err_cap, "%s: cannot read", files[i]);
      free(b.p);
      return false;
    }
    const char *base = strrchr(files[i], '/');
    base = base ? base + 1 : files[i];
    buf_printf(&b, "#line 1 \"ruda/dialect/%s\"\n", base);
    const char *p = src, *end = src + len;
    while (p < end) {
      const char *eol = memchr(p, '\n', (size_t)(end - p));
      const char *le = eol ? eol : end;
      char name[256];
      bool quoted = false;
      if (classify(p, le, name, sizeof name, &quoted) == LINE_INCLUDE && quoted &&
          strncmp(name, "ruda/", 5) == 0) {
        buf_str(&b, "\n");
      } else {
        buf_add(&b, p, (size_t)(le - p));
        buf_str(&b, "\n");
      }
      p = eol ? eol + 1 : end;
    }
    free(src);
  }
  if (b.oom) {
    snprintf(err, err_cap, "out of memory");
    free(b.p);
    return false;
  }
  fprintf(f,
          "/* Generated at build time from the ruda/dialect headers: a kernel\n"
          " * prelude. */\n"
          "#include <stddef.h>\n"
          "#if defined(__GNUC__)\n"
          "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
          "#endif\n\n"
          "extern const char %s[];\n"
          "extern const size_t %s_size;\n"
          "const char %s[] =\n",
          symbol, symbol, symbol);
  write_literal(f, b.p ? b.p : "", b.len, "\n");
  fprintf(f, ";\nconst size_t %s_size = sizeof %s - 1;\n", symbol, symbol);
  free(b.p);
  return !ferror(f);
}
