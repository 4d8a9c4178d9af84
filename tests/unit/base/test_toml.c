/* The strict TOML-subset parser behind ruda.toml. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/toml.h"
#include "ruda/status.h"
#include "test.h"

static ruda__toml_value_t parse_ok(const char *text) {
  ruda__toml_value_t root;
  ruda_status_t st = ruda__toml_parse(text, strlen(text), "t.toml", &root);
  if (st) {
    char *msg = ruda_status_to_string(st);
    fprintf(stderr, "unexpected error for:\n%s\n%s\n", text, msg);
    free(msg);
    ruda_status_free(st);
  }
  return root;
}

static const ruda__toml_value_t *get(const ruda__toml_value_t *t, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  const ruda__toml_value_t *v = t;
  for (char *save = NULL, *part = strtok_r(buf, ".", &save); part;
       part = strtok_r(NULL, ".", &save)) {
    const ruda__toml_entry_t *e = ruda__toml_find(v, part);
    if (!e) return NULL;
    v = &e->value;
  }
  return v;
}

/* Expects a parse error whose reason contains `why`, at `line`, with key
 * `key` (NULL: no key). */
static void expect_error(const char *text, size_t len, uint32_t line, const char *key,
                         const char *why) {
  ruda__toml_value_t root;
  ruda_status_t st = ruda__toml_parse(text, len, "bad.toml", &root);
  RT_CHECK_(st != NULL, "expected an error for: %s", text);
  char *msg = ruda_status_to_string(st);
  bool ok = ruda_status_kind(st) == RUDA_ERR_CONFIG && ruda_status_line(st) == line &&
            strstr(ruda_status_reason(st), why) != NULL &&
            strcmp(ruda_status_file(st), "bad.toml") == 0 &&
            ((key == NULL && ruda_status_key(st) == NULL) ||
             (key && ruda_status_key(st) && strcmp(ruda_status_key(st), key) == 0));
  if (!ok)
    fprintf(stderr, "input: %s\nexpected line %u key %s reason ~ \"%s\"\ngot line %u key %s:\n%s\n",
            text, line, key ? key : "(none)", why, ruda_status_line(st),
            ruda_status_key(st) ? ruda_status_key(st) : "(none)", msg);
  free(msg);
  ruda_status_free(st);
  ASSERT_EQ(root.count, 0); /* left empty */
  RT_CHECK_(ok, "wrong error for: %s", text);
}
#define EXPECT_ERROR(text, line, key, why) expect_error((text), strlen(text), (line), (key), (why))

TEST(empty_and_comments) {
  ruda__toml_value_t r = parse_ok("");
  ASSERT_EQ(r.type, RUDA__TOML_TABLE);
  ASSERT_UEQ(r.count, 0);
  ruda__toml_free(&r);
  r = parse_ok("# only a comment\n\n   \t# another\r\n");
  ASSERT_UEQ(r.count, 0);
  ruda__toml_free(&r);
  ruda_status_t st = ruda__toml_parse(NULL, 0, NULL, &r);
  ASSERT_NULL(st);
  ruda__toml_free(&r);
}

TEST(scalars) {
  ruda__toml_value_t r = parse_ok(
      "a = \"x\"  # trailing\n"
      "b = 'lit\\n'\n"
      "c = 42\n"
      "d = -17\n"
      "e = +5\n"
      "f = 1_000_000\n"
      "g = 0xff\n"
      "h = 0o17\n"
      "i = 0b101\n"
      "j = true\n"
      "k = false\n"
      "l = 9223372036854775807\n"
      "m = -9223372036854775808\n"
      "n = 0\n"
      "\"quoted key\" = 1\n"
      "'lit key' = 2\n"
      "bare-key_1 = 3\n");
  ASSERT_STR_EQ(get(&r, "a")->string, "x");
  ASSERT_STR_EQ(get(&r, "b")->string, "lit\\n");
  ASSERT_EQ(get(&r, "c")->integer, 42);
  ASSERT_EQ(get(&r, "d")->integer, -17);
  ASSERT_EQ(get(&r, "e")->integer, 5);
  ASSERT_EQ(get(&r, "f")->integer, 1000000);
  ASSERT_EQ(get(&r, "g")->integer, 255);
  ASSERT_EQ(get(&r, "h")->integer, 15);
  ASSERT_EQ(get(&r, "i")->integer, 5);
  ASSERT_EQ(get(&r, "j")->type, RUDA__TOML_BOOLEAN);
  ASSERT_TRUE(get(&r, "j")->boolean);
  ASSERT_FALSE(get(&r, "k")->boolean);
  ASSERT_EQ(get(&r, "l")->integer, INT64_MAX);
  ASSERT_EQ(get(&r, "m")->integer, INT64_MIN);
  ASSERT_EQ(get(&r, "n")->integer, 0);
  ASSERT_EQ(ruda__toml_find(&r, "quoted key")->value.integer, 1);
  ASSERT_EQ(ruda__toml_find(&r, "lit key")->value.integer, 2);
  ASSERT_EQ(ruda__toml_find(&r, "bare-key_1")->value.integer, 3);
  ASSERT_EQ(ruda__toml_find(&r, "c")->line, 3);
  ASSERT_NULL(ruda__toml_find(&r, "zz"));
  ASSERT_NULL(ruda__toml_find(get(&r, "a"), "x")); /* not a table */
  ruda__toml_free(&r);
}

TEST(string_escapes) {
  ruda__toml_value_t r =
      parse_ok("s = \"q\\\" b\\\\ t\\t n\\n r\\r f\\f b\\b u\\u00e9 U\\U0001F600 \xc3\xa9\"\n");
  ASSERT_STR_EQ(get(&r, "s")->string,
                "q\" b\\ t\t n\n r\r f\f b\b u\xc3\xa9 U\xf0\x9f\x98\x80 \xc3\xa9");
  ruda__toml_free(&r);
  r = parse_ok("s = \"\\u0041\\u07FF\\uFFFD\"");
  ASSERT_STR_EQ(get(&r, "s")->string, "A\xdf\xbf\xef\xbf\xbd");
  ruda__toml_free(&r);
}

TEST(tables_and_dotted_keys) {
  ruda__toml_value_t r = parse_ok(
      "top = 1\n"
      "[a]\n"
      "x = 1\n"
      "b.c = 2\n"
      "b.d = 3\n"
      "[a.b.e]\n"
      "f = 4\n"
      "[ g . h ]\n"
      "i = { j = 5, k.l = \"m\", n = {} }\n"
      "[\"q r\"]\n"
      "s = 6\n");
  ASSERT_EQ(get(&r, "top")->integer, 1);
  ASSERT_EQ(get(&r, "a.x")->integer, 1);
  ASSERT_EQ(get(&r, "a.b.c")->integer, 2);
  ASSERT_EQ(get(&r, "a.b.d")->integer, 3);
  ASSERT_EQ(get(&r, "a.b.e.f")->integer, 4);
  ASSERT_EQ(get(&r, "g.h.i.j")->integer, 5);
  ASSERT_STR_EQ(get(&r, "g.h.i.k.l")->string, "m");
  ASSERT_EQ(get(&r, "g.h.i.n")->type, RUDA__TOML_TABLE);
  ASSERT_UEQ(get(&r, "g.h.i.n")->count, 0);
  ASSERT_EQ(ruda__toml_find(&r, "q r")->value.line, 10);
  /* [x.y] first, then [x]: allowed. */
  ruda__toml_free(&r);
  r = parse_ok("[x.y]\nz = 1\n[x]\nw = 2\n");
  ASSERT_EQ(get(&r, "x.y.z")->integer, 1);
  ASSERT_EQ(get(&r, "x.w")->integer, 2);
  ruda__toml_free(&r);
  r = parse_ok("\xef\xbb\xbf[bom]\r\nk = 1\r\n");
  ASSERT_EQ(get(&r, "bom.k")->integer, 1);
  ruda__toml_free(&r);
}

TEST(syntax_errors) {
  EXPECT_ERROR("a = \"x", 1, "a", "unterminated string");
  EXPECT_ERROR("a = \"x\ny\"", 1, "a", "unterminated string");
  EXPECT_ERROR("\n\na = \"\\q\"", 3, "a", "invalid escape sequence \\q");
  EXPECT_ERROR("a = \"\\u12\"", 1, "a", "expected 4 hex digits");
  EXPECT_ERROR("a = \"\\uD800\"", 1, "a", "is not allowed");
  EXPECT_ERROR("a = \"\\u0000\"", 1, "a", "is not allowed");
  EXPECT_ERROR("a = \"\\U00110000\"", 1, "a", "is not allowed");
  EXPECT_ERROR("a = \"\x01\"", 1, "a", "control character in a string");
  EXPECT_ERROR("a = '''x'''", 1, "a", "multi-line strings are not supported");
  EXPECT_ERROR("a = \"\"\"x\"\"\"", 1, "a", "multi-line strings are not supported");
  EXPECT_ERROR("a = 1\na = 2", 2, "a", "duplicate key");
  EXPECT_ERROR("[t]\na = 1\na = 2", 3, "t.a", "duplicate key");
  EXPECT_ERROR("[t]\n[t]", 2, "t", "table defined twice");
  EXPECT_ERROR("[t]\nb.c = 1\n[t.b]", 3, "t.b", "table defined twice");
  EXPECT_ERROR("a = 1\n[a]", 2, "a", "already defined as a value");
  EXPECT_ERROR("a = 1\n[a.b]", 2, "a", "already defined as a value");
  EXPECT_ERROR("a = 1\na.b = 2", 2, "a", "already defined as a value");
  EXPECT_ERROR("a = {}\n[a]", 2, "a", "an inline table cannot be extended");
  EXPECT_ERROR("a = { b = 1 }\n[a.c]", 2, "a", "an inline table cannot be extended");
  EXPECT_ERROR("a = { b = 1 }\na.c = 2", 2, "a", "cannot add to a table defined elsewhere");
  EXPECT_ERROR("[a.b]\n[a]\nb.c = 1", 3, "a.b", "cannot add to a table defined elsewhere");
  EXPECT_ERROR("a = [1, 2]", 1, "a", "arrays are not supported");
  EXPECT_ERROR("a = 1.5", 1, "a", "floats, dates and times are not supported");
  EXPECT_ERROR("a = 1e5", 1, "a", "floats, dates and times are not supported");
  EXPECT_ERROR("a = inf", 1, "a", "floats, dates and times are not supported");
  EXPECT_ERROR("a = nan", 1, "a", "floats, dates and times are not supported");
  EXPECT_ERROR("a = 1979-05-27", 1, "a", "invalid integer");
  EXPECT_ERROR("a = 07:32:00", 1, "a", "floats, dates and times are not supported");
  EXPECT_ERROR("a = 012", 1, "a", "leading zeros are not allowed");
  EXPECT_ERROR("a = 9223372036854775808", 1, "a", "integer out of range");
  EXPECT_ERROR("a = -9223372036854775809", 1, "a", "integer out of range");
  EXPECT_ERROR("a = 0xFFFFFFFFFFFFFFFFF", 1, "a", "integer out of range");
  EXPECT_ERROR("a = 1__0", 1, "a", "underscores must be between digits");
  EXPECT_ERROR("a = _1", 1, "a", "invalid value");
  EXPECT_ERROR("a = 1_", 1, "a", "underscores must be between digits");
  EXPECT_ERROR("a = -0x1", 1, "a", "a sign is not allowed");
  EXPECT_ERROR("a = 0x", 1, "a", "invalid integer");
  EXPECT_ERROR("a = 0b102", 1, "a", "invalid integer");
  EXPECT_ERROR("a = -", 1, "a", "invalid integer");
  EXPECT_ERROR("a = 12abc", 1, "a", "invalid integer");
  EXPECT_ERROR("a = tru", 1, "a", "invalid value");
  EXPECT_ERROR("a = truex", 1, "a", "invalid value");
  EXPECT_ERROR("a = bare", 1, "a", "invalid value (strings must be quoted)");
  EXPECT_ERROR("a =", 1, "a", "expected a value");
  EXPECT_ERROR("a = # c", 1, "a", "expected a value");
  EXPECT_ERROR("a 1", 1, "a", "expected '='");
  EXPECT_ERROR("[t] x", 1, "t", "expected the end of the line after a table header");
  EXPECT_ERROR("[t", 1, "t", "expected ']'");
  EXPECT_ERROR("a = { b = 1, }", 1, "a", "without a trailing comma");
  EXPECT_ERROR("a = { b = 1\n}", 1, "a", "inline tables must be on one line");
  EXPECT_ERROR("a = { b = 1 c = 2 }", 1, "a", "expected ',' or '}'");
  EXPECT_ERROR("a = { b = 1, b = 2 }", 1, "a.b", "duplicate key");
  EXPECT_ERROR("[t]\na = { b = { c = \"\\q\" } }", 2, "t.a.b.c", "invalid escape");
  EXPECT_ERROR("a = {{}}", 1, "a", "unexpected character '{'");
  /* Errors at no key. */
  EXPECT_ERROR("[[a]]", 1, NULL, "arrays of tables are not supported");
  EXPECT_ERROR("a = 1 b = 2", 1, NULL, "expected the end of the line after a value");
  EXPECT_ERROR("[]", 1, NULL, "unexpected character ']'");
  EXPECT_ERROR("= 1", 1, NULL, "unexpected character '='");
  EXPECT_ERROR("a.", 1, NULL, "expected a key");
  EXPECT_ERROR("a = 1\r", 1, NULL, "expected the end of the line");
  EXPECT_ERROR("\r", 1, NULL, "carriage return without a line feed");
  EXPECT_ERROR("# bad \x01 comment", 1, NULL, "control character in a comment");
  EXPECT_ERROR("a = 1\nb = \"\xff\"", 2, NULL, "invalid UTF-8");
  EXPECT_ERROR("a = \"\xc0\xaf\"", 1, NULL, "invalid UTF-8");       /* overlong */
  EXPECT_ERROR("a = \"\xed\xa0\x80\"", 1, NULL, "invalid UTF-8");   /* surrogate */
  EXPECT_ERROR("a = \"\xe2\x82\"", 1, NULL, "invalid UTF-8");       /* truncated */
  EXPECT_ERROR("a = \"\xf4\x90\x80\x80\"", 1, NULL, "invalid UTF-8");/* > U+10FFFF */
  expect_error("a = 1\n\0", 7, 2, NULL, "NUL byte");
  EXPECT_ERROR("a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q = 1", 1, NULL, "more than 16 parts");
}

TEST(nesting_limit) {
  char text[256] = "a = ";
  for (int i = 0; i < 20; i++) strcat(text, "{b=");
  strcat(text, "1");
  for (int i = 0; i < 20; i++) strcat(text, "}");
  ruda__toml_value_t r;
  ruda_status_t st = ruda__toml_parse(text, strlen(text), NULL, &r);
  ASSERT_NOT_NULL(st);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "nested too deeply");
  ASSERT_STR_EQ(ruda_status_file(st), "<string>");
  ruda_status_free(st);
}

TEST(out_of_memory_everywhere) {
  const char *text =
      "[a.b]\nc = \"a long enough string to need a bigger buffer than 32\"\n"
      "d = { e = 1, f.g = true }\n[h]\ni = 'x'\n";
  bool done = false;
  for (int64_t n = 0; n < 1000 && !done; n++) {
    ruda__toml_value_t r;
    ruda__test_fail_alloc_after(n);
    ruda_status_t st = ruda__toml_parse(text, strlen(text), "oom.toml", &r);
    ruda__test_fail_alloc_after(-1);
    if (st) {
      ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
      ASSERT_EQ(r.count, 0);
      ruda_status_free(st);
    } else {
      ASSERT_NOT_NULL(get(&r, "a.b.d.f.g"));
      ASSERT_TRUE(get(&r, "a.b.d.f.g")->boolean);
      ASSERT_STR_EQ(get(&r, "h.i")->string, "x");
      done = true;
    }
    ruda__toml_free(&r);
  }
  ASSERT_TRUE(done);
}
