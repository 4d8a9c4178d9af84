/* `ruda tune`: the tune cache (list, show, clear, export, import) and
 * tuning ahead of a job (run), through the public API (ruda/tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "ruda_tools.h"
#include "tools_common.h"

void ruda_cmd_tune_help(FILE *f) {
  fprintf(f,
          "usage: ruda tune list                     every entry of the tune cache\n"
          "       ruda tune show OP                  the entries of one operation, with scores\n"
          "       ruda tune clear                    remove every entry\n"
          "       ruda tune export FILE              write every entry into FILE\n"
          "       ruda tune import FILE              add FILE's entries to the cache\n"
          "       ruda tune run OP --sizes S[,S...] [--sizes ...] [--device D] [--force]\n"
          "                                          tune OP for these sizes now\n"
          "\n"
          "OP is a tuned operation ruda ships: matmul_f32 (sizes M,N,K), sum_f32 (N)\n"
          "or triad_f32 (N). The cache lives in the compile cache directory, in\n"
          "tune/ (RUDA_CACHE_DIR, [compilation] cache); [autotune] in ruda.toml and\n"
          "RUDA_AUTOTUNE_* set the level, the budget per key and pins\n"
          "(docs/configuration.md). RUDA_LOG_AUTOTUNE=basic prints every decision.\n");
}

typedef struct list_ctx {
  const char *op; /* NULL: all */
  bool scores;
  size_t shown;
} list_ctx_t;

static bool print_entry(const ruda_tune_entry_info_t *e, void *arg) {
  list_ctx_t *l = arg;
  if (l->op && strcmp(l->op, e->op) != 0) return true;
  l->shown++;
  printf("%-12s %-28s winner %-20s tuned in %.0f ms  [%s]\n", e->op, e->key, e->winner,
         e->spent_ms, e->device);
  if (l->scores) printf("    scores: %s\n    version %s, file %s\n", e->scores, e->version, e->file);
  return true;
}

static int fail_status(const char *what, ruda_status_t st) {
  char buf[2048];
  ruda_status_format(st, buf, sizeof buf);
  fprintf(stderr, "ruda tune %s: %s\n", what, buf);
  ruda_status_free(st);
  return RUDA_EXIT_FAILURE;
}

/* "1024,512,256" into v (at most cap values); the count, 0 on a bad list. */
static size_t parse_sizes(const char *s, uint64_t *v, size_t cap) {
  size_t n = 0;
  while (*s && n < cap) {
    char *e;
    unsigned long long x = strtoull(s, &e, 10);
    if (e == s || x == 0) return 0;
    v[n++] = x;
    if (*e == ',' || *e == 'x') e++;
    else if (*e) return 0;
    s = e;
  }
  return *s ? 0 : n;
}

static int tune_run(int argc, char **argv) {
  if (argc < 1) {
    fprintf(stderr, "ruda tune run: which operation? (matmul_f32, sum_f32, triad_f32)\n");
    return RUDA_EXIT_USAGE;
  }
  const char *opname = argv[0];
  const char *device = "cpu";
  bool force = false;
  uint64_t sizes[16][3];
  size_t nsizes[16], runs = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc && runs < 16) {
      nsizes[runs] = parse_sizes(argv[++i], sizes[runs], 3);
      if (!nsizes[runs]) {
        fprintf(stderr, "ruda tune run: bad --sizes '%s' (positive integers separated by ',')\n",
                argv[i]);
        return RUDA_EXIT_USAGE;
      }
      runs++;
    } else {
      fprintf(stderr, "ruda tune run: unknown argument '%s'\n", argv[i]);
      return RUDA_EXIT_USAGE;
    }
  }
  if (!runs) {
    fprintf(stderr, "ruda tune run: give at least one --sizes\n");
    return RUDA_EXIT_USAGE;
  }
  size_t want = strcmp(opname, "matmul_f32") == 0 ? 3 : 1;
  ruda_device_id_t id;
  ruda_status_t st = ruda_device_parse(device, &id);
  if (st) return fail_status("run", st);
  ruda_client_t *c;
  st = ruda_client_create(id, &c);
  if (st) {
    fail_status("run", st);
    return RUDA_EXIT_UNAVAILABLE;
  }
  ruda_tune_op_t *op;
  st = ruda_tune_builtin_op(c, opname, &op);
  if (st) {
    ruda_client_release(c);
    return fail_status("run", st);
  }
  int code = RUDA_EXIT_OK;
  for (size_t r = 0; r < runs && code == RUDA_EXIT_OK; r++) {
    if (nsizes[r] != want) {
      fprintf(stderr, "ruda tune run: %s takes %zu sizes\n", opname, want);
      code = RUDA_EXIT_USAGE;
      break;
    }
    uint64_t *s = sizes[r];
    uint64_t m = s[0], n = want == 3 ? s[1] : 1, k = want == 3 ? s[2] : 1;
    uint64_t bytes[3] = {m * k * 4, k * n * 4, m * n * 4};
    if (want == 1) bytes[0] = bytes[1] = bytes[2] = m * 4;
    ruda_handle_t h[3] = {{0}, {0}, {0}};
    /* Inputs hold data (ones): memory never written reads as one shared
     * zero page on a CPU, which would time a bandwidth-bound candidate as
     * if its data were in cache. */
    for (int i = 0; i < 3 && !st; i++) {
      float *fill = malloc(bytes[i]);
      if (!fill) {
        st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "out of memory for %llu bytes",
                                (unsigned long long)bytes[i]);
        break;
      }
      for (uint64_t e = 0; e < bytes[i] / 4; e++) fill[e] = 1.0f;
      st = ruda_client_create_buffer(c, fill, bytes[i], &h[i]);
      free(fill);
    }
    ruda_handle_t work = {0};
    uint64_t parts = m / 4096 + 1;
    if (!st && strcmp(opname, "sum_f32") == 0) st = ruda_client_empty(c, parts * 4, &work);
    ruda_handle_t bufs[3] = {h[0], h[1], h[2]};
    if (strcmp(opname, "sum_f32") == 0) bufs[2] = work;
    uint64_t scal[3] = {m, n, k}, fbits = 0x3f800000u;
    ruda_tune_args_t args = {bufs, 3, want == 3 ? scal : &fbits, want == 3 ? 3 : 1, scal,
                             want == 3 ? 3 : 1};
    if (strcmp(opname, "sum_f32") == 0) args.num_scalars = 0;
    double spent = 0;
    const char *winner = NULL;
    if (!st) st = ruda_tune_op_tune(op, c, &args, force, &spent);
    if (!st) st = ruda_tune_op_select(op, c, &args, NULL, &winner);
    if (st) {
      code = fail_status("run", st);
      st = NULL;
    } else {
      printf("%s", opname);
      for (size_t i = 0; i < want; i++) printf("%s%llu", i ? "x" : " ", (unsigned long long)s[i]);
      printf(": %s (%s)\n", winner, spent > 0 ? "tuned now" : "already decided");
    }
    for (int i = 0; i < 3; i++) ruda_handle_release(&h[i]);
    ruda_handle_release(&work);
  }
  ruda_client_release(c);
  return code;
}

int ruda_cmd_tune(int argc, char **argv) {
  int code;
  if (ruda_tools_help_first(argc, argv, ruda_cmd_tune_help, &code)) return code;
  const char *sub = argv[0];
  ruda_status_t st;
  /* The cache's warnings (a corrupt entry skipped) and the decisions of
   * `run` go to stderr unless RUDA_LOG_AUTOTUNE says otherwise. */
  setenv("RUDA_LOG_AUTOTUNE", "basic:stderr", 0);
  if (strcmp(sub, "list") == 0 || strcmp(sub, "show") == 0) {
    bool show = strcmp(sub, "show") == 0;
    if (show && argc < 2) {
      fprintf(stderr, "ruda tune show: which operation?\n");
      return RUDA_EXIT_USAGE;
    }
    char dir[1100];
    if (!ruda_tune_cache_dir(dir, sizeof dir)) {
      printf("no tune cache ([autotune] cache is off, or compilation.cache is \"none\")\n");
      return RUDA_EXIT_OK;
    }
    list_ctx_t l = {show ? argv[1] : NULL, show, 0};
    st = ruda_tune_cache_list(print_entry, &l);
    if (st) return fail_status(sub, st);
    printf("%zu entr%s in %s\n", l.shown, l.shown == 1 ? "y" : "ies", dir);
    return RUDA_EXIT_OK;
  }
  if (strcmp(sub, "clear") == 0) {
    size_t n = 0;
    st = ruda_tune_cache_clear(&n);
    if (st) return fail_status(sub, st);
    printf("removed %zu entr%s\n", n, n == 1 ? "y" : "ies");
    return RUDA_EXIT_OK;
  }
  if (strcmp(sub, "export") == 0 || strcmp(sub, "import") == 0) {
    if (argc < 2) {
      fprintf(stderr, "ruda tune %s: which file?\n", sub);
      return RUDA_EXIT_USAGE;
    }
    size_t n = 0;
    st = sub[0] == 'e' ? ruda_tune_cache_export(argv[1], &n) : ruda_tune_cache_import(argv[1], &n);
    if (st) return fail_status(sub, st);
    printf("%s %zu entr%s %s %s\n", sub[0] == 'e' ? "exported" : "imported", n,
           n == 1 ? "y" : "ies", sub[0] == 'e' ? "to" : "from", argv[1]);
    return RUDA_EXIT_OK;
  }
  if (strcmp(sub, "run") == 0) return tune_run(argc - 1, argv + 1);
  fprintf(stderr, "ruda tune: unknown subcommand '%s'\n\n", sub);
  ruda_cmd_tune_help(stderr);
  return RUDA_EXIT_USAGE;
}
