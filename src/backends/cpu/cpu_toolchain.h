/* The C compiler and the machine that run-time compiled CPU kernels are
 * built for (cpu_compile.c): found once per process, with the private
 * cache directory, and the one way the backend runs a program (posix_spawn,
 * no shell, output captured).
 */
#ifndef RUDA_BACKENDS_CPU_TOOLCHAIN_H
#define RUDA_BACKENDS_CPU_TOOLCHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/log_internal.h"
#include "ruda/config.h"
#include "types/hasher.h"

typedef struct ruda__cpu_toolchain {
  bool ready;
  char path[RUDA_CONFIG_PATH_MAX]; /* "" when none was found */
  char looked_for[2 * RUDA_CONFIG_PATH_MAX];
  char version[256];               /* first line of `cc --version` */
  char flags[RUDA_CONFIG_PATH_MAX + 32]; /* the fp_contract option, then cpu_flags */
  ruda_hash128_t cpu_flags;        /* of /proc/cpuinfo's flags line */
  ruda__hasher_t key_prefix;       /* the disk key after its machine part */
  char dir[RUDA_CONFIG_PATH_MAX + 8]; /* {cache root}/cpu; "" : no disk cache */
} ruda__cpu_toolchain_t;

/* Fills `t` (path, looked_for, version, flags, cpu_flags, dir; not ready
 * nor key_prefix, which the compiler's cache sets) from the configuration
 * and the machine; `seed` seeds the CPU flags' hash. Not thread-safe: the
 * caller serialises it. */
void ruda__cpu_toolchain_find(ruda__cpu_toolchain_t *t, uint64_t seed);

/* Runs argv (argv[0] a path) with stdout and stderr into *out (ruda__malloc'ed,
 * NUL-terminated, at most 1 MiB kept, NULL when out of memory), standard
 * input from /dev/null. Returns the exit status, 128 + the signal, or -1
 * (errno set) when it could not run. Thread-safe. */
int ruda__cpu_run_capture(char *const *argv, char **out);

/* A warning line on stderr, "ruda[cpu] warning: ...". Thread-safe. */
#define ruda__cpu_warn(...) ruda__warn("cpu", __VA_ARGS__)

#endif /* RUDA_BACKENDS_CPU_TOOLCHAIN_H */
