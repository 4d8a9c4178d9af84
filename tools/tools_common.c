/* Helpers the `ruda` subcommands share (tools_common.h). */
#include "tools_common.h"

#include <stdlib.h>
#include <string.h>

void ruda_tools_print_status(const char *what, ruda_status_t st) {
  char *text = ruda_status_to_string(st);
  fprintf(stderr, "ruda %s: %s\n", what, text ? text : "(out of memory formatting the error)");
  free(text);
}

bool ruda_tools_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool ruda_tools_help_first(int argc, char **argv, void (*help)(FILE *f), int *code) {
  if (argc >= 1 && !ruda_tools_is_help(argv[0])) return false;
  help(argc < 1 ? stderr : stdout);
  *code = argc < 1 ? RUDA_EXIT_USAGE : RUDA_EXIT_OK;
  return true;
}

bool ruda_tools_set_flag(const char *arg, const ruda_tools_flag_t *flags, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(arg, flags[i].name) == 0) {
      *flags[i].field = flags[i].value;
      return true;
    }
  }
  return false;
}

void ruda_tools_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20)
          fprintf(f, "\\u%04x", *p);
        else
          fputc(*p, f);
    }
  }
  fputc('"', f);
}

int ruda_tools_open_device(const char *name, ruda_client_t **out) {
  *out = NULL;
  ruda_device_id_t id;
  ruda_status_t st = ruda_device_parse(name, &id);
  if (st) {
    ruda_tools_print_status("--device", st);
    ruda_status_free(st);
    return RUDA_EXIT_USAGE;
  }
  st = ruda_client_create(id, out);
  if (st) {
    char what[64];
    snprintf(what, sizeof what, "device %s", name);
    ruda_tools_print_status(what, st);
    ruda_status_free(st);
    return RUDA_EXIT_UNAVAILABLE;
  }
  return RUDA_EXIT_OK;
}
