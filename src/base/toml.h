/* src/base/toml.h: a small strict parser for the TOML subset ruda.toml uses
 * (internal).
 *
 * Supported: comments, [table] and [dotted.table] headers, bare, "quoted"
 * and 'literal' keys, dotted keys (a.b = 1), basic strings with escapes
 * (\b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX), literal strings, integers
 * (decimal with _ separators, 0x/0o/0b), booleans and one-line inline
 * tables ({ a = 1, b = "x" }). Everything else TOML has (floats, dates,
 * arrays, multi-line strings, arrays of tables) is rejected with an error
 * that says so, as is anything malformed: duplicate keys, tables defined
 * twice, invalid UTF-8, control characters.
 *
 * Errors are RUDA_ERR_CONFIG statuses located at (file, line, dotted key).
 */
#ifndef RUDA_BASE_TOML_H
#define RUDA_BASE_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"

typedef enum ruda__toml_type {
  RUDA__TOML_TABLE = 0,
  RUDA__TOML_STRING,
  RUDA__TOML_INTEGER,
  RUDA__TOML_BOOLEAN,
} ruda__toml_type_t;

typedef struct ruda__toml_entry ruda__toml_entry_t;

typedef struct ruda__toml_value {
  ruda__toml_type_t type;
  uint32_t line;  /* where the value (or the table's header) appears */
  char *string;   /* STRING: NUL-terminated; may not contain NUL */
  int64_t integer;
  bool boolean;
  /* TABLE */
  ruda__toml_entry_t *entries;
  size_t count, cap;
  uint8_t origin; /* how the table was made; see toml.c */
} ruda__toml_value_t;

struct ruda__toml_entry {
  char *key;
  uint32_t line; /* where the key appears */
  ruda__toml_value_t value;
};

/* Parses `len` bytes of `text` (no terminator needed) into `out_root`, a
 * table the caller frees with ruda__toml_free() on success. On failure
 * `out_root` is left empty (freeing it is harmless). `file_name` only names
 * the file in errors (NULL: "<string>"). Thread-safe. */
ruda_status_t ruda__toml_parse(const char *text, size_t len,
                               const char *file_name,
                               ruda__toml_value_t *out_root);

void ruda__toml_free(ruda__toml_value_t *value);

/* The entry named `key` in `table`; NULL if absent or `table` is not one. */
const ruda__toml_entry_t *ruda__toml_find(const ruda__toml_value_t *table,
                                          const char *key);

#endif /* RUDA_BASE_TOML_H */
