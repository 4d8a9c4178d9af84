/* The version macros and functions agree with each other. */
#include <stdio.h>

#include "ruda/version.h"
#include "test.h"

TEST(version_number_packs_the_macros) {
  ASSERT_UEQ(ruda_version(), RUDA_VERSION_NUMBER);
  ASSERT_UEQ(RUDA_VERSION_NUMBER,
             RUDA_VERSION_MAJOR * 10000u + RUDA_VERSION_MINOR * 100u + RUDA_VERSION_PATCH);
  ASSERT_ULT(RUDA_VERSION_MINOR, 100);
  ASSERT_ULT(RUDA_VERSION_PATCH, 100);
}

TEST(version_string_matches_the_macros) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", RUDA_VERSION_MAJOR, RUDA_VERSION_MINOR,
           RUDA_VERSION_PATCH);
  ASSERT_STR_EQ(RUDA_VERSION_STRING, want);
  ASSERT_STR_EQ(ruda_version_string(), want);
}
