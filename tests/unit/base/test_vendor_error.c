/* A vendor call's failure as a ruda error (base/vendor_error.h): one
 * wording for every vendor, with the vendor fields set. */
#include <stdarg.h>

#include "base/vendor_error.h"
#include "test.h"

static ruda_status_t vendor_error(const char *text, const char *context_fmt, ...) {
  va_list ap;
  va_start(ap, context_fmt);
  ruda_status_t s =
      ruda__vendor_errorv(RUDA_ERR_IO_UNKNOWN, "vendorCall", "VENDOR_BAD", -4, text, context_fmt, ap);
  va_end(ap);
  return s;
}

TEST(vendor_error_words_call_code_text_and_context) {
  ruda_status_t s = vendor_error("out of luck", "copying %d bytes", 16);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_UNKNOWN);
  ASSERT_STR_EQ(ruda_status_reason(s),
                "vendorCall failed with VENDOR_BAD (-4): out of luck: copying 16 bytes");
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "vendorCall");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "VENDOR_BAD");
  ASSERT_EQ(ruda_status_vendor_code(s), -4);
  ruda_status_free(s);
}

TEST(vendor_error_leaves_out_a_missing_text_or_context) {
  ruda_status_t s = vendor_error(NULL, NULL);
  ASSERT_STR_EQ(ruda_status_reason(s), "vendorCall failed with VENDOR_BAD (-4)");
  ruda_status_free(s);
  s = vendor_error(NULL, "%s", "");
  ASSERT_STR_EQ(ruda_status_reason(s), "vendorCall failed with VENDOR_BAD (-4)");
  ruda_status_free(s);
}

enum { TEST_CODE_ENUM = 3 };
#define TEST_CODE_MACRO 7

static const char *test_code_name(int code) {
  switch (code) {
    RUDA__CASE_NAME(TEST_CODE_ENUM)
    RUDA__CASE_NAME(TEST_CODE_MACRO)
    default: return "unknown";
  }
}

TEST(vendor_code_named_after_its_identifier_enum_or_macro) {
  ASSERT_STR_EQ(test_code_name(3), "TEST_CODE_ENUM");
  ASSERT_STR_EQ(test_code_name(7), "TEST_CODE_MACRO");
  ASSERT_STR_EQ(test_code_name(5), "unknown");
}
