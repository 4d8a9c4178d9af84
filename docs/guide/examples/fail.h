/* How the guide's examples stop on an error: print the status (its kind,
 * message and causes), free it, and return main's exit code 1. */
#ifndef GUIDE_EXAMPLES_FAIL_H
#define GUIDE_EXAMPLES_FAIL_H

#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "ruda: %s\n", text);
  free(text);
  ruda_status_free(s);
  return 1;
}

#endif
