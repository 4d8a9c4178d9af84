/* Helpers every `ruda` subcommand shares (tools/tools_common.c): the
 * documented exit codes, status printing, --help detection and opening a
 * device by name. Below the subcommands (tools/cmd_*.c) and the dispatcher
 * (tools/ruda.c), which call it; it calls neither. */
#ifndef RUDA_TOOLS_COMMON_H
#define RUDA_TOOLS_COMMON_H

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

/* The device names every --device option accepts (ruda_device_parse): a
 * type alone means its device 0. Usage lines print this. */
#define RUDA_TOOLS_DEVICE_FORMS "cpu|cpu:N|cuda|cuda:N|opencl|opencl:N"

/* Prints "ruda <what>: <status text>" on stderr; does not free `st`. */
void ruda_tools_print_status(const char *what, ruda_status_t st);

/* Opens a client on `name` ("cpu", "cuda:1", "opencl:0"). On failure prints
 * the status and returns RUDA_EXIT_USAGE (a malformed name) or
 * RUDA_EXIT_UNAVAILABLE; RUDA_EXIT_OK with *out set on success. */
int ruda_tools_open_device(const char *name, ruda_client_t **out);

/* True for "-h" and "--help". */
bool ruda_tools_is_help(const char *arg);

/* The start of a command made of subcommands (argv[0] names one): with no
 * argument, prints `help` on stderr and sets *code to RUDA_EXIT_USAGE;
 * with -h or --help first, prints it on stdout, *code RUDA_EXIT_OK. True
 * when it did either (the command then returns *code). */
bool ruda_tools_help_first(int argc, char **argv, void (*help)(FILE *f), int *code);

/* An option without a value that sets a bool: `name` ("--json") sets
 * *field to `value`. */
typedef struct ruda_tools_flag {
  const char *name;
  bool *field;
  bool value;
} ruda_tools_flag_t;

/* Sets the flag of `flags` (n of them) named `arg`; false when none is
 * named so. */
bool ruda_tools_set_flag(const char *arg, const ruda_tools_flag_t *flags, size_t n);

/* Writes `s` to `f` as a JSON string: quoted, with '"', '\\' and control
 * characters escaped (bytes from 0x80 are copied: UTF-8 stays as it is). */
void ruda_tools_json_string(FILE *f, const char *s);

#endif
