/* `ruda kernels check|embed`: portable kernels (ruda/kernel_dialect.h)
 * without a GPU. `check` compiles every kernel file for CUDA with NVRTC
 * (for a named architecture), for OpenCL with the installed OpenCL driver
 * (PoCL in CI) and with --cpu for the CPU backend's run-time C compiler,
 * each through ruda_kernel_compile_portable_with_options: the runtime's own
 * compile, its preludes and options, and the options ruda_kernel_from_file
 * takes. It reports each compiler message at the user's file and line,
 * with the kernel it falls in. `embed` is the build step (what
 * ruda_add_kernels runs) for other build systems. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_text.h"
#include "ruda_tools.h"
#include "ruda/kernel.h"
#include "ruda/client.h"
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
          "-D NAME[=VALUE]  a compile-time constant for every compiler; -O, -f and\n"
          "        -m flags go to the CPU compiler only (after compilation.cpu_flags),\n"
          "        not to NVRTC or OpenCL: the options of ruda_kernel_from_file, which\n"
          "        refuses any other (so does check: exit 2).\n"
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

static void print_kernel_list(const ruda_tools_kernel_text_t *t) {
  printf(" (%zu kernel%s", t->num_kernels, t->num_kernels == 1 ? "" : "s");
  for (size_t i = 0; i < t->num_kernels; i++) printf("%s%s", i ? ", " : ": ", t->kernels[i].name);
  printf(")\n");
}

typedef struct check_opts {
  unsigned cc;
  bool cuda, opencl, skip_unavailable, cpu;
  unsigned opencl_device;
  /* The compile options, in command-line order, each one argument
   * (-DNAME[=VALUE], -IDIR, -O.., -f.., -m..). */
  const char **options;
  size_t num_options;
} check_opts_t;

/* Compiles `t` through ruda_kernel_compile_portable_with_options for
 * `device_type` and `target` (CUDA: NVRTC for sm_<target>; CPU: the
 * run-time C compiler; OpenCL: the driver of opencl:<target>), reporting
 * as `label`. 0 ok, 1 failed, 3 unavailable, RUDA_EXIT_USAGE an option the
 * runtime refuses (its error on stderr: the options of
 * ruda_kernel_from_file, checked by the same code); message printed. */
static int check_one(const check_opts_t *o, const ruda_tools_kernel_text_t *t, const char *shown,
                     uint16_t device_type, unsigned target, const char *label) {
  const char *base = strrchr(t->path, '/');
  base = base ? base + 1 : t->path;
  ruda_status_t s = ruda_kernel_compile_portable_with_options(
      device_type, target, base, t->text, t->len, t->path, o->options, o->num_options, NULL, NULL);
  if (!s) {
    printf("%s: %s: ok", shown, label);
    print_kernel_list(t);
    return 0;
  }
  if (ruda_status_kind(s) == RUDA_ERR_INVALID_ARGUMENT) {
    ruda_tools_print_status("kernels check", s);
    ruda_status_free(s);
    return RUDA_EXIT_USAGE;
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

/* "opencl:N (device name)", the name from the device's properties. */
static void opencl_label(unsigned index, char *buf, size_t cap) {
  uint32_t n = 0;
  ruda_device_properties_t p;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_OPENCL, &n);
  if (!s && index < n)
    s = ruda_device_properties((ruda_device_id_t){RUDA_DEVICE_TYPE_OPENCL, (uint16_t)index}, &p);
  if (!s && index < n) snprintf(buf, cap, "opencl:%u (%s)", index, p.name);
  else snprintf(buf, cap, "opencl:%u", index);
  ruda_status_free(s);
}

/* One compile option of the command line, as its own argument: "-D X"
 * becomes "-DX", "-I DIR" "-IDIR". */
static const char *option_arg(char *flag, const char *value, char **owned) {
  size_t n = strlen(value) + 3;
  char *o = malloc(n);
  if (o) snprintf(o, n, "-%c%s", flag[1], value);
  *owned = o;
  return o;
}

static int cmd_check(int argc, char **argv) {
  check_opts_t o = {90, true, true, false, false, 0, NULL, 0};
  const ruda_tools_flag_t flags[] = {{"--cpu", &o.cpu, true},
                                     {"--cuda-only", &o.opencl, false},
                                     {"--opencl-only", &o.cuda, false},
                                     {"--skip-unavailable", &o.skip_unavailable, true}};
  const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  o.options = calloc((size_t)argc + 1, sizeof *o.options);
  char **owned = calloc((size_t)argc + 1, sizeof *owned); /* options made here */
  size_t nd = 0, nf = 0, nowned = 0;
  int rc = RUDA_EXIT_USAGE;
  if (!dirs || !files || !o.options || !owned) goto done;
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
    } else if ((strcmp(a, "-I") == 0 || strcmp(a, "-D") == 0) && i + 1 < argc) {
      /* "-I DIR", "-D NAME=VALUE": one argument each, as the API takes them. */
      const char *opt = option_arg(argv[i], argv[i + 1], &owned[nowned]);
      if (!opt) goto done;
      nowned++;
      i++;
      if (a[1] == 'I') dirs[nd++] = opt + 2;
      o.options[o.num_options++] = opt;
    } else if (a[0] == '-' && a[1] && strchr("DIOfm", a[1])) {
      if (a[1] == 'I' && a[2]) dirs[nd++] = a + 2;
      o.options[o.num_options++] = a;
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
  bool cuda_missing = false, opencl_missing = false, cpu_missing = false;
  char cuda_label[32], opencl[320];
  snprintf(cuda_label, sizeof cuda_label, "cuda sm_%u", o.cc);
  if (o.opencl) opencl_label(o.opencl_device, opencl, sizeof opencl);
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
    struct {
      bool on, *missing;
      uint16_t type;
      unsigned target;
      const char *label;
    } targets[] = {
        {o.cpu, &cpu_missing, RUDA_DEVICE_TYPE_CPU, o.cc, "cpu (run-time C compiler)"},
        {o.cuda, &cuda_missing, RUDA_DEVICE_TYPE_CUDA, o.cc, cuda_label},
        {o.opencl, &opencl_missing, RUDA_DEVICE_TYPE_OPENCL, o.opencl_device, opencl},
    };
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
      if (!targets[k].on || *targets[k].missing) continue;
      int r = check_one(&o, &t, files[f], targets[k].type, targets[k].target, targets[k].label);
      if (r == RUDA_EXIT_USAGE) {
        ruda_tools_kernel_text_free(&t);
        rc = RUDA_EXIT_USAGE;
        goto done;
      }
      if (r == 3) *targets[k].missing = true;
      else if (r) rc = RUDA_EXIT_FAILURE;
      else compiled++;
    }
    ruda_tools_kernel_text_free(&t);
  }
  if (rc == RUDA_EXIT_OK && (cuda_missing || opencl_missing || cpu_missing)) {
    if (!o.skip_unavailable) rc = RUDA_EXIT_UNAVAILABLE;
    else if (compiled == 0) rc = 77;
  }
done:
  for (size_t i = 0; owned && i < nowned; i++) free(owned[i]);
  free(owned);
  free(o.options);
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
