/* ruda/config.h: runtime configuration (ruda.toml and RUDA_* variables).
 *
 * The configuration is a plain value struct: no pointers, copy it freely.
 * ruda reads it once per process (ruda_config_get()): the first `ruda.toml`
 * found walking from the current directory up to the root (or the file
 * named by RUDA_CONFIG), then RUDA_* environment overrides. Every option,
 * its default and its variable are listed in docs/configuration.md.
 *
 * Example ruda.toml:
 *
 *   [compilation]
 *   logger = { level = "basic", stderr = true }
 *   cache = "global"
 *   check_mode = "validate"
 *
 *   [streaming]
 *   max_streams = 16
 *
 *   [memory.logger]
 *   level = "full"
 *   file = "logs/memory.log"
 *   append = false
 */
#ifndef RUDA_CONFIG_H
#define RUDA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* Longest path (including the terminator) a configuration can hold. */
#define RUDA_CONFIG_PATH_MAX 1024

/* Log levels, ordered: a message of level L is written when the channel's
 * level is >= L. Profiling accepts all five; the other channels accept
 * disabled, basic and full. */
typedef enum ruda_log_level {
  RUDA_LOG_LEVEL_DISABLED = 0,
  RUDA_LOG_LEVEL_MINIMAL = 1, /* profiling: execution names only */
  RUDA_LOG_LEVEL_BASIC = 2,
  RUDA_LOG_LEVEL_MEDIUM = 3,  /* profiling only */
  RUDA_LOG_LEVEL_FULL = 4,
} ruda_log_level_t;

/* Log channels: the subsystems that log, each with its own level and
 * sinks. */
typedef enum ruda_log_channel {
  RUDA_LOG_CHANNEL_COMPILATION = 0,
  RUDA_LOG_CHANNEL_MEMORY = 1,
  RUDA_LOG_CHANNEL_STREAMING = 2,
  RUDA_LOG_CHANNEL_PROFILING = 3,
  RUDA_LOG_CHANNEL_AUTOTUNE = 4, /* one JSON line per tuning decision */
  RUDA_LOG_CHANNEL_COUNT_ = 5
} ruda_log_channel_t;

/* One channel's logger: its level and where lines go. A logger with a
 * level but no sink writes to stderr. */
typedef struct ruda_logger_config {
  ruda_log_level_t level;         /* default: disabled */
  char file[RUDA_CONFIG_PATH_MAX]; /* "" = no file (default) */
  bool append;                    /* default: true; false truncates */
  bool to_stdout;                 /* TOML `stdout`, default false */
  bool to_stderr;                 /* TOML `stderr`, default false */
} ruda_logger_config_t;

/* Where compiled kernels are cached on disk. */
typedef enum ruda_cache_location {
  RUDA_CACHE_LOCATION_NONE = 0, /* no disk cache ("none") */
  RUDA_CACHE_LOCATION_LOCAL,    /* the current directory */
  RUDA_CACHE_LOCATION_TARGET,   /* <dir of ruda.toml>/target, else the user cache dir */
  RUDA_CACHE_LOCATION_GLOBAL,   /* the user config dir ($XDG_CONFIG_HOME or ~/.config)/ruda */
  RUDA_CACHE_LOCATION_FILE,     /* `file` */
  RUDA_CACHE_LOCATION_USER,     /* the user cache dir ($XDG_CACHE_HOME or ~/.cache)/ruda (default) */
} ruda_cache_location_t;

typedef struct ruda_cache_config {
  ruda_cache_location_t location;
  char file[RUDA_CONFIG_PATH_MAX]; /* RUDA_CACHE_LOCATION_FILE only */
} ruda_cache_config_t;

typedef enum ruda_stream_priority {
  RUDA_STREAM_PRIORITY_DEFAULT = 0,
  RUDA_STREAM_PRIORITY_LOW = 1,
  RUDA_STREAM_PRIORITY_HIGH = 2,
} ruda_stream_priority_t;

typedef enum ruda_persistent_memory {
  RUDA_PERSISTENT_MEMORY_ENABLED = 0, /* default */
  RUDA_PERSISTENT_MEMORY_DISABLED = 1,
  RUDA_PERSISTENT_MEMORY_ENFORCED = 2,
} ruda_persistent_memory_t;

/* compilation.fp_contract: whether kernel compilers may contract a*b+c into
 * one fused multiply-add (one rounding instead of two). */
typedef enum ruda_fp_contract {
  RUDA_FP_CONTRACT_FAST = 0, /* default: each compiler contracts as it usually
                                does (NVRTC --fmad=true, OpenCL FP_CONTRACT ON,
                                -ffp-contract=fast); results may differ
                                between backends in the last bits */
  RUDA_FP_CONTRACT_OFF = 1,  /* no contraction anywhere (--fmad=false, FP_CONTRACT
                                OFF, -ffp-contract=off): the same kernel gives the
                                same bits on every backend; FMA-bound kernels
                                run slower */
} ruda_fp_contract_t;

typedef struct ruda_profiling_config {
  ruda_logger_config_t logger;
} ruda_profiling_config_t;

typedef struct ruda_compilation_config {
  ruda_logger_config_t logger;
  ruda_cache_config_t cache;
  ruda_bounds_check_mode_t check_mode; /* default: RUDA_BOUNDS_AUTO */
  ruda_fp_contract_t fp_contract;      /* default: RUDA_FP_CONTRACT_FAST */
  /* The C compiler that builds portable kernel text for cpu:N at run time
   * (docs/cpu.md): a name looked up on PATH or a path; "" = "cc". */
  char cpu_compiler[RUDA_CONFIG_PATH_MAX];
  /* Its flags, split on blanks (never read by a shell); default
   * "-O3 -march=native". */
  char cpu_flags[RUDA_CONFIG_PATH_MAX];
} ruda_compilation_config_t;

typedef struct ruda_streaming_config {
  ruda_logger_config_t logger;
  uint32_t max_streams;            /* 1..255, default 128 */
  ruda_stream_priority_t priority; /* default: default */
} ruda_streaming_config_t;

typedef struct ruda_memory_config {
  ruda_logger_config_t logger;
  ruda_persistent_memory_t persistent_memory; /* default: enabled */
} ruda_memory_config_t;

/* ruda_cpu_config_t.spin: chosen from the core count (20000 polls on more
 * than 2 cores, else 0). */
#define RUDA_CPU_SPIN_AUTO UINT32_MAX

typedef struct ruda_cpu_config {
  uint32_t threads;      /* worker threads, 0..65535; 0 (default) = one per online CPU */
  uint32_t devices;      /* CPU devices exposed, 1..64; default 1 */
  uint32_t spin;         /* polls an idle pool thread makes before sleeping,
                            0..100000000, or RUDA_CPU_SPIN_AUTO (default) */
  uint64_t memory_limit; /* bytes the host storage of one stream may hold;
                            0 (default) = no limit */
} ruda_cpu_config_t;

typedef struct ruda_trace_config {
  char file[RUDA_CONFIG_PATH_MAX]; /* Chrome trace JSON output; "" = off */
} ruda_trace_config_t;

/* How hard the autotuner (ruda/tune.h) works for each new key. */
typedef enum ruda_autotune_level {
  RUDA_AUTOTUNE_OFF = 0,      /* never tune: every call runs the default candidate */
  RUDA_AUTOTUNE_MINIMAL = 1,  /* 1 warm-up, 3 repetitions, coarser buckets */
  RUDA_AUTOTUNE_BALANCED = 2, /* 1 warm-up, 5 repetitions (default) */
  RUDA_AUTOTUNE_FULL = 3,     /* 2 warm-ups, 10 repetitions, no early drop */
} ruda_autotune_level_t;

typedef struct ruda_autotune_config {
  ruda_logger_config_t logger;     /* the autotune channel */
  ruda_autotune_level_t level;     /* default: balanced */
  uint32_t budget_ms;              /* tuning time per key, 1..3600000; default 1000 */
  bool cache;                      /* keep results in the tune cache on disk; default true */
  char pin[RUDA_CONFIG_PATH_MAX];  /* "op=candidate,op=candidate"; "" (default): none */
} ruda_autotune_config_t;

typedef struct ruda_config {
  ruda_profiling_config_t profiling;
  ruda_compilation_config_t compilation;
  ruda_streaming_config_t streaming;
  ruda_memory_config_t memory;
  ruda_cpu_config_t cpu;
  ruda_trace_config_t trace;
  ruda_autotune_config_t autotune;
  /* The file the configuration was read from; "" when none was. */
  char source[RUDA_CONFIG_PATH_MAX];
} ruda_config_t;

/* Fills `out` with the defaults. Thread-safe; cannot fail. */
void ruda_config_default(ruda_config_t *out);

/* Parses ruda.toml text (`len` bytes, no terminator needed) over the
 * defaults into `out`; no environment overrides. `file_name` names the
 * file in errors and is stored in out->source (NULL: "<string>", and
 * source stays ""). Unknown sections and keys, wrong types and values out
 * of range are errors.
 * Errors: RUDA_ERR_CONFIG with file, line and dotted key
 * ("streaming.max_streams") set; `out` then holds the defaults.
 * Thread-safe. */
ruda_status_t ruda_config_parse(const char *text, size_t len,
                                const char *file_name, ruda_config_t *out);

/* Reads and parses the file at `path` (no environment overrides).
 * Errors: RUDA_ERR_CONFIG (unreadable file, or as ruda_config_parse);
 * `out` then holds the defaults. Thread-safe. */
ruda_status_t ruda_config_load_file(const char *path, ruda_config_t *out);

/* Applies the RUDA_* environment overrides to `cfg` (see
 * docs/configuration.md). Errors: RUDA_ERR_CONFIG naming the variable as
 * the key; the variables before it are applied, those after it are not.
 * Not thread-safe against concurrent setenv(). */
ruda_status_t ruda_config_apply_env(ruda_config_t *cfg);

/* The full load: RUDA_CONFIG's file if set, else the first ruda.toml from
 * the current directory upwards (defaults if none), then the environment.
 * Errors: as ruda_config_load_file and ruda_config_apply_env; `out` then
 * holds what could be loaded (at least the defaults). Thread-safe against
 * other ruda calls. */
ruda_status_t ruda_config_load(ruda_config_t *out);

/* The process-wide configuration, loaded by ruda_config_load() on the first
 * call (or the one given to ruda_config_set()). Never NULL. A bad file or
 * variable is reported once on stderr and the defaults (plus the valid
 * variables) are used. The pointer stays valid, unchanged, for the life of
 * the process. Thread-safe; cheap after the first call. */
const ruda_config_t *ruda_config_get(void);

/* Installs `cfg` (copied) as the process-wide configuration instead of
 * loading one; environment overrides are not applied to it. Every field is
 * checked by the same rules as the file and the environment (ranges, enum
 * values, terminated path strings).
 * Errors: RUDA_ERR_CONFIG naming the dotted key ("streaming.max_streams")
 * of the first field that breaks a rule (nothing is installed then);
 * RUDA_ERR_INVALID_ARGUMENT when `cfg` is NULL, when ruda_config_get() has
 * already run, or when a configuration was already set. Thread-safe. */
ruda_status_t ruda_config_set(const ruda_config_t *cfg);

/* The directory of the compiled-kernel disk cache for `cfg` (written into
 * `buf`, snprintf-style, returns the length needed), or 0 with buf = ""
 * when the disk cache is off. Does not create the directory. Thread-safe. */
size_t ruda_config_cache_dir(const ruda_config_t *cfg, char *buf, size_t cap);

/* Names used in ruda.toml, for messages: "basic", "validate", "high"... */
const char *ruda_log_level_name(ruda_log_level_t level);
const char *ruda_log_channel_name(ruda_log_channel_t channel);

/* The logger of `channel` inside `cfg`; NULL for an invalid channel. */
const ruda_logger_config_t *ruda_config_logger(const ruda_config_t *cfg,
                                               ruda_log_channel_t channel);

RUDA_END_DECLS

#endif /* RUDA_CONFIG_H */
