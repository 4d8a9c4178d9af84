/* The consumers' error report, shared by the programs of this folder. */
#ifndef RUDA_CONSUMER_FAIL_H
#define RUDA_CONSUMER_FAIL_H

#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints "<who>: <what>: <the error's text>" on stderr, frees the error,
 * and returns the exit code 1. */
static inline int consumer_fail(const char *who, const char *what, ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "%s: %s: %s\n", who, what, text ? text : "?");
  free(text);
  ruda_status_free(s);
  return 1;
}

#endif
