/* ruda-kernel-embed: the build-time kernel embed step (see
 * src/base/kernel_text.h and docs/kernels.md). Built before the library, from
 * plain C; the CMake function ruda_add_kernels() runs it.
 *
 *   ruda-kernel-embed [-I DIR]... [-MF DEPFILE] -o OUT.c KERNEL_FILE
 *   ruda-kernel-embed --prelude SYMBOL -o OUT.c FILE...
 *
 * Exit status 0 on success, 1 on an error (message on stderr, no output
 * file left behind), 2 on a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_text.h"

static int usage(void) {
  fprintf(stderr,
          "usage: ruda-kernel-embed [-I DIR]... [-MF DEPFILE] -o OUT.c KERNEL_FILE\n"
          "       ruda-kernel-embed --prelude SYMBOL -o OUT.c FILE...\n");
  return 2;
}

/* "cannot write OUT: <the OS's reason>" (errno `e`; 0 when the reason is
 * not the OS's, e.g. a failed formatting step that already said why). */
static void cannot_write(const char *out, const char *how, int e) {
  if (e)
    fprintf(stderr, "ruda-kernel-embed: cannot write %s: %s%s\n", out, how, strerror(e));
  else
    fprintf(stderr, "ruda-kernel-embed: cannot write %s\n", out);
}

/* Writes through a temporary file renamed into place, so a failed step
 * leaves no half-written output for the build to trust. NULL (the reason
 * printed) when the temporary file cannot be created. */
static FILE *open_tmp(const char *out, char *tmp, size_t cap) {
  snprintf(tmp, cap, "%s.tmp.%ld", out, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) cannot_write(out, "", errno);
  return f;
}

static int finish(FILE *f, bool ok, const char *tmp, const char *out) {
  int e = 0;
  const char *how = "";
  if (ferror(f)) { /* a write failed: errno still says why */
    ok = false;
    e = errno ? errno : EIO;
  }
  if (fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && rename(tmp, out) != 0) {
    ok = false;
    e = errno;
    how = "renaming the temporary file: ";
  }
  if (!ok) {
    cannot_write(out, how, e);
    remove(tmp);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *out = NULL, *depfile = NULL, *prelude = NULL;
  const char **dirs = calloc((size_t)argc, sizeof *dirs);
  const char **files = calloc((size_t)argc, sizeof *files);
  size_t nd = 0, nf = 0;
  if (!dirs || !files) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(a, "-MF") == 0 && i + 1 < argc) depfile = argv[++i];
    else if (strcmp(a, "--prelude") == 0 && i + 1 < argc) prelude = argv[++i];
    else if (strcmp(a, "-I") == 0 && i + 1 < argc) dirs[nd++] = argv[++i];
    else if (strncmp(a, "-I", 2) == 0 && a[2]) dirs[nd++] = a + 2;
    else if (a[0] == '-') return usage();
    else files[nf++] = a;
  }
  if (!out || nf == 0 || (!prelude && nf != 1)) return usage();
  char err[1024], tmp[4096];
  int rc;
  if (prelude) {
    FILE *f = open_tmp(out, tmp, sizeof tmp);
    if (!f) return 1;
    bool ok = ruda_tools_prelude_write_c(prelude, files, nf, f, err, sizeof err);
    if (!ok) fprintf(stderr, "ruda-kernel-embed: %s\n", err);
    rc = finish(f, ok, tmp, out);
  } else {
    ruda_tools_kernel_text_t t;
    if (!ruda_tools_kernel_text_load(files[0], dirs, nd, &t, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      free(dirs);
      free(files);
      return 1;
    }
    FILE *f = open_tmp(out, tmp, sizeof tmp);
    rc = 1;
    if (f) rc = finish(f, ruda_tools_kernel_text_write_c(&t, f), tmp, out);
    if (rc == 0 && depfile) {
      char dtmp[4096];
      FILE *d = open_tmp(depfile, dtmp, sizeof dtmp);
      rc = d ? finish(d, ruda_tools_kernel_text_write_depfile(&t, out, d), dtmp, depfile) : 1;
    }
    ruda_tools_kernel_text_free(&t);
  }
  free(dirs);
  free(files);
  return rc;
}
