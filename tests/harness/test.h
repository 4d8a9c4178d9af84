/* ruda's in-tree test runner.
 *
 * A test program is one .c file with any number of TEST(name) blocks. Each
 * test registers itself before main() runs; test_main.c runs them in order,
 * or only those whose name contains argv[1] (`./unit_test_status shared`).
 *
 * Assertions are typed and print both operands with file:line. A failed
 * assertion ends the current test (the next one still runs). SKIP("why")
 * ends the test as skipped; a program whose tests were all skipped exits 77,
 * which CTest reports as SKIP.
 *
 * The program prints one line per test and ends with
 *   N passed, N failed, N skipped
 */
#ifndef RUDA_TEST_H
#define RUDA_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*rt_test_fn)(void);

void rt_register(const char *name, rt_test_fn fn, const char *file, int line);
_Noreturn void rt_fail(void);
_Noreturn void rt_skip(const char *file, int line, const char *why);
void rt_fail_msg(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Temporary directory for this test program, created on first use. */
const char *rt_tmpdir(void);
/* The whole file at `path`, NUL-terminated (the caller frees it), or NULL
 * where it cannot be opened or read to its end. */
char *rt_read_file(const char *path);
/* Writes `text` to the file at `path` (replacing it); fails the test where
 * it cannot. */
void rt_write_file(const char *path, const char *text);
/* Runs the shell command `cmd` and keeps up to `cap` - 1 bytes of what it
 * writes to stdout, NUL-terminated, in `out`; returns its exit status (128
 * where it did not exit). Fails the test where it cannot be started. */
int rt_run_command(const char *cmd, char *out, size_t cap);
/* Checks that the snprintf-like `format` writes `want` for `in` into a
 * buffer of 256 bytes and returns its length. */
void rt_expect_text_format(size_t (*format)(const char *, char *, size_t), const char *in,
                           const char *want);
void rt_expect_u64_format(size_t (*format)(uint64_t, char *, size_t), uint64_t in,
                          const char *want);

#define TEST(name)                                                      \
  static void rt_test_##name(void);                                     \
  __attribute__((constructor)) static void rt_register_##name(void) {   \
    rt_register(#name, rt_test_##name, __FILE__, __LINE__);             \
  }                                                                     \
  static void rt_test_##name(void)

#define SKIP(why) rt_skip(__FILE__, __LINE__, (why))

/* A device of `backend` ("opencl", "cuda") cannot be used here: the test
 * is skipped with `why`, unless the environment variable RUDA_REQUIRE_DEVICE
 * names that backend (a list separated by commas or spaces, e.g.
 * "opencl,cuda"; "opencl:0" names opencl), in which case it fails: CI sets
 * it where the device must be there, so a broken driver cannot pass as a
 * skip. */
#define SKIP_UNAVAILABLE(backend, why) rt_skip_unavailable(__FILE__, __LINE__, (backend), (why))
_Noreturn void rt_skip_unavailable(const char *file, int line, const char *backend,
                                   const char *why);
/* Whether RUDA_REQUIRE_DEVICE names `backend`. */
bool rt_device_required(const char *backend);

#define RT_CHECK_(cond, ...)                                            \
  do {                                                                  \
    if (!(cond)) {                                                      \
      rt_fail_msg(__FILE__, __LINE__, __VA_ARGS__);                     \
      rt_fail();                                                        \
    }                                                                   \
  } while (0)

#define ASSERT_TRUE(c) RT_CHECK_((c), "ASSERT_TRUE(%s)", #c)
#define ASSERT_FALSE(c) RT_CHECK_(!(c), "ASSERT_FALSE(%s)", #c)

/* Compares `a` and `b` as `type`, printed with the format `fmt`. */
#define RT_CMP_(type, fmt, a, op, b)                                       \
  do {                                                                     \
    type rt_a_ = (type)(a), rt_b_ = (type)(b);                             \
    RT_CHECK_(rt_a_ op rt_b_, "%s %s %s: %" fmt " vs %" fmt, #a, #op, #b,  \
              rt_a_, rt_b_);                                               \
  } while (0)
#define RT_CMP_INT_(a, op, b) RT_CMP_(int64_t, PRId64, a, op, b)
#define RT_CMP_UINT_(a, op, b) RT_CMP_(uint64_t, PRIu64, a, op, b)

#define ASSERT_EQ(a, b) RT_CMP_INT_(a, ==, b)
#define ASSERT_NE(a, b) RT_CMP_INT_(a, !=, b)
#define ASSERT_LT(a, b) RT_CMP_INT_(a, <, b)
#define ASSERT_LE(a, b) RT_CMP_INT_(a, <=, b)
#define ASSERT_GT(a, b) RT_CMP_INT_(a, >, b)
#define ASSERT_GE(a, b) RT_CMP_INT_(a, >=, b)
#define ASSERT_UEQ(a, b) RT_CMP_UINT_(a, ==, b)
#define ASSERT_UNE(a, b) RT_CMP_UINT_(a, !=, b)
#define ASSERT_ULT(a, b) RT_CMP_UINT_(a, <, b)
#define ASSERT_ULE(a, b) RT_CMP_UINT_(a, <=, b)
#define ASSERT_UGT(a, b) RT_CMP_UINT_(a, >, b)
#define ASSERT_UGE(a, b) RT_CMP_UINT_(a, >=, b)

#define ASSERT_DBL_NEAR(a, b, eps)                                              \
  do {                                                                          \
    double rt_a_ = (double)(a), rt_b_ = (double)(b), rt_e_ = (double)(eps);     \
    double rt_d_ = rt_a_ > rt_b_ ? rt_a_ - rt_b_ : rt_b_ - rt_a_;               \
    RT_CHECK_(rt_d_ <= rt_e_, "%s ~= %s (eps %g): %.9g vs %.9g", #a, #b, rt_e_, \
              rt_a_, rt_b_);                                                    \
  } while (0)

#define ASSERT_PTR_EQ(a, b)                                                     \
  do {                                                                          \
    const void *rt_a_ = (const void *)(a), *rt_b_ = (const void *)(b);          \
    RT_CHECK_(rt_a_ == rt_b_, "%s == %s: %p vs %p", #a, #b, rt_a_, rt_b_);      \
  } while (0)
#define ASSERT_NULL(a) ASSERT_PTR_EQ(a, NULL)
#define ASSERT_NOT_NULL(a)                                                      \
  RT_CHECK_((a) != NULL, "%s != NULL", #a)

#define ASSERT_STR_EQ(a, b)                                                     \
  do {                                                                          \
    const char *rt_a_ = (a), *rt_b_ = (b);                                      \
    RT_CHECK_(rt_a_ && rt_b_ && strcmp(rt_a_, rt_b_) == 0,                      \
              "%s == %s:\n  \"%s\"\nvs\n  \"%s\"", #a, #b,                      \
              rt_a_ ? rt_a_ : "(null)", rt_b_ ? rt_b_ : "(null)");              \
  } while (0)
#define ASSERT_STR_CONTAINS(hay, needle)                                        \
  do {                                                                          \
    const char *rt_h_ = (hay), *rt_n_ = (needle);                               \
    RT_CHECK_(rt_h_ && rt_n_ && strstr(rt_h_, rt_n_) != NULL,                   \
              "%s contains %s:\n  \"%s\"\ndoes not contain\n  \"%s\"", #hay,    \
              #needle, rt_h_ ? rt_h_ : "(null)", rt_n_ ? rt_n_ : "(null)");     \
  } while (0)
#define ASSERT_MEM_EQ(a, b, n)                                                  \
  RT_CHECK_(memcmp((a), (b), (n)) == 0, "memcmp(%s, %s, %s) != 0", #a, #b, #n)

/* ruda_status_t helpers (status.h is included by the test when used). */
#define ASSERT_OK(expr)                                                         \
  do {                                                                          \
    ruda_status_t rt_s_ = (expr);                                               \
    if (rt_s_) {                                                                \
      char *rt_txt_ = ruda_status_to_string(rt_s_);                             \
      rt_fail_msg(__FILE__, __LINE__, "%s returned an error:\n%s", #expr,       \
                  rt_txt_ ? rt_txt_ : "(no text)");                             \
      free(rt_txt_);                                                            \
      ruda_status_free(rt_s_);                                                  \
      rt_fail();                                                                \
    }                                                                           \
  } while (0)

/* Asserts that `expr` fails with `kind` somewhere in its cause chain and
 * frees the status. */
#define ASSERT_ERR_KIND(expr, kind)                                             \
  do {                                                                          \
    ruda_status_t rt_s_ = (expr);                                               \
    RT_CHECK_(rt_s_ != NULL, "%s succeeded, expected %s", #expr, #kind);        \
    bool rt_found_ = ruda_status_find(rt_s_, (kind)) != NULL;                   \
    if (!rt_found_) {                                                           \
      char *rt_txt_ = ruda_status_to_string(rt_s_);                             \
      rt_fail_msg(__FILE__, __LINE__, "%s: expected %s, got:\n%s", #expr,       \
                  #kind, rt_txt_ ? rt_txt_ : "(no text)");                      \
      free(rt_txt_);                                                            \
      ruda_status_free(rt_s_);                                                  \
      rt_fail();                                                                \
    }                                                                           \
    ruda_status_free(rt_s_);                                                    \
  } while (0)

/* Asserts that `expr` fails with exactly `kind` and a text (as
 * ruda_status_to_string writes it) that contains `needle`, and frees the
 * status. */
#define ASSERT_ERR_TEXT(expr, kind, needle)                                     \
  do {                                                                          \
    ruda_status_t rt_s_ = (expr);                                               \
    const char *rt_n_ = (needle);                                               \
    char *rt_txt_ = ruda_status_to_string(rt_s_);                               \
    bool rt_ok_ = rt_s_ != NULL && ruda_status_kind(rt_s_) == (kind) && rt_txt_ && \
                  strstr(rt_txt_, rt_n_) != NULL;                               \
    if (!rt_ok_)                                                                \
      rt_fail_msg(__FILE__, __LINE__, "%s: expected %s with \"%s\", got:\n%s", \
                  #expr, #kind, rt_n_, rt_s_ && rt_txt_ ? rt_txt_ : "(success)"); \
    free(rt_txt_);                                                              \
    ruda_status_free(rt_s_);                                                    \
    if (!rt_ok_) rt_fail();                                                     \
  } while (0)

#endif /* RUDA_TEST_H */
