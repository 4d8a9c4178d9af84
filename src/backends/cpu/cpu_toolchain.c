/* The C compiler and the machine, found once per process (cpu_toolchain.h). */
#include "backends/cpu/cpu_toolchain.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "server/binary_cache.h"
#include "server/device_settings.h"

extern char **environ;

static bool find_on_path(const char *name, char *out, size_t cap) {
  if (strchr(name, '/')) {
    if (access(name, X_OK) != 0) return false;
    return (size_t)snprintf(out, cap, "%s", name) < cap;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    if (n > 0 && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, p, name) < cap &&
        access(out, X_OK) == 0) {
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
    }
    p += n + (colon ? 1 : 0);
  }
  return false;
}

int ruda__cpu_run_capture(char *const *argv, char **out) {
  *out = NULL;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    errno = rc;
    return -1;
  }
  size_t cap = 4096, len = 0;
  char *buf = ruda__malloc(cap);
  for (;;) {
    char chunk[4096];
    ssize_t r = read(fds[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (!buf || len + (size_t)r + 1 > (1u << 20)) continue; /* drain, keep the start */
    if (len + (size_t)r + 1 > cap) {
      size_t ncap = cap * 2 > len + (size_t)r + 1 ? cap * 2 : len + (size_t)r + 1;
      char *nb = ruda__realloc(buf, ncap);
      if (!nb) continue;
      buf = nb;
      cap = ncap;
    }
    memcpy(buf + len, chunk, (size_t)r);
    len += (size_t)r;
  }
  close(fds[0]);
  if (buf) buf[len] = '\0';
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static ruda_hash128_t cpu_flags_hash(uint64_t seed) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, seed);
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (f) {
    char line[8192];
    while (fgets(line, sizeof line, f)) {
      /* x86 "flags", arm64 "Features", and the model, once each. */
      if (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0 ||
          strncmp(line, "model name", 10) == 0 || strncmp(line, "CPU part", 8) == 0) {
        ruda__hasher_bytes(&h, line, strlen(line));
      }
      if (line[0] == '\n') break; /* the first processor is enough */
    }
    fclose(f);
  }
  return ruda__hasher_final(&h);
}

void ruda__cpu_toolchain_find(ruda__cpu_toolchain_t *t, uint64_t seed) {
  memset(t, 0, sizeof *t);
  const ruda_config_t *cfg = ruda_config_get();
  const char *cc = cfg->compilation.cpu_compiler[0] ? cfg->compilation.cpu_compiler : "cc";
  /* compilation.fp_contract first, so that -ffp-contract in the user's
   * cpu_flags still wins; part of the cache key with the flags. */
  snprintf(t->flags, sizeof t->flags, "%s %s",
           ruda__fp_contract_cc_option(ruda__device_settings()->fp_contract),
           cfg->compilation.cpu_flags);
  if (strchr(cc, '/')) {
    snprintf(t->looked_for, sizeof t->looked_for, "'%s'", cc);
  } else {
    const char *path = getenv("PATH");
    snprintf(t->looked_for, sizeof t->looked_for, "'%s' on PATH (%.900s)", cc,
             path && *path ? path : "unset");
  }
  if (find_on_path(cc, t->path, sizeof t->path)) {
    char *argv[] = {t->path, (char *)"--version", NULL};
    char *out = NULL;
    int rc = ruda__cpu_run_capture(argv, &out);
    if (rc == 0 && out) {
      size_t n = strcspn(out, "\n");
      snprintf(t->version, sizeof t->version, "%.*s", (int)(n < 255 ? n : 255), out);
    }
    ruda__free(out);
    if (rc != 0) t->path[0] = '\0';
  } else {
    t->path[0] = '\0';
  }
  t->cpu_flags = cpu_flags_hash(seed);
  char why[RUDA_CONFIG_PATH_MAX + 256];
  if (!ruda__binary_cache_dir(ruda__device_settings()->cache_dir, "cpu", t->dir, sizeof t->dir,
                              why, sizeof why) &&
      why[0])
    ruda__cpu_warn("%s", why);
}
