/* Backtraces for errors, enabled by RUDA_BACKTRACE=1 or RUDA_BACKTRACE=full. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strnlen, strcasecmp */
#endif
#include "base/backtrace.h"

#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "ruda/status.h"

enum { BT_UNKNOWN = 0, BT_OFF = 1, BT_ON = 2, BT_FULL = 3 };
enum { BT_MAX_FRAMES = 64 };

/* Read once; a benign race at first use only means getenv() runs twice and
 * both threads store the same answer. */
static _Atomic int g_mode = BT_UNKNOWN;

static int mode_from_env(void) {
  const char *v = getenv("RUDA_BACKTRACE");
  if (!v || !*v) return BT_OFF;
  if (strcasecmp(v, "full") == 0) return BT_FULL;
  if (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
      strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0)
    return BT_ON;
  return BT_OFF;
}

static int mode(void) {
  int m = atomic_load_explicit(&g_mode, memory_order_acquire);
  if (m == BT_UNKNOWN) {
    m = mode_from_env();
    atomic_store_explicit(&g_mode, m, memory_order_release);
  }
  return m;
}

bool ruda_backtrace_enabled(void) { return mode() >= BT_ON; }

bool ruda__backtrace_full(void) { return mode() == BT_FULL; }

void ruda__backtrace_override(int m) {
  int v = m < 0 ? BT_UNKNOWN : (m ? BT_ON : BT_OFF);
  atomic_store_explicit(&g_mode, v, memory_order_release);
}

char *ruda__backtrace_capture(unsigned skip) {
  void *frames[BT_MAX_FRAMES];
  int n = backtrace(frames, BT_MAX_FRAMES);
  if (n <= 0) return NULL;
  /* Always drop this function's own frame. */
  unsigned first = 1 + skip;
  if (first >= (unsigned)n) first = (unsigned)n - 1;
  char **syms = backtrace_symbols(frames + first, n - (int)first);
  size_t cap = 0;
  int count = n - (int)first;
  for (int i = 0; i < count; i++) {
    cap += 16 + (syms && syms[i] ? strlen(syms[i]) : 2 + 2 * sizeof(void *));
  }
  char *out = ruda__malloc(cap + 1);
  if (!out) {
    free(syms);
    return NULL;
  }
  size_t len = 0;
  for (int i = 0; i < count; i++) {
    int w;
    if (syms && syms[i])
      w = snprintf(out + len, cap + 1 - len, "%4d: %s\n", i, syms[i]);
    else
      w = snprintf(out + len, cap + 1 - len, "%4d: %p\n", i, frames[first + (unsigned)i]);
    if (w < 0 || (size_t)w >= cap + 1 - len) break;
    len += (size_t)w;
  }
  /* No trailing newline: the error text adds its own separators. */
  if (len > 0 && out[len - 1] == '\n') len--;
  out[len] = '\0';
  free(syms); /* backtrace_symbols() allocates with malloc(). */
  return out;
}
