/* libFuzzer target for the ruda.toml parser and schema.
 *
 * Feeds arbitrary bytes to ruda_config_parse() (which runs the TOML parser
 * and the schema), renders whatever error comes back as text and JSON, and
 * runs the balanced name formatter over the same bytes. Everything is freed,
 * so LeakSanitizer catches leaks on error paths. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config_internal.h"
#include "base/toml.h"
#include "ruda/config.h"
#include "ruda/log.h"
#include "ruda/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const ruda__toml_value_t *v) {
  size_t n = 1;
  for (size_t i = 0; i < v->count; i++) n += walk(&v->entries[i].value);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ruda_config_t cfg;
  ruda_status_t st = ruda_config_parse((const char *)data, size, "fuzz.toml", &cfg);
  if (st) {
    /* Errors always name the file and are RUDA_ERR_CONFIG. */
    if (ruda_status_kind(st) != RUDA_ERR_CONFIG || !ruda_status_file(st)) abort();
    char *text = ruda_status_to_string(st);
    char *json = ruda_status_to_json(st);
    free(text);
    free(json);
    ruda_status_free(st);
  } else if (cfg.streaming.max_streams < 1 || cfg.streaming.max_streams > 255) {
    abort();
  } else {
    /* One set of rules: whatever the file loader accepts, ruda_config_set
     * accepts too. */
    ruda_status_t v = ruda__config_validate(&cfg);
    if (v) abort();
  }

  ruda__toml_value_t root;
  st = ruda__toml_parse((const char *)data, size, NULL, &root);
  if (!st) {
    (void)walk(&root);
    ruda__toml_free(&root);
  }
  ruda_status_free(st);

  char *name = malloc(size + 1);
  if (name) {
    memcpy(name, data, size);
    name[size] = '\0';
    char small[16];
    size_t need = ruda_name_balanced(name, small, sizeof small);
    char *full = malloc(need + 1);
    if (full) {
      if (ruda_name_balanced(name, full, need + 1) != need || strlen(full) != need) abort();
      free(full);
    }
    free(name);
  }
  return 0;
}
