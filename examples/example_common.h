/* Shared by the examples: open the device named by RUDA_DEVICE (default
 * "cpu") and report errors. */
#ifndef RUDA_EXAMPLE_COMMON_H
#define RUDA_EXAMPLE_COMMON_H

#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints "error: <what>: <the error's text>", frees the error, and returns
 * the exit code 1. */
static inline int example_fail(const char *what, ruda_status_t s) {
  char *text = ruda_status_to_string(s);
  fprintf(stderr, "error: %s: %s\n", what, text ? text : "(no memory)");
  free(text);
  ruda_status_free(s);
  return 1;
}

/* Opens the device and returns its client, with *out_name set to the
 * device's name. Where it cannot, the program ends: exit code 77 (a skip)
 * when the device is unavailable here, 1 on any other error. */
static inline ruda_client_t *example_open(const char **out_name) {
  const char *name = getenv("RUDA_DEVICE") ? getenv("RUDA_DEVICE") : "cpu";
  *out_name = name;
  ruda_device_id_t dev;
  ruda_client_t *client = NULL;
  ruda_status_t s = ruda_device_parse(name, &dev);
  if (!s) s = ruda_client_create(dev, &client);
  if (!s) return client;
  if (ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    fprintf(stderr, "skip: %s is unavailable here\n", name);
    ruda_status_free(s);
    exit(77);
  }
  exit(example_fail("opening the device", s));
}

#endif
