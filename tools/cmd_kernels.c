/* `ruda kernels check|embed`: portable kernels (ruda/kernel_dialect.h)
 * without a GPU. `check` compiles every kernel file for CUDA with NVRTC
 * (for a named architecture) and for OpenCL with the installed OpenCL
 * driver (PoCL in CI), through the same preludes the runtime uses, and
 * reports each compiler message at the user's file and line, with the
 * kernel it falls in. `embed` is the build step (what ruda_add_kernels
 * runs) for other build systems. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "kernel_text.h"
#include "ruda_tools.h"
#include "ruda/kernel.h"
#include "tools_common.h"

void ruda_cmd_kernels_help(FILE *f) {
  fprintf(f,
          "usage: ruda kernels check [--arch sm_XY] [--cuda-only|--opencl-only] [--cpu]\n"
          "                          [--opencl-device N] [--skip-unavailable] [-I DIR]...\n"
          "                          [-D NAME[=VALUE]]... [-O.. -f.. -m..]... FILE...\n"
          "       ruda kernels embed [-I DIR]... [-MF DEPFILE] -o OUT.c FILE\n"
          "       ruda kernels embed --text [-I DIR]... FILE\n"
          "\n"
          "Portable kernels (ruda/kernel_dialect.h, docs/kernels.md), without a GPU.\n"
          "\n"
          "check   compiles every kernel file for CUDA with NVRTC for --arch (default\n"
          "        sm_90) and for OpenCL on --opencl-device (default 0; PoCL in CI),\n"
          "        through the preludes the runtime uses (with --cpu, also with the\n"
          "        CPU backend's run-time C compiler). Compiler messages point at\n"
          "        FILE:LINE and name the kernel they fall in.\n"
          "embed   writes the C file that links a kernel file's text into a program\n"
          "        (what the CMake function ruda_add_kernels runs); --text prints the\n"
          "        text itself.\n"
          "\n"
          "-I DIR  where the kernel files' own #include \"...\" headers are (after the\n"
          "        including file's folder).\n"
          "-D NAME[=VALUE]  a compile-time constant for every compiler, as the options\n"
          "        of ruda_kernel_from_file give it; -O, -f and -m flags are the CPU\n"
          "        compiler's: accepted, and not given to NVRTC or OpenCL (the --cpu\n"
          "        check uses compilation.cpu_flags).\n"
          "--skip-unavailable  a compiler that is not installed is reported and\n"
          "        skipped (exit 77 when none is); without it that is exit 3.\n"
          "\n"
          "exit codes: 0 every kernel compiled, 1 a kernel or file failed, 2 usage,\n"
          "3 a compiler is unavailable.\n");
}

/* Appends " [kernel 'K']" to each message line that points into the kernel
 * file at a line inside K (NVRTC writes "FILE(LINE)", clang "FILE:LINE:"). */
static void print_log(const ruda_tools_kernel_text_t *t, const char *log) {
  size_t plen = strlen(t->path);
  const char *p = log;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    const ruda_tools_kernel_decl_t *k = NULL;
    const char *at = NULL;
    for (const char *q = p; q + plen < p + len && !at; q++)
      if (strncmp(q, t->path, plen) == 0 && (q[plen] == '(' || q[plen] == ':')) at = q + plen + 1;
    if (at) {
      unsigned long line = strtoul(at, NULL, 10);
      if (line > 0) k = ruda_tools_kernel_text_kernel_at(t, (unsigned)line);
    }
    if (len > 0) {
      if (k) printf("    %.*s  [kernel '%s']\n", (int)len, p, k->name);
      else printf("    %.*s\n", (int)len, p);
    }
    p += len + (nl ? 1 : 0);
  }
}

/* After a failed build: identifiers of the kernel file that are keywords
 * for one of the compilers (the vendor's message rarely says so); the
 * library's run-time compile errors carry the same lines. */
static void print_keyword_hints(const ruda_tools_kernel_text_t *t) {
  size_t n = ruda_kernel_text_hints(t->text, t->len, NULL, 0);
  char *hints = n ? malloc(n + 1) : NULL;
  if (!hints) return;
  ruda_kernel_text_hints(t->text, t->len, hints, n + 1);
  for (const char *p = hints; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    printf("    %.*s\n", (int)len, p);
    p += len + (nl ? 1 : 0);
  }
  free(hints);
}

static void print_kernel_list(const ruda_tools_kernel_text_t *t) {
  printf(" (%zu kernel%s", t->num_kernels, t->num_kernels == 1 ? "" : "s");
  for (size_t i = 0; i < t->num_kernels; i++) printf("%s%s", i ? ", " : ": ", t->kernels[i].name);
  printf(")\n");
}

typedef struct check_opts {
  unsigned cc;
  bool cuda, opencl, skip_unavailable, cpu;
  unsigned opencl_device;
} check_opts_t;

/* Compiles through ruda_kernel_compile_portable for `device_type` (CUDA:
 * NVRTC for sm_`cc`; CPU: the run-time C compiler), reporting as `label`.
 * 0 ok, 1 failed, 3 unavailable (message printed). */
static int check_ahead(const ruda_tools_kernel_text_t *t, const char *shown,
                       uint16_t device_type, unsigned cc, const char *label) {
  const char *base = strrchr(t->path, '/');
  base = base ? base + 1 : t->path;
  ruda_status_t s =
      ruda_kernel_compile_portable(device_type, cc, base, t->text, t->len, t->path, NULL, NULL);
  if (!s) {
    printf("%s: %s: ok", shown, label);
    print_kernel_list(t);
    return 0;
  }
  int code = ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE ? 3 : 1;
  if (code == 3) {
    char *text = ruda_status_to_string(s);
    printf("%s: %s: unavailable: %s\n", shown, label, text ? text : "?");
    free(text);
  } else {
    printf("%s: %s: FAILED\n", shown, label);
    ruda_status_t cause = ruda_status_find(s, RUDA_ERR_COMPILATION_GENERIC);
    const char *reason = ruda_status_reason(cause ? cause : s);
    /* The reason holds the user's messages and the hints already. */
    print_log(t, reason ? reason : "");
  }
  ruda_status_free(s);
  return code;
}

static int check_opencl(ruda_tools_opencl_t *o, const ruda_tools_kernel_text_t *t,
                        const char *shown) {
  char *src = NULL;
  size_t len = 0;
  ruda_status_t s = ruda_kernel_portable_source(RUDA_DEVICE_TYPE_OPENCL, t->text, t->len, &src, &len);
  if (s) {
    ruda_tools_print_status("kernels check", s);
    ruda_status_free(s);
    return 1;
  }
  char *log = NULL;
  bool ok = ruda_tools_opencl_build(o, src, len, &log);
  free(src);
  if (ok) {
    printf("%s: %s: ok", shown, ruda_tools_opencl_name(o));
    print_kernel_list(t);
  } else {
    printf("%s: %s: FAILED\n", shown, ruda_tools_opencl_name(o));
    print_log(t, log ? log : "(no build log)");
    print_keyword_hints(t);
  }
  free(log);
  return ok ? 0 : 1;
}

static int cmd_check(int argc, char **argv) {
  check_opts_t o = {90, true, true, false, 0, false};
  const ruda_tools_flag_t flags[] = {{"--cpu", &o.cpu, true},
                                     {"--cuda-only", &o.opencl, false},
                                     {"--opencl-only", &o.cuda, false},
                                     {"--skip-unavailable", &o.skip_unavailable, true}};
  const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  /* -D constants become #define lines in front of the text (which starts
   * with its own #line, so messages keep the file's lines): the same for
   * NVRTC and OpenCL, as -D options of ruda_kernel_from_file. */
  size_t defines_cap = 1;
  for (int i = 0; i < argc; i++) defines_cap += strlen(argv[i]) + 16;
  char *defines = calloc(defines_cap, 1);
  size_t nd = 0, nf = 0, defines_len = 0;
  int rc = RUDA_EXIT_USAGE;
  if (!dirs || !files || !defines) goto done;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--arch") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      char *end = NULL;
      unsigned long cc = strtoul(strncmp(v, "sm_", 3) == 0 ? v + 3 : v, &end, 10);
      if (!end || (*end && *end != 'a') || cc < 30 || cc > 200) {
        fprintf(stderr, "ruda kernels check: --arch wants sm_XY (sm_90), not '%s'\n", v);
        goto done;
      }
      o.cc = (unsigned)cc;
    } else if (ruda_tools_set_flag(a, flags, sizeof flags / sizeof flags[0])) {
      continue;
    } else if (strcmp(a, "--opencl-device") == 0 && i + 1 < argc) {
      o.opencl_device = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (strcmp(a, "-I") == 0 && i + 1 < argc) {
      dirs[nd++] = argv[++i];
    } else if (strncmp(a, "-I", 2) == 0 && a[2]) {
      dirs[nd++] = a + 2;
    } else if (strncmp(a, "-D", 2) == 0 && (a[2] || i + 1 < argc)) {
      const char *d = a[2] ? a + 2 : argv[++i];
      const char *eq = strchr(d, '=');
      size_t nlen = eq ? (size_t)(eq - d) : strlen(d);
      if (nlen == 0 || strpbrk(d, " \t\n")) {
        fprintf(stderr, "ruda kernels check: -D wants NAME[=VALUE] without blanks, not '%s'\n", d);
        goto done;
      }
      defines_len += (size_t)snprintf(defines + defines_len, defines_cap - defines_len,
                                      "#define %.*s %s\n", (int)nlen, d, eq ? eq + 1 : "1");
    } else if (a[0] == '-' && a[1] && strchr("Ofm", a[1]) && strncmp(a, "-fplugin", 8) != 0) {
      /* The CPU compiler's flags: nothing for NVRTC and OpenCL. */
    } else if (a[0] == '-') {
      fprintf(stderr, "ruda kernels check: unknown option '%s'\n", a);
      goto done;
    } else {
      files[nf++] = a;
    }
  }
  if (nf == 0 || (!o.cuda && !o.opencl)) {
    fprintf(stderr, "ruda kernels check: which files? (ruda kernels check --help)\n");
    goto done;
  }
  ruda_tools_opencl_t *cl = NULL;
  bool cuda_missing = false, opencl_missing = false, cpu_missing = false;
  if (o.opencl) {
    char why[512];
    cl = ruda_tools_opencl_open(o.opencl_device, why, sizeof why);
    if (!cl) {
      printf("opencl: unavailable: %s\n", why);
      opencl_missing = true;
    }
  }
  rc = RUDA_EXIT_OK;
  size_t compiled = 0;
  for (size_t f = 0; f < nf; f++) {
    ruda_tools_kernel_text_t t;
    char err[1024];
    if (!ruda_tools_kernel_text_load(files[f], dirs, nd, &t, err, sizeof err)) {
      printf("%s: FAILED: %s\n", files[f], err);
      rc = RUDA_EXIT_FAILURE;
      continue;
    }
    if (defines_len) {
      char *with = malloc(defines_len + t.len + 1);
      if (!with) {
        ruda_tools_kernel_text_free(&t);
        rc = RUDA_EXIT_FAILURE;
        break;
      }
      memcpy(with, defines, defines_len);
      memcpy(with + defines_len, t.text, t.len + 1);
      free(t.text);
      t.text = with;
      t.len += defines_len;
    }
    if (o.cpu && !cpu_missing) {
      int r = check_ahead(&t, files[f], RUDA_DEVICE_TYPE_CPU, o.cc, "cpu (run-time C compiler)");
      if (r == 3) cpu_missing = true;
      else if (r) rc = RUDA_EXIT_FAILURE;
      else compiled++;
    }
    if (o.cuda && !cuda_missing) {
      char label[32];
      snprintf(label, sizeof label, "cuda sm_%u", o.cc);
      int r = check_ahead(&t, files[f], RUDA_DEVICE_TYPE_CUDA, o.cc, label);
      if (r == 3) cuda_missing = true;
      else if (r) rc = RUDA_EXIT_FAILURE;
      else compiled++;
    }
    if (cl) {
      if (check_opencl(cl, &t, files[f])) rc = RUDA_EXIT_FAILURE;
      else compiled++;
    }
    ruda_tools_kernel_text_free(&t);
  }
  ruda_tools_opencl_close(cl);
  if (rc == RUDA_EXIT_OK && (cuda_missing || opencl_missing || cpu_missing)) {
    if (!o.skip_unavailable) rc = RUDA_EXIT_UNAVAILABLE;
    else if (compiled == 0) rc = 77;
  }
done:
  free(defines);
  free(dirs);
  free(files);
  return rc;
}

static int cmd_embed(int argc, char **argv) {
  const char *out = NULL, *depfile = NULL, *file = NULL;
  bool text_only = false;
  const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  size_t nd = 0;
  int rc = RUDA_EXIT_USAGE;
  if (!dirs) return RUDA_EXIT_FAILURE;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(a, "-MF") == 0 && i + 1 < argc) depfile = argv[++i];
    else if (strcmp(a, "--text") == 0) text_only = true;
    else if (strcmp(a, "-I") == 0 && i + 1 < argc) dirs[nd++] = argv[++i];
    else if (strncmp(a, "-I", 2) == 0 && a[2]) dirs[nd++] = a + 2;
    else if (a[0] != '-' && !file) file = a;
    else {
      fprintf(stderr, "ruda kernels embed: unknown or extra argument '%s'\n", a);
      goto done;
    }
  }
  if (!file || (!out && !text_only)) {
    fprintf(stderr, "ruda kernels embed: needs FILE and -o OUT.c (or --text)\n");
    goto done;
  }
  ruda_tools_kernel_text_t t;
  char err[1024];
  if (!ruda_tools_kernel_text_load(file, dirs, nd, &t, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    rc = RUDA_EXIT_FAILURE;
    goto done;
  }
  rc = RUDA_EXIT_OK;
  if (text_only) {
    fwrite(t.text, 1, t.len, stdout);
  } else {
    FILE *f = fopen(out, "w");
    if (!f || !ruda_tools_kernel_text_write_c(&t, f)) rc = RUDA_EXIT_FAILURE;
    if (f && fclose(f) != 0) rc = RUDA_EXIT_FAILURE;
    if (rc == RUDA_EXIT_OK && depfile) {
      FILE *d = fopen(depfile, "w");
      if (!d || !ruda_tools_kernel_text_write_depfile(&t, out, d)) rc = RUDA_EXIT_FAILURE;
      if (d && fclose(d) != 0) rc = RUDA_EXIT_FAILURE;
    }
    if (rc != RUDA_EXIT_OK) fprintf(stderr, "ruda kernels embed: cannot write %s: %s\n", out, strerror(errno));
  }
  ruda_tools_kernel_text_free(&t);
done:
  free(dirs);
  return rc;
}

int ruda_cmd_kernels(int argc, char **argv) {
  int code;
  if (ruda_tools_help_first(argc, argv, ruda_cmd_kernels_help, &code)) return code;
  for (int i = 1; i < argc; i++) {
    if (ruda_tools_is_help(argv[i])) {
      ruda_cmd_kernels_help(stdout);
      return RUDA_EXIT_OK;
    }
  }
  if (strcmp(argv[0], "check") == 0) return cmd_check(argc - 1, argv + 1);
  if (strcmp(argv[0], "embed") == 0) return cmd_embed(argc - 1, argv + 1);
  fprintf(stderr, "ruda kernels: unknown subcommand '%s' (check, embed)\n", argv[0]);
  return RUDA_EXIT_USAGE;
}
