/* Internal to the `ruda` command: subcommands and shared helpers. */
#ifndef RUDA_TOOLS_H
#define RUDA_TOOLS_H

#include <stdbool.h>
#include <stdio.h>

#include "ruda/client.h"
#include "ruda/status.h"

/* Documented exit codes (README.md, docs/tools.md). */
enum {
  RUDA_EXIT_OK = 0,
  RUDA_EXIT_FAILURE = 1,     /* a check or a benchmark failed */
  RUDA_EXIT_USAGE = 2,       /* bad command line */
  RUDA_EXIT_UNAVAILABLE = 3, /* the requested device cannot be used */
};

int ruda_cmd_devices(int argc, char **argv);
int ruda_cmd_demo(int argc, char **argv);
int ruda_cmd_bench(int argc, char **argv);
int ruda_cmd_kernels(int argc, char **argv);

void ruda_cmd_devices_help(FILE *f);
void ruda_cmd_demo_help(FILE *f);
void ruda_cmd_bench_help(FILE *f);
void ruda_cmd_kernels_help(FILE *f);

/* Prints "ruda <what>: <status text>" on stderr; does not free `st`. */
void ruda_tools_print_status(const char *what, ruda_status_t st);

/* Opens a client on `name` ("cpu", "cuda:1"). On failure prints the status
 * and returns RUDA_EXIT_USAGE (a malformed name) or RUDA_EXIT_UNAVAILABLE;
 * RUDA_EXIT_OK with *out set on success. */
int ruda_tools_open_device(const char *name, ruda_client_t **out);

/* True for "-h" and "--help". */
bool ruda_tools_is_help(const char *arg);

#endif
