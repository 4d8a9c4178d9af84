/* Shared by the examples: open the device named by RUDA_DEVICE (default
 * "cpu") and report errors. */
#ifndef RUDA_EXAMPLE_COMMON_H
#define RUDA_EXAMPLE_COMMON_H

#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints the error's text, frees it, and returns the exit code 1. */
static inline int example_fail(ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "error: %s\n", text ? text : "(no memory)");
  free(text);
  ruda_status_free(s);
  return 1;
}

/* Opens the device. Returns 0 with *out set, 77 (skip) when the device is
 * unavailable here, 1 on any other error. */
static inline int example_open(const char **out_name, ruda_client_t **out) {
  const char *name = getenv("RUDA_DEVICE") ? getenv("RUDA_DEVICE") : "cpu";
  *out_name = name;
  ruda_device_id_t dev;
  ruda_status_t s = ruda_device_parse(name, &dev);
  if (!s) s = ruda_client_create(dev, out);
  if (!s) return 0;
  if (ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    fprintf(stderr, "skip: %s is unavailable here\n", name);
    ruda_status_free(s);
    return 77;
  }
  return example_fail(s);
}

#endif
