/* A tiny strict JSON parser for the tools tests (RFC 8259 values; no
 * extensions). Header-only: each test program includes it once.
 *
 *   jv_t *v = jv_parse(text, &err);   NULL on a syntax error (err says where)
 *   jv_get(v, "key"), v->items[i], v->str, v->num, v->type
 *   jv_free(v);
 *
 * jv_parse_checked and jv_read_trace fail the test where the text is not
 * JSON (or not a trace). */
#ifndef RUDA_TEST_JSON_CHECK_H
#define RUDA_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define JV_FN static __attribute__((unused))

typedef enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_type_t;

typedef struct jv {
  jv_type_t type;
  bool b;
  double num;
  char *str;           /* JV_STR */
  struct jv **items;   /* JV_ARR, JV_OBJ values */
  char **keys;         /* JV_OBJ keys */
  size_t len;
} jv_t;

typedef struct jv_parser {
  const char *s;
  size_t pos, len;
  const char *err;
  int depth;
} jv_parser_t;

JV_FN void jv_free(jv_t *v) {
  if (!v) return;
  free(v->str);
  for (size_t i = 0; i < v->len; ++i) {
    jv_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v);
}

JV_FN void jv_ws(jv_parser_t *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

JV_FN jv_t *jv_value(jv_parser_t *p);

JV_FN char *jv_string_raw(jv_parser_t *p) {
  if (p->pos >= p->len || p->s[p->pos] != '"') {
    p->err = "expected a string";
    return NULL;
  }
  p->pos++;
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  while (p->pos < p->len) {
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c == '"') {
      out[n] = '\0';
      return out;
    }
    if (c < 0x20) {
      p->err = "control character inside a string";
      break;
    }
    if (n + 8 >= cap) {
      cap *= 2;
      char *grown = realloc(out, cap);
      if (!grown) break;
      out = grown;
    }
    if (c != '\\') {
      out[n++] = (char)c;
      continue;
    }
    if (p->pos >= p->len) break;
    char e = p->s[p->pos++];
    switch (e) {
      case '"': out[n++] = '"'; break;
      case '\\': out[n++] = '\\'; break;
      case '/': out[n++] = '/'; break;
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        unsigned code = 0;
        for (int k = 0; k < 4; ++k) {
          if (p->pos >= p->len) goto bad;
          char h = p->s[p->pos++];
          code <<= 4;
          if (h >= '0' && h <= '9') code |= (unsigned)(h - '0');
          else if (h >= 'a' && h <= 'f') code |= (unsigned)(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') code |= (unsigned)(h - 'A' + 10);
          else goto bad;
        }
        if (code < 0x80) {
          out[n++] = (char)code;
        } else if (code < 0x800) {
          out[n++] = (char)(0xC0 | (code >> 6));
          out[n++] = (char)(0x80 | (code & 0x3F));
        } else {
          out[n++] = (char)(0xE0 | (code >> 12));
          out[n++] = (char)(0x80 | ((code >> 6) & 0x3F));
          out[n++] = (char)(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
      bad:
        p->err = "bad escape";
        free(out);
        return NULL;
    }
  }
  if (!p->err) p->err = "unterminated string";
  free(out);
  return NULL;
}

JV_FN bool jv_push(jv_t *v, char *key, jv_t *item) {
  jv_t **items = realloc(v->items, (v->len + 1) * sizeof *items);
  if (!items) return false;
  v->items = items;
  if (v->type == JV_OBJ) {
    char **keys = realloc(v->keys, (v->len + 1) * sizeof *keys);
    if (!keys) return false;
    v->keys = keys;
    v->keys[v->len] = key;
  }
  v->items[v->len++] = item;
  return true;
}

JV_FN jv_t *jv_container(jv_parser_t *p, bool object) {
  jv_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->type = object ? JV_OBJ : JV_ARR;
  char close = object ? '}' : ']';
  p->pos++; /* the opening bracket */
  if (++p->depth > 64) {
    p->err = "nested too deeply";
    goto fail;
  }
  jv_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    p->depth--;
    return v;
  }
  for (;;) {
    char *key = NULL;
    jv_ws(p);
    if (object) {
      key = jv_string_raw(p);
      if (!key) goto fail;
      jv_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        free(key);
        p->err = "expected ':'";
        goto fail;
      }
      p->pos++;
    }
    jv_t *item = jv_value(p);
    if (!item || !jv_push(v, key, item)) {
      free(key);
      jv_free(item);
      goto fail;
    }
    jv_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      p->depth--;
      return v;
    }
    p->err = object ? "expected ',' or '}'" : "expected ',' or ']'";
    goto fail;
  }
fail:
  jv_free(v);
  return NULL;
}

JV_FN jv_t *jv_number(jv_parser_t *p) {
  size_t start = p->pos;
  if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
  if (p->pos >= p->len) goto bad;
  if (p->s[p->pos] == '0') {
    p->pos++;
  } else if (p->s[p->pos] >= '1' && p->s[p->pos] <= '9') {
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  } else {
    goto bad;
  }
  if (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') goto bad;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') goto bad;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  {
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof buf) goto bad;
    memcpy(buf, p->s + start, n);
    buf[n] = '\0';
    jv_t *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->type = JV_NUM;
    v->num = strtod(buf, NULL);
    return v;
  }
bad:
  p->err = "bad number";
  return NULL;
}

JV_FN jv_t *jv_literal(jv_parser_t *p, const char *word, jv_type_t type, bool b) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) {
    p->err = "unexpected character";
    return NULL;
  }
  p->pos += n;
  jv_t *v = calloc(1, sizeof *v);
  if (v) {
    v->type = type;
    v->b = b;
  }
  return v;
}

JV_FN jv_t *jv_value(jv_parser_t *p) {
  jv_ws(p);
  if (p->pos >= p->len) {
    p->err = "unexpected end";
    return NULL;
  }
  char c = p->s[p->pos];
  if (c == '{') return jv_container(p, true);
  if (c == '[') return jv_container(p, false);
  if (c == '"') {
    char *s = jv_string_raw(p);
    if (!s) return NULL;
    jv_t *v = calloc(1, sizeof *v);
    if (!v) {
      free(s);
      return NULL;
    }
    v->type = JV_STR;
    v->str = s;
    return v;
  }
  if (c == 't') return jv_literal(p, "true", JV_BOOL, true);
  if (c == 'f') return jv_literal(p, "false", JV_BOOL, false);
  if (c == 'n') return jv_literal(p, "null", JV_NULL, false);
  return jv_number(p);
}

/* Parses exactly one value (surrounding whitespace allowed). On failure
 * returns NULL and writes "what at offset N" into err (if given). */
JV_FN jv_t *jv_parse_n(const char *text, size_t len, char *err, size_t err_cap) {
  jv_parser_t p = {text, 0, len, NULL, 0};
  jv_t *v = jv_value(&p);
  if (v) {
    jv_ws(&p);
    if (p.pos != p.len) {
      p.err = "trailing characters";
      jv_free(v);
      v = NULL;
    }
  }
  if (!v && err) snprintf(err, err_cap, "%s at offset %zu", p.err ? p.err : "out of memory", p.pos);
  return v;
}

JV_FN jv_t *jv_parse(const char *text, char *err, size_t err_cap) {
  return jv_parse_n(text, strlen(text), err, err_cap);
}

/* The member `key` of an object, NULL if absent or not an object. */
JV_FN jv_t *jv_get(const jv_t *v, const char *key) {
  if (!v || v->type != JV_OBJ) return NULL;
  for (size_t i = 0; i < v->len; ++i)
    if (strcmp(v->keys[i], key) == 0) return v->items[i];
  return NULL;
}

JV_FN const char *jv_str(const jv_t *v, const char *key) {
  const jv_t *m = jv_get(v, key);
  return m && m->type == JV_STR ? m->str : NULL;
}

/* `text` parsed; the test fails, naming `what` and where the syntax
 * breaks, where it is not JSON. */
JV_FN jv_t *jv_parse_checked(const char *text, const char *what) {
  char err[128];
  jv_t *v = jv_parse(text, err, sizeof err);
  if (!v) rt_fail_msg(__FILE__, __LINE__, "%s is not JSON (%s):\n%s", what, err, text);
  ASSERT_NOT_NULL(v);
  return v;
}

/* The `ruda bench` JSON line `line` parsed: an object of exactly the
 * documented fields, in their order (the caller frees it). */
JV_FN jv_t *jv_bench_line(const char *line) {
  static const char *const keys[] = {"bench", "case",          "unit",  "ruda",
                                     "baseline", "baseline_name", "ratio", "better"};
  jv_t *v = jv_parse_checked(line, "the bench line");
  ASSERT_EQ(v->type, JV_OBJ);
  ASSERT_UEQ(v->len, 8);
  for (size_t i = 0; i < 8; ++i) ASSERT_STR_EQ(v->keys[i], keys[i]);
  return v;
}

/* The Chrome trace in the file `path`: its root (the caller frees it), and
 * its traceEvents array in *events; the test fails where there is none. */
JV_FN jv_t *jv_read_trace(const char *path, jv_t **events) {
  char *text = rt_read_file(path);
  RT_CHECK_(text != NULL, "no trace at %s", path);
  jv_t *root = jv_parse_checked(text, path);
  free(text);
  *events = jv_get(root, "traceEvents");
  ASSERT_NOT_NULL(*events);
  ASSERT_EQ((*events)->type, JV_ARR);
  return root;
}

/* The first of a trace's `events` with phase `ph` whose string member
 * `key` is `value`, NULL if none. */
JV_FN const jv_t *jv_find_event(const jv_t *events, const char *ph, const char *key,
                                const char *value) {
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    const char *p = jv_str(e, "ph"), *v = jv_str(e, key);
    if (p && v && strcmp(p, ph) == 0 && strcmp(v, value) == 0) return e;
  }
  return NULL;
}

#endif
