/* The internal JSON string escaper: the escapes themselves, NULL input and
 * snprintf-style truncation. */
#include <string.h>

#include "base/json.h"
#include "test.h"

/* Escapes `in` into a roomy buffer and checks text and returned length. */
#define CHECK_ESCAPE(in, want)                                      \
  do {                                                              \
    char buf_[128];                                                 \
    size_t n_ = ruda__json_escape((in), buf_, sizeof buf_);         \
    ASSERT_STR_EQ(buf_, want);                                      \
    ASSERT_UEQ(n_, strlen(want));                                   \
  } while (0)

TEST(plain_text_is_quoted) {
  CHECK_ESCAPE("", "\"\"");
  CHECK_ESCAPE("abc 123", "\"abc 123\"");
  CHECK_ESCAPE(NULL, "\"\"");
}

TEST(short_escapes) {
  CHECK_ESCAPE("a\"b", "\"a\\\"b\"");
  CHECK_ESCAPE("a\\b", "\"a\\\\b\"");
  CHECK_ESCAPE("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
}

TEST(other_control_bytes_use_u_escapes) {
  CHECK_ESCAPE("\x01", "\"\\u0001\"");
  CHECK_ESCAPE("x\x1fy", "\"x\\u001fy\"");
  CHECK_ESCAPE("\x1b[0m", "\"\\u001b[0m\"");
}

TEST(utf8_and_high_bytes_pass_through) {
  CHECK_ESCAPE("caf\xc3\xa9 \xe2\x86\x92", "\"caf\xc3\xa9 \xe2\x86\x92\"");
  CHECK_ESCAPE("\x7f", "\"\x7f\"");
}

TEST(measures_without_a_buffer) {
  ASSERT_UEQ(ruda__json_escape("a\nb", NULL, 0), 6);
  ASSERT_UEQ(ruda__json_escape("\x02", NULL, 0), 8);
}

TEST(truncates_like_snprintf) {
  char buf[5];
  memset(buf, 'X', sizeof buf);
  /* "\"a\\nb\"" needs 6 bytes; 4 fit with the terminator. */
  ASSERT_UEQ(ruda__json_escape("a\nb", buf, sizeof buf), 6);
  ASSERT_STR_EQ(buf, "\"a\\n");
  /* A cut inside a \u escape still leaves a terminated prefix. */
  ASSERT_UEQ(ruda__json_escape("\x03", buf, 4), 8);
  ASSERT_STR_EQ(buf, "\"\\u");
  char one[1] = {'X'};
  ASSERT_UEQ(ruda__json_escape("abc", one, 1), 5);
  ASSERT_EQ(one[0], '\0');
}
