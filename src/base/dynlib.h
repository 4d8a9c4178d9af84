/* Run-time libraries: every vendor library ruda uses (the CUDA driver,
 * NVRTC, NCCL, the OpenCL ICD loader) is dlopen()ed on first use through
 * this one loader, so that one binary runs with or without each of them:
 * a missing library or symbol is an error status that names every file
 * name tried and why each failed (dlerror()), never a link failure.
 *
 *   static ruda_status_t ready(const ruda__dynlib_t *lib, void *table) {
 *     ...  (what the library needs after its symbols: an init call)
 *   }
 *   static const ruda__dynlib_spec_t spec = {RUDA_ERR_UNAVAILABLE, "X is unavailable: ",
 *       "the X library", "", " (too old?)", "RUDA_X_LIBRARY", defaults, 2, syms, nsyms,
 *       ready};
 *   static ruda__dynlib_once_t once = RUDA__DYNLIB_ONCE_INIT;
 *   static x_api_t table;   (its first member a ruda__dynlib_head_t)
 *   ruda_status_t s = ruda__dynlib_once_spec(&once, &spec, NULL, &table, sizeof table);
 *
 * A table and its symbol table come from the backend's X-macro list of
 * (name, required) rows: RUDA__DYNLIB_FIELD declares a row's field of the
 * table, and RUDA__DYNLIB_SYMBOL(table type, name, required) its entry of
 * the symbol table, through a one-line macro that names the type:
 *
 *   typedef struct x_api { ruda__dynlib_head_t head; X_SYMBOLS(RUDA__DYNLIB_FIELD) } x_api_t;
 *   #define X_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(x_api_t, fn, required)
 *   static const ruda__dynlib_symbol_t syms[] = {X_SYMBOLS(X_SYMBOL)};
 */
#ifndef RUDA_BASE_DYNLIB_H
#define RUDA_BASE_DYNLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "ruda/status.h"

typedef struct ruda__dynlib {
  void *handle;     /* NULL: not loaded */
  char name[512];   /* the candidate that loaded */
  char tried[2048]; /* "name (why), name (why)": each candidate that failed */
} ruda__dynlib_t;

/* The candidate names to load: `override` alone when it is a non-empty
 * string (a test's), else the value of the environment variable `env`
 * alone when it is set and not empty (a user's choice of file), else
 * `defaults[0..n)`. *out points at `single` (one slot the caller owns)
 * or at `defaults`. Returns how many names there are. */
size_t ruda__dynlib_candidates(const char *override, const char *env,
                               const char *const *defaults, size_t n, const char **single,
                               const char *const **out);

/* dlopen()s (RTLD_NOW | RTLD_LOCAL) the first of `names` that loads
 * (NULL and empty names are skipped). True with lib->handle and lib->name
 * set; false with lib->tried listing every name and its dlerror() text
 * (cut short to fit). Thread-safe (dlerror is per thread). */
bool ruda__dynlib_open(ruda__dynlib_t *lib, const char *const *names, size_t n);

/* One entry of a symbol table: the symbol's name, where its address goes
 * in the table (offset and size of a function-pointer field), and whether
 * the library is unusable without it. */
typedef struct ruda__dynlib_symbol {
  const char *name;
  size_t offset;
  size_t size;
  bool required;
} ruda__dynlib_symbol_t;

/* The name is stringified after expansion: a vendor header may define
 * an entry point as a macro for its versioned symbol (cuda.h:
 * cuDeviceTotalMem is cuDeviceTotalMem_v2), which is what dlsym needs. */
#define RUDA__DYNLIB_STR_(x) #x
#define RUDA__DYNLIB_STR(x) RUDA__DYNLIB_STR_(x)
#define RUDA__DYNLIB_SYMBOL(table, fn, required)                                      \
  {RUDA__DYNLIB_STR(fn), offsetof(table, fn), sizeof(((table *)0)->fn), (required)},
/* A table's field for symbol `fn`: a pointer with the prototype the vendor
 * header declares for it. */
#define RUDA__DYNLIB_FIELD(fn, required) __typeof__(&fn) fn;

/* Looks up every symbol of `syms` in lib and stores its address in
 * `table` (a found optional symbol too; a missing optional one leaves its
 * field as it is). Returns NULL when every required symbol was found,
 * else the name of the first missing one. */
const char *ruda__dynlib_resolve(const ruda__dynlib_t *lib, const ruda__dynlib_symbol_t *syms,
                                 size_t n, void *table);

/* ruda__dynlib_open, then ruda__dynlib_resolve into `table`. A missing
 * required symbol closes the library again and names it in *missing. */
typedef enum ruda__dynlib_result {
  RUDA__DYNLIB_LOADED,
  RUDA__DYNLIB_NOT_FOUND,  /* no candidate loaded: lib->tried says why */
  RUDA__DYNLIB_NO_SYMBOL,  /* lib->name lacks *missing */
} ruda__dynlib_result_t;
ruda__dynlib_result_t ruda__dynlib_load(ruda__dynlib_t *lib, const char *const *names, size_t n,
                                        const ruda__dynlib_symbol_t *syms, size_t nsyms,
                                        void *table, const char **missing);

/* The first member of every table a spec fills: the library's handle and
 * the name it loaded from (static storage: the ruda__dynlib_t's). */
typedef struct ruda__dynlib_head {
  void *lib;
  const char *lib_name;
} ruda__dynlib_head_t;

/* What a backend loads: the candidates, the symbol table, what the library
 * needs once its symbols are found, and the words of its errors, which
 * read
 *   "<prefix><what> could not be loaded (looked for <tried>)<hint>"
 *   "<prefix><name> has no symbol <symbol><symbol_hint>"
 * both of error kind `kind`. */
typedef struct ruda__dynlib_spec {
  ruda_error_kind_t kind;
  const char *prefix; /* "CUDA is unavailable: " */
  const char *what;   /* "the CUDA driver library" */
  const char *hint;   /* after the names tried; "" for none */
  const char *symbol_hint; /* after a missing symbol; "" for none */
  const char *env;    /* the variable that names another file (candidates) */
  const char *const *defaults;
  size_t num_defaults;
  const ruda__dynlib_symbol_t *symbols;
  size_t num_symbols;
  /* Called with the table filled (an init call, a version query); an
   * error it returns is the load's, and closes the library again. NULL:
   * nothing to do. */
  ruda_status_t (*ready)(const ruda__dynlib_t *lib, void *table);
} ruda__dynlib_spec_t;

/* Loads spec's library into `table` (table_size bytes, at most
 * RUDA__DYNLIB_TABLE_MAX; its first member a ruda__dynlib_head_t):
 * ruda__dynlib_candidates (with `override`), ruda__dynlib_load of spec's
 * symbols into a zeroed scratch table, its head, then spec->ready. Only a
 * load that succeeds is copied into `table`, so a table that servers still
 * point at is never left half written. NULL when loaded, else the error
 * the spec words (or ready's). */
#define RUDA__DYNLIB_TABLE_MAX 4096
ruda_status_t ruda__dynlib_load_spec(ruda__dynlib_t *lib, const ruda__dynlib_spec_t *spec,
                                     const char *override, void *table, size_t table_size);

/* dlclose()s a loaded library (a load that is given up). */
void ruda__dynlib_close(ruda__dynlib_t *lib);

/* A load done once per process, its result kept: the first call runs
 * load() under the lock; every call returns a clone of the kept error
 * (the caller frees it) or NULL. Forgetting (a test's) makes the next call
 * load again; what was loaded stays mapped, since tables may still point
 * into it. */
typedef struct ruda__dynlib_once {
  pthread_mutex_t lock;
  bool tried;
  ruda_status_t error; /* kept; callers get clones */
  ruda__dynlib_t lib;  /* what load() loaded */
} ruda__dynlib_once_t;

#define RUDA__DYNLIB_ONCE_INIT {PTHREAD_MUTEX_INITIALIZER, false, NULL, {NULL, "", ""}}

/* load(&once->lib) fills the caller's table from the library it loads
 * there. */
ruda_status_t ruda__dynlib_once(ruda__dynlib_once_t *once, ruda_status_t (*load)(ruda__dynlib_t *lib));
/* ruda__dynlib_load_spec(&once->lib, spec, override, table, table_size)
 * as the once's load (ruda__dynlib_once's rules). */
ruda_status_t ruda__dynlib_once_spec(ruda__dynlib_once_t *once, const ruda__dynlib_spec_t *spec,
                                     const char *override, void *table, size_t table_size);
/* Whether a load was tried and succeeded (no load is started). */
bool ruda__dynlib_once_loaded(ruda__dynlib_once_t *once);
/* Forgets the result; `locked` runs under the lock first when not NULL
 * (to change what the next load will try). */
void ruda__dynlib_once_forget(ruda__dynlib_once_t *once, void (*locked)(void *ctx), void *ctx);

#endif
