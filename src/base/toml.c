/* A strict parser for the TOML subset of ruda.toml; see toml.h. */
#include "base/toml.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/json.h"

/* How a table came to exist, which decides whether it may be extended. */
enum {
  ORIGIN_ROOT = 0,
  ORIGIN_IMPLICIT, /* parent of a [x.y] header, not itself defined yet */
  ORIGIN_HEADER,   /* defined by its own [header] */
  ORIGIN_DOTTED,   /* defined by a dotted key (a.b = 1) */
  ORIGIN_INLINE,   /* an inline table: closed once written */
};

enum { MAX_KEY_PARTS = 16, MAX_INLINE_DEPTH = 16 };

typedef struct {
  char *parts[MAX_KEY_PARTS];
  size_t n;
  uint32_t line;
} key_t_;

typedef struct {
  char *buf;
  size_t len, cap;
} buf_t;

typedef struct {
  const char *p, *end;
  uint32_t line;
  const char *file;
  char *path; /* dotted path of the current [table], "" at the root */
  /* Keys whose values are being parsed, outermost first (inline tables). */
  const key_t_ *stack[MAX_INLINE_DEPTH + 2];
  size_t depth;
  ruda_status_t err;
} parser_t;

/* ---- errors ------------------------------------------------------------ */

static bool buf_put(buf_t *b, const char *s, size_t n);

/* Appends "a.b.c" style parts to `b` (dots between). */
static bool join_parts(buf_t *b, char *const *parts, size_t n);

/* The dotted key of the value being parsed: the current [table] path, the
 * keys of the enclosing inline tables, then the first `n_last` parts of the
 * innermost key (all of them for SIZE_MAX). NULL when there is none. */
static char *current_key(const parser_t *ps, size_t n_last) {
  buf_t b = {0};
  bool ok = buf_put(&b, "", 0);
  if (ok && ps->path && *ps->path) ok = buf_put(&b, ps->path, strlen(ps->path));
  for (size_t d = 0; ok && d < ps->depth; d++) {
    const key_t_ *k = ps->stack[d];
    size_t n = d + 1 == ps->depth && n_last < k->n ? n_last : k->n;
    ok = join_parts(&b, k->parts, n);
  }
  if (!ok || b.len == 0) {
    ruda__free(b.buf);
    return NULL;
  }
  return b.buf;
}

static void failv(parser_t *ps, size_t n_last, const char *fmt, va_list ap) {
  if (ps->err) return;
  ps->err = ruda_status_createv(RUDA_ERR_CONFIG, fmt, ap);
  char *key = current_key(ps, n_last);
  ruda_status_set_location(ps->err, ps->file, ps->line, key);
  ruda__free(key);
}

/* An error about the value being parsed, naming its full key. */
static void fail(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parser_t *ps, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(ps, SIZE_MAX, fmt, ap);
  va_end(ap);
}

/* An error about the first `n` parts of the innermost key. */
static void fail_prefix(parser_t *ps, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_prefix(parser_t *ps, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(ps, n, fmt, ap);
  va_end(ap);
}

static void fail_oom(parser_t *ps) { fail(ps, "out of memory while parsing"); }

/* ---- values ------------------------------------------------------------ */

void ruda__toml_free(ruda__toml_value_t *v) {
  if (!v) return;
  ruda__free(v->string);
  for (size_t i = 0; i < v->count; i++) {
    ruda__free(v->entries[i].key);
    ruda__toml_free(&v->entries[i].value);
  }
  ruda__free(v->entries);
  memset(v, 0, sizeof *v);
}

const ruda__toml_entry_t *ruda__toml_find(const ruda__toml_value_t *table,
                                          const char *key) {
  if (!table || table->type != RUDA__TOML_TABLE || !key) return NULL;
  for (size_t i = 0; i < table->count; i++)
    if (strcmp(table->entries[i].key, key) == 0) return &table->entries[i];
  return NULL;
}

static ruda__toml_value_t *lookup(ruda__toml_value_t *t, const char *key) {
  for (size_t i = 0; i < t->count; i++)
    if (strcmp(t->entries[i].key, key) == 0) return &t->entries[i].value;
  return NULL;
}

/* Adds `key` (copied) to table `t`; NULL when memory is exhausted. */
static ruda__toml_value_t *add(ruda__toml_value_t *t, const char *key,
                               uint32_t line) {
  ruda__toml_entry_t *grown = ruda__grow(t->entries, &t->cap, t->count, sizeof *grown, 4);
  if (!grown) return NULL;
  t->entries = grown;
  char *k = ruda__strdup(key);
  if (!k) return NULL;
  ruda__toml_entry_t *e = &t->entries[t->count++];
  memset(e, 0, sizeof *e);
  e->key = k;
  e->line = line;
  e->value.line = line;
  return &e->value;
}

/* ---- lexing ------------------------------------------------------------ */

static bool at_end(const parser_t *ps) { return ps->p >= ps->end; }
static int peek(const parser_t *ps) {
  return at_end(ps) ? -1 : (unsigned char)*ps->p;
}
static int peek_at(const parser_t *ps, size_t off) {
  return (size_t)(ps->end - ps->p) > off ? (unsigned char)ps->p[off] : -1;
}

static void skip_ws(parser_t *ps) {
  while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t')) ps->p++;
}

static bool is_control(int c) { return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f; }

static bool is_bare(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Consumes a line end ("\n" or "\r\n"). */
static bool eat_newline(parser_t *ps) {
  if (peek(ps) == '\n') {
    ps->p++;
    ps->line++;
    return true;
  }
  if (peek(ps) == '\r' && peek_at(ps, 1) == '\n') {
    ps->p += 2;
    ps->line++;
    return true;
  }
  return false;
}

static void skip_comment(parser_t *ps) {
  if (peek(ps) != '#') return;
  while (!at_end(ps) && *ps->p != '\n') {
    if (*ps->p == '\r' && peek_at(ps, 1) == '\n') break;
    if (is_control((unsigned char)*ps->p)) {
      fail(ps, "control character in a comment");
      return;
    }
    ps->p++;
  }
}

/* After a statement: optional spaces and comment, then a line end. */
static void end_of_line(parser_t *ps, const char *what) {
  skip_ws(ps);
  skip_comment(ps);
  if (ps->err || at_end(ps) || eat_newline(ps)) return;
  fail(ps, "expected the end of the line after %s", what);
}

/* Checks UTF-8 and rejects NUL bytes before parsing. */
static bool check_text(parser_t *ps) {
  const unsigned char *s = (const unsigned char *)ps->p;
  const unsigned char *e = (const unsigned char *)ps->end;
  uint32_t line = 1;
  while (s < e) {
    unsigned c = *s;
    size_t n;
    uint32_t cp, min;
    if (c == '\n') line++;
    if (c == 0) {
      ps->line = line;
      fail(ps, "NUL byte in the file");
      return false;
    }
    if (c < 0x80) {
      s++;
      continue;
    }
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
    else goto bad;
    if ((size_t)(e - s) < n) goto bad;
    for (size_t i = 1; i < n; i++) {
      if ((s[i] & 0xc0) != 0x80) goto bad;
      cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) goto bad;
    s += n;
    continue;
  bad:
    ps->line = line;
    fail(ps, "invalid UTF-8");
    return false;
  }
  return true;
}

/* ---- strings ----------------------------------------------------------- */

static bool buf_put(buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 32;
    while (cap < b->len + n + 1) cap *= 2;
    char *nb = ruda__realloc(b->buf, cap);
    if (!nb) return false;
    b->buf = nb;
    b->cap = cap;
  }
  memcpy(b->buf + b->len, s, n);
  b->len += n;
  b->buf[b->len] = '\0';
  return true;
}

static bool join_parts(buf_t *b, char *const *parts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (b->len && !buf_put(b, ".", 1)) return false;
    if (!buf_put(b, parts[i], strlen(parts[i]))) return false;
  }
  return true;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static size_t utf8_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Parses a "basic" or 'literal' one-line string at ps->p. */
static char *parse_string(parser_t *ps) {
  char quote = *ps->p;
  if (peek_at(ps, 1) == quote && peek_at(ps, 2) == quote) {
    fail(ps, "multi-line strings are not supported");
    return NULL;
  }
  ps->p++;
  buf_t b = {0};
  if (!buf_put(&b, "", 0)) goto oom;
  for (;;) {
    int c = peek(ps);
    if (c < 0 || c == '\n' || c == '\r') {
      fail(ps, "unterminated string");
      goto fail;
    }
    if (c == quote) {
      ps->p++;
      return b.buf;
    }
    if (is_control(c)) {
      fail(ps, "control character in a string (use an escape)");
      goto fail;
    }
    if (c == '\\' && quote == '"') {
      int e = peek_at(ps, 1);
      char rep = ruda__short_escape_byte(e);
      if (rep) {
        if (!buf_put(&b, &rep, 1)) goto oom;
        ps->p += 2;
        continue;
      }
      switch (e) {
        case 'u':
        case 'U': {
          size_t nd = e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t i = 0; i < nd; i++) {
            int h = hexval(peek_at(ps, 2 + i));
            if (h < 0) {
              fail(ps, "invalid \\%c escape: expected %zu hex digits", e, nd);
              goto fail;
            }
            cp = (cp << 4) | (uint32_t)h;
          }
          if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            fail(ps, "invalid \\%c escape: U+%04X is not allowed", e, (unsigned)cp);
            goto fail;
          }
          char u[4];
          if (!buf_put(&b, u, utf8_encode(cp, u))) goto oom;
          ps->p += 2 + nd;
          continue;
        }
        default:
          if (e >= 0x20 && e < 0x7f)
            fail(ps, "invalid escape sequence \\%c", e);
          else
            fail(ps, "invalid escape sequence");
          goto fail;
      }
    }
    if (!buf_put(&b, ps->p, 1)) goto oom;
    ps->p++;
  }
oom:
  fail_oom(ps);
fail:
  ruda__free(b.buf);
  return NULL;
}

/* ---- keys -------------------------------------------------------------- */

static void key_free(key_t_ *k) {
  for (size_t i = 0; i < k->n; i++) ruda__free(k->parts[i]);
  k->n = 0;
}

static char *parse_simple_key(parser_t *ps) {
  int c = peek(ps);
  if (c == '"' || c == '\'') return parse_string(ps);
  const char *start = ps->p;
  while (!at_end(ps) && is_bare((unsigned char)*ps->p)) ps->p++;
  if (ps->p == start) {
    if (c < 0 || c == '\n' || c == '\r')
      fail(ps, "expected a key");
    else if (c >= 0x20 && c < 0x7f)
      fail(ps, "unexpected character '%c' where a key was expected", c);
    else
      fail(ps, "unexpected character where a key was expected");
    return NULL;
  }
  char *k = ruda__strndup(start, (size_t)(ps->p - start));
  if (!k) fail_oom(ps);
  return k;
}

static bool parse_key(parser_t *ps, key_t_ *k) {
  k->n = 0;
  k->line = ps->line;
  for (;;) {
    if (k->n == MAX_KEY_PARTS) {
      fail(ps, "key has more than %d parts", MAX_KEY_PARTS);
      return false;
    }
    char *part = parse_simple_key(ps);
    if (!part) return false;
    k->parts[k->n++] = part;
    skip_ws(ps);
    if (peek(ps) != '.') return true;
    ps->p++;
    skip_ws(ps);
  }
}

/* ---- values ------------------------------------------------------------ */

static bool parse_value(parser_t *ps, ruda__toml_value_t *v, int depth);

static bool is_delim(int c) {
  return c < 0 || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
         c == ',' || c == '}' || c == '#' || c == ']';
}

static bool parse_integer(parser_t *ps, ruda__toml_value_t *v) {
  const char *start = ps->p;
  while (!is_delim(peek(ps))) ps->p++;
  size_t n = (size_t)(ps->p - start);
  const char *s = start;
  bool neg = false;
  if (n && (*s == '+' || *s == '-')) {
    neg = *s == '-';
    s++;
    n--;
  }
  unsigned base = 10;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
    if (s != start) {
      fail(ps, "a sign is not allowed on hex, octal or binary integers");
      return false;
    }
    base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
    s += 2;
    n -= 2;
  }
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (base == 10 && (c == '.' || c == 'e' || c == 'E' || c == ':' ||
                       c == 'i' || c == 'n')) {
      fail(ps, "floats, dates and times are not supported");
      return false;
    }
  }
  if (n == 0) {
    fail(ps, "invalid integer");
    return false;
  }
  if (base == 10 && n > 1 && s[0] == '0') {
    fail(ps, "leading zeros are not allowed");
    return false;
  }
  uint64_t acc = 0;
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  bool prev_digit = false;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '_') {
      if (!prev_digit || i + 1 == n) {
        fail(ps, "underscores must be between digits");
        return false;
      }
      prev_digit = false;
      continue;
    }
    int d = hexval(c);
    if (d < 0 || (unsigned)d >= base) {
      fail(ps, "invalid integer");
      return false;
    }
    if (acc > (limit - (uint64_t)d) / base) {
      fail(ps, "integer out of range");
      return false;
    }
    acc = acc * base + (uint64_t)d;
    prev_digit = true;
  }
  v->type = RUDA__TOML_INTEGER;
  v->integer = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc)
                   : (int64_t)acc;
  return true;
}

/* Finds or creates the table `name` under `t` for a dotted key or an
 * inline table's dotted key. */
static ruda__toml_value_t *dotted_table(parser_t *ps, ruda__toml_value_t *t,
                                        const key_t_ *k, size_t i) {
  ruda__toml_value_t *sub = lookup(t, k->parts[i]);
  if (!sub) {
    sub = add(t, k->parts[i], k->line);
    if (!sub) {
      fail_oom(ps);
      return NULL;
    }
    sub->type = RUDA__TOML_TABLE;
    sub->origin = ORIGIN_DOTTED;
    return sub;
  }
  if (sub->type != RUDA__TOML_TABLE) {
    fail_prefix(ps, i + 1, "key is already defined as a value, not a table");
    return NULL;
  }
  if (sub->origin != ORIGIN_DOTTED) {
    fail_prefix(ps, i + 1, "a dotted key cannot add to a table defined elsewhere");
    return NULL;
  }
  return sub;
}

/* Parses `key = value` into table `t`. */
static bool parse_keyval(parser_t *ps, ruda__toml_value_t *t, int depth) {
  key_t_ k;
  if (!parse_key(ps, &k)) {
    key_free(&k);
    return false;
  }
  bool ok = false;
  ps->stack[ps->depth++] = &k;
  ruda__toml_value_t *dst = t;
  for (size_t i = 0; i + 1 < k.n && dst; i++) dst = dotted_table(ps, dst, &k, i);
  if (!dst) goto done;
  if (peek(ps) != '=') {
    fail(ps, "expected '=' after the key");
    goto done;
  }
  ps->p++;
  skip_ws(ps);
  if (lookup(dst, k.parts[k.n - 1])) {
    fail(ps, "duplicate key");
    goto done;
  }
  ruda__toml_value_t tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.line = k.line;
  if (!parse_value(ps, &tmp, depth)) {
    ruda__toml_free(&tmp);
    goto done;
  }
  ruda__toml_value_t *slot = add(dst, k.parts[k.n - 1], k.line);
  if (!slot) {
    ruda__toml_free(&tmp);
    fail_oom(ps);
    goto done;
  }
  *slot = tmp;
  ok = true;
done:
  ps->depth--;
  key_free(&k);
  return ok;
}

static bool parse_inline_table(parser_t *ps, ruda__toml_value_t *v, int depth) {
  if (depth >= MAX_INLINE_DEPTH) {
    fail(ps, "inline tables nested too deeply");
    return false;
  }
  ps->p++; /* '{' */
  v->type = RUDA__TOML_TABLE;
  v->origin = ORIGIN_DOTTED; /* open while its own keys are parsed */
  skip_ws(ps);
  if (peek(ps) == '}') {
    ps->p++;
    v->origin = ORIGIN_INLINE;
    return true;
  }
  for (;;) {
    skip_ws(ps);
    if (peek(ps) == '\n' || peek(ps) == '\r' || peek(ps) == '}') {
      fail(ps, "inline tables must be on one line, without a trailing comma");
      return false;
    }
    if (!parse_keyval(ps, v, depth + 1)) return false;
    skip_ws(ps);
    int c = peek(ps);
    if (c == ',') {
      ps->p++;
      continue;
    }
    if (c == '}') {
      ps->p++;
      v->origin = ORIGIN_INLINE;
      return true;
    }
    if (c == '\n' || c == '\r')
      fail(ps, "inline tables must be on one line");
    else
      fail(ps, "expected ',' or '}' in an inline table");
    return false;
  }
}

static bool parse_value(parser_t *ps, ruda__toml_value_t *v, int depth) {
  v->line = ps->line;
  int c = peek(ps);
  if (c == '"' || c == '\'') {
    v->string = parse_string(ps);
    if (!v->string) return false;
    v->type = RUDA__TOML_STRING;
    return true;
  }
  if (c == '{') return parse_inline_table(ps, v, depth);
  if (c == '[') {
    fail(ps, "arrays are not supported");
    return false;
  }
  if (c == 't' || c == 'f') {
    const char *word = c == 't' ? "true" : "false";
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0 &&
        is_delim(peek_at(ps, n))) {
      ps->p += n;
      v->type = RUDA__TOML_BOOLEAN;
      v->boolean = c == 't';
      return true;
    }
  }
  if ((c >= '0' && c <= '9') || c == '+' || c == '-')
    return parse_integer(ps, v);
  if (c == 'i' || c == 'n') {
    fail(ps, "floats, dates and times are not supported");
    return false;
  }
  if (c < 0 || c == '\n' || c == '\r' || c == '#')
    fail(ps, "expected a value after '='");
  else
    fail(ps, "invalid value (strings must be quoted)");
  return false;
}

/* ---- tables ------------------------------------------------------------ */

static ruda__toml_value_t *parse_header(parser_t *ps, ruda__toml_value_t *root) {
  ps->p++; /* '[' */
  if (peek(ps) == '[') {
    fail(ps, "arrays of tables are not supported");
    return NULL;
  }
  skip_ws(ps);
  /* Header keys are absolute: errors name them from the root. */
  ruda__free(ps->path);
  ps->path = NULL;
  key_t_ k;
  ruda__toml_value_t *t = NULL;
  if (!parse_key(ps, &k)) {
    key_free(&k);
    return NULL;
  }
  ps->stack[ps->depth++] = &k;
  if (peek(ps) != ']') {
    fail(ps, "expected ']' after the table name");
    goto done;
  }
  ps->p++;
  t = root;
  for (size_t i = 0; i < k.n; i++) {
    ruda__toml_value_t *sub = lookup(t, k.parts[i]);
    bool last = i + 1 == k.n;
    if (!sub) {
      sub = add(t, k.parts[i], k.line);
      if (!sub) {
        fail_oom(ps);
        t = NULL;
        goto done;
      }
      sub->type = RUDA__TOML_TABLE;
      sub->origin = last ? ORIGIN_HEADER : ORIGIN_IMPLICIT;
      sub->line = k.line;
    } else if (sub->type != RUDA__TOML_TABLE) {
      fail_prefix(ps, i + 1, "key is already defined as a value, not a table");
      t = NULL;
      goto done;
    } else if (sub->origin == ORIGIN_INLINE) {
      fail_prefix(ps, i + 1, "an inline table cannot be extended");
      t = NULL;
      goto done;
    } else if (last) {
      if (sub->origin != ORIGIN_IMPLICIT) {
        fail(ps, "table defined twice");
        t = NULL;
        goto done;
      }
      sub->origin = ORIGIN_HEADER;
      sub->line = k.line;
    }
    t = sub;
  }
  buf_t path = {0};
  if (!buf_put(&path, "", 0) || !join_parts(&path, k.parts, k.n)) {
    ruda__free(path.buf);
    fail_oom(ps);
    t = NULL;
    goto done;
  }
  ps->path = path.buf;
done:
  ps->depth--;
  key_free(&k);
  return t;
}

ruda_status_t ruda__toml_parse(const char *text, size_t len,
                               const char *file_name,
                               ruda__toml_value_t *out_root) {
  parser_t ps = {.p = text, .end = text ? text + len : text, .line = 1,
                 .file = file_name ? file_name : "<string>"};
  memset(out_root, 0, sizeof *out_root);
  out_root->type = RUDA__TOML_TABLE;
  out_root->origin = ORIGIN_ROOT;
  out_root->line = 1;
  if (!text && len) {
    fail(&ps, "no text");
    return ps.err;
  }
  if (!text) return NULL;
  if (!check_text(&ps)) return ps.err;
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) ps.p += 3;
  ruda__toml_value_t *cur = out_root;
  while (!ps.err) {
    skip_ws(&ps);
    if (at_end(&ps)) break;
    int c = peek(&ps);
    if (eat_newline(&ps)) continue;
    if (c == '#') {
      skip_comment(&ps);
      continue;
    }
    if (c == '\r') {
      fail(&ps, "carriage return without a line feed");
      break;
    }
    if (c == '[') {
      cur = parse_header(&ps, out_root);
      if (cur) end_of_line(&ps, "a table header");
      continue;
    }
    if (parse_keyval(&ps, cur, 0)) end_of_line(&ps, "a value");
  }
  ruda__free(ps.path);
  if (ps.err) ruda__toml_free(out_root);
  return ps.err;
}
