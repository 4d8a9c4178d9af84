/* The run-time library loader (base/dynlib.h): which names it tries, what
 * it says about each that failed, a symbol table filled from an X-macro
 * list with required and optional entries, and a load done once. */
#include <stdlib.h>
#include <string.h>

#include "base/dynlib.h"
#include "test.h"

TEST(dynlib_candidates_override_then_environment_then_defaults) {
  static const char *const defaults[] = {"liba.so.1", "liba.so"};
  const char *single[1];
  const char *const *names = NULL;
  unsetenv("RUDA_TEST_DYNLIB");
  ASSERT_UEQ(ruda__dynlib_candidates(NULL, "RUDA_TEST_DYNLIB", defaults, 2, single, &names), 2);
  ASSERT_PTR_EQ(names, defaults);
  setenv("RUDA_TEST_DYNLIB", "", 1); /* empty: the defaults */
  ASSERT_UEQ(ruda__dynlib_candidates("", "RUDA_TEST_DYNLIB", defaults, 2, single, &names), 2);
  setenv("RUDA_TEST_DYNLIB", "/x/libb.so", 1);
  ASSERT_UEQ(ruda__dynlib_candidates(NULL, "RUDA_TEST_DYNLIB", defaults, 2, single, &names), 1);
  ASSERT_STR_EQ(names[0], "/x/libb.so");
  ASSERT_UEQ(ruda__dynlib_candidates("/y/libc.so", "RUDA_TEST_DYNLIB", defaults, 2, single,
                                     &names),
             1);
  ASSERT_STR_EQ(names[0], "/y/libc.so");
  unsetenv("RUDA_TEST_DYNLIB");
}

TEST(dynlib_open_names_every_failed_candidate_and_why) {
  static ruda__dynlib_t lib;
  const char *names[] = {"libruda-absent-one.so.3", NULL, "", "/nonexistent/libruda-two.so"};
  ASSERT_FALSE(ruda__dynlib_open(&lib, names, 4));
  ASSERT_NULL(lib.handle);
  ASSERT_STR_CONTAINS(lib.tried, "libruda-absent-one.so.3 (");
  ASSERT_STR_CONTAINS(lib.tried, "), /nonexistent/libruda-two.so (");
  ASSERT_STR_CONTAINS(lib.tried, "No such file"); /* dlerror()'s text */
  ASSERT_FALSE(ruda__dynlib_open(&lib, names, 0));
  ASSERT_STR_EQ(lib.tried, "no file name");
}

/* A table as a backend declares one, from an X-macro list. */
#define TEST_SYMBOLS(X) \
  X(cos, true)          \
  X(sqrt, true)         \
  X(ruda_no_such_function_here, false)

typedef double (*fn_t)(double);
typedef struct test_api {
  fn_t cos, sqrt, ruda_no_such_function_here;
} test_api_t;

#define TEST_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(test_api_t, fn, required)
static const ruda__dynlib_symbol_t test_symbols[] = {TEST_SYMBOLS(TEST_SYMBOL)};
static const ruda__dynlib_symbol_t required_missing[] = {
    RUDA__DYNLIB_SYMBOL(test_api_t, ruda_no_such_function_here, true)};

TEST(dynlib_resolve_fills_the_table_and_names_a_missing_required_symbol) {
  static ruda__dynlib_t lib;
  const char *names[] = {"libruda-absent.so", "libm.so.6"};
  ASSERT_TRUE(ruda__dynlib_open(&lib, names, 2));
  ASSERT_STR_EQ(lib.name, "libm.so.6");
  test_api_t api;
  memset(&api, 0, sizeof api);
  ASSERT_NULL(ruda__dynlib_resolve(&lib, test_symbols, 3, &api));
  ASSERT_TRUE(api.sqrt != NULL);
  ASSERT_DBL_NEAR(api.sqrt(16.0), 4.0, 0);
  ASSERT_DBL_NEAR(api.cos(0.0), 1.0, 0);
  ASSERT_TRUE(api.ruda_no_such_function_here == NULL); /* optional: left as it was */
  ASSERT_STR_EQ(ruda__dynlib_resolve(&lib, required_missing, 1, &api),
                "ruda_no_such_function_here");
  ruda__dynlib_close(&lib);
  ASSERT_NULL(lib.handle);
}

static int g_loads;
static ruda_status_t failing_load(ruda__dynlib_t *lib) {
  (void)lib;
  g_loads++;
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "load %d failed", g_loads);
}
static ruda_status_t good_load(ruda__dynlib_t *lib) {
  (void)lib;
  g_loads++;
  return NULL;
}

TEST(dynlib_once_loads_once_and_again_after_forget) {
  static ruda__dynlib_once_t once = RUDA__DYNLIB_ONCE_INIT;
  g_loads = 0;
  ASSERT_FALSE(ruda__dynlib_once_loaded(&once));
  ruda_status_t a = ruda__dynlib_once(&once, failing_load);
  ruda_status_t b = ruda__dynlib_once(&once, failing_load);
  ASSERT_EQ(g_loads, 1);
  ASSERT_NOT_NULL(a);
  ASSERT_NOT_NULL(b);
  ASSERT_TRUE(a != b); /* each caller owns a clone */
  ASSERT_STR_CONTAINS(ruda_status_reason(b), "load 1 failed");
  ruda_status_free(a);
  ruda_status_free(b);
  ASSERT_FALSE(ruda__dynlib_once_loaded(&once));
  ruda__dynlib_once_forget(&once, NULL, NULL);
  ASSERT_NULL(ruda__dynlib_once(&once, good_load));
  ASSERT_NULL(ruda__dynlib_once(&once, good_load));
  ASSERT_EQ(g_loads, 2);
  ASSERT_TRUE(ruda__dynlib_once_loaded(&once));
  ruda__dynlib_once_forget(&once, NULL, NULL);
}

TEST(dynlib_load_says_which_step_failed) {
  static ruda__dynlib_t lib;
  test_api_t api;
  memset(&api, 0, sizeof api);
  const char *missing = "x";
  const char *absent[] = {"libruda-absent.so"};
  ASSERT_EQ(ruda__dynlib_load(&lib, absent, 1, test_symbols, 3, &api, &missing),
            RUDA__DYNLIB_NOT_FOUND);
  ASSERT_NULL(missing);
  ASSERT_STR_CONTAINS(lib.tried, "libruda-absent.so (");
  const char *libm[] = {"libm.so.6"};
  ASSERT_EQ(ruda__dynlib_load(&lib, libm, 1, required_missing, 1, &api, &missing),
            RUDA__DYNLIB_NO_SYMBOL);
  ASSERT_STR_EQ(missing, "ruda_no_such_function_here");
  ASSERT_NULL(lib.handle); /* closed again */
  ASSERT_EQ(ruda__dynlib_load(&lib, libm, 1, test_symbols, 3, &api, &missing),
            RUDA__DYNLIB_LOADED);
  ASSERT_TRUE(api.cos != NULL);
  ruda__dynlib_close(&lib);
}

/* A table a spec fills: the loader's head first. */
typedef struct spec_api {
  ruda__dynlib_head_t head;
  int readied;
  fn_t cos, sqrt, ruda_no_such_function_here;
} spec_api_t;
#define SPEC_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(spec_api_t, fn, required)
static const ruda__dynlib_symbol_t spec_symbols[] = {TEST_SYMBOLS(SPEC_SYMBOL)};

static bool g_ready_fails;
static ruda_status_t spec_ready(const ruda__dynlib_t *lib, void *table) {
  spec_api_t *api = table;
  api->readied = 1;
  if (!g_ready_fails) return NULL;
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s is not ready", lib->name);
}

TEST(dynlib_once_spec_fills_the_table_only_when_the_whole_load_succeeds) {
  static const char *const names[] = {"libm.so.6"};
  static const ruda__dynlib_spec_t spec = {
      RUDA_ERR_UNAVAILABLE, "M is unavailable: ", "the maths library", "", "",
      "RUDA_TEST_DYNLIB", names, 1, spec_symbols, 3, spec_ready};
  static ruda__dynlib_once_t once = RUDA__DYNLIB_ONCE_INIT;
  static spec_api_t api;
  unsetenv("RUDA_TEST_DYNLIB");
  g_ready_fails = true;
  ruda_status_t s = ruda__dynlib_once_spec(&once, &spec, NULL, &api, sizeof api);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "libm.so.6 is not ready");
  ruda_status_free(s);
  ASSERT_NULL(once.lib.handle); /* closed again */
  ASSERT_EQ(api.readied, 0);    /* the table was not touched */
  ASSERT_TRUE(api.cos == NULL);

  ruda__dynlib_once_forget(&once, NULL, NULL);
  g_ready_fails = false;
  ASSERT_NULL(ruda__dynlib_once_spec(&once, &spec, NULL, &api, sizeof api));
  ASSERT_EQ(api.readied, 1);
  ASSERT_STR_EQ(api.head.lib_name, "libm.so.6");
  ASSERT_PTR_EQ(api.head.lib, once.lib.handle);
  ASSERT_DBL_NEAR(api.sqrt(9.0), 3.0, 0);

  /* A load that fails after a good one leaves the good table as it was. */
  ruda__dynlib_once_forget(&once, NULL, NULL);
  ruda_status_t e = ruda__dynlib_once_spec(&once, &spec, "libruda-absent.so", &api, sizeof api);
  ASSERT_STR_CONTAINS(ruda_status_reason(e), "M is unavailable: the maths library could not be "
                                             "loaded (looked for libruda-absent.so (");
  ruda_status_free(e);
  ASSERT_DBL_NEAR(api.sqrt(4.0), 2.0, 0);
  ruda__dynlib_once_forget(&once, NULL, NULL);
}
