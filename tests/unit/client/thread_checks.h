/* Checks for the client tests' own threads, where an ASSERT (which ends
 * the test with a longjmp on the test's thread) cannot run: EXPECT(cond)
 * and ok(status) print what failed and count it in g_bad, which the test
 * asserts is 0 once its threads are joined. Include once, after test.h. */
#ifndef RUDA_TEST_THREAD_CHECKS_H
#define RUDA_TEST_THREAD_CHECKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ruda/status.h"

static atomic_uint g_bad;

#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      atomic_fetch_add(&g_bad, 1);                                      \
    }                                                                   \
  } while (0)

/* Whether `s` is success; otherwise prints it, frees it and counts it. */
static __attribute__((unused)) bool ok(ruda_status_t s) {
  if (!s) return true;
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "unexpected error: %s\n", text ? text : "?");
  free(text);
  ruda_status_free(s);
  atomic_fetch_add(&g_bad, 1);
  return false;
}

#endif
