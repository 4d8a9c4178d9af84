/* `ruda bench <group> [--device D] [--json] [--quick]`. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda_tools.h"
#include "tools_common.h"

typedef struct bench_group {
  const char *name;
  void (*run)(ruda_bench_t *b);
  const char *what;
} bench_group_t;

static void run_memory(ruda_bench_t *b) {
  ruda_bench_memory(b);
  if (ruda_bench_on_cuda(b)) ruda_bench_cuda_memory(b);
  if (ruda_bench_on_opencl(b)) ruda_bench_opencl_memory(b);
}

static const bench_group_t groups[] = {
    {"memory", run_memory, "pooled allocate + release against malloc/free (cuMemAlloc on CUDA, clCreateBuffer on OpenCL)"},
    {"launch", ruda_bench_launch, "empty-kernel launch: caller cost and round trip against OpenMP"},
    {"triad", ruda_bench_triad, "a = b + s*c bandwidth on the CPU backend against OpenMP"},
    {"copy", ruda_bench_copy, "create + read bandwidth against memcpy"},
    {"compile", ruda_bench_compile,
     "warm kernel load from the disk cache against NVRTC (CUDA), clBuildProgram (OpenCL) or "
     "dlopen (CPU); the CPU's cold compile against cc"},
    {"kernels", ruda_bench_kernels,
     "portable kernels (triad, reduction, matmul) against native C / OpenMP / CUDA C"},
    {"tune", ruda_bench_tune,
     "the autotuner: tuned matmul against fixed candidates and OpenBLAS, reduction against triad, cache-hit cost, tuning time (not part of `all`)"},
    {"allreduce", ruda_bench_allreduce, "the all-reduce cases of `comm` alone, in one process"},
    {"dlpack", ruda_bench_dlpack,
     "DLPack export + import round trip against a hand-filled DLManagedTensorVersioned"},
    {"graph", ruda_bench_graph,
     "replay of a recorded graph of 1000 kernels against launching them one by one (cuGraphLaunch on CUDA)"},
    {"comm", ruda_bench_comm,
     "collectives and send/recv against NCCL, against MPI under mpirun, CPU vs triad"},
};
#define NUM_GROUPS (sizeof groups / sizeof groups[0])

void ruda_cmd_bench_help(FILE *f) {
  fprintf(f,
          "usage: ruda bench <group> [--device " RUDA_TOOLS_DEVICE_FORMS "] [--json] [--quick]\n"
          "                  [--smoke]\n"
          "\n"
          "Runs benchmark cases, each against a raw baseline in the same process:\n"
          "warm-up, repetitions, median [min .. max], and ratio = ruda / baseline.\n"
          "\n"
          "groups:\n");
  for (size_t i = 0; i < NUM_GROUPS; ++i) fprintf(f, "  %-10s %s\n", groups[i].name, groups[i].what);
  fprintf(f,
          "  %-10s every group above\n"
          "\n"
          "options:\n"
          "  --device D  cpu (the default: cpu:0), cpu:N, cuda (cuda:0), cuda:N, opencl\n"
          "              (opencl:0) or opencl:N; `ruda devices` lists them\n"
          "  --json      one JSON object per line on stdout:\n"
          "              {\"bench\", \"case\", \"unit\", \"ruda\", \"baseline\",\n"
          "               \"baseline_name\", \"ratio\", \"better\"}\n"
          "              (progress and skipped cases go to stderr)\n"
          "  --quick     smaller sizes and fewer repetitions (`all` in under a minute)\n"
          "  --smoke     every case once at tiny sizes (for tests; numbers mean nothing)\n"
          "\n"
          "exit codes: 0 ok (skipped cases included), 1 a case failed,\n"
          "2 usage error, 3 the device is unavailable.\n",
          "all");
}

int ruda_cmd_bench(int argc, char **argv) {
  ruda_bench_options_t opts = {0};
  opts.device = "cpu";
  const char *group = NULL;
  const ruda_tools_flag_t flags[] = {
      {"--json", &opts.json, true}, {"--quick", &opts.quick, true}, {"--smoke", &opts.smoke, true}};
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i];
    if (ruda_tools_is_help(a)) {
      ruda_cmd_bench_help(stdout);
      return RUDA_EXIT_OK;
    } else if (ruda_tools_set_flag(a, flags, sizeof flags / sizeof flags[0])) {
      continue;
    } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
      opts.device = argv[++i];
    } else if (strncmp(a, "--device=", 9) == 0) {
      opts.device = a + 9;
    } else if (a[0] != '-' && !group) {
      group = a;
    } else {
      fprintf(stderr, "ruda bench: unknown or incomplete option '%s'\n", a);
      ruda_cmd_bench_help(stderr);
      return RUDA_EXIT_USAGE;
    }
  }
  if (!group) {
    fprintf(stderr, "ruda bench: which group? (memory, launch, triad, copy, compile, allreduce, kernels, tune, comm, all)\n");
    ruda_cmd_bench_help(stderr);
    return RUDA_EXIT_USAGE;
  }
  bool all = strcmp(group, "all") == 0;
  const bench_group_t *one = NULL;
  for (size_t i = 0; i < NUM_GROUPS && !all; ++i)
    if (strcmp(group, groups[i].name) == 0) one = &groups[i];
  if (!all && !one) {
    fprintf(stderr, "ruda bench: unknown group '%s'\n", group);
    ruda_cmd_bench_help(stderr);
    return RUDA_EXIT_USAGE;
  }

  /* The collectives' cases between CPU devices need two of them; the count
   * is read when the first CPU device is made (the probe below). */
  if (all || strcmp(group, "comm") == 0 || strcmp(group, "allreduce") == 0) {
    setenv("RUDA_CPU_DEVICES", "2", 0);
  }

  /* An unusable device is an error of the whole command, not a skip. */
  ruda_client_t *probe = NULL;
  int code = ruda_tools_open_device(opts.device, &probe);
  if (code != RUDA_EXIT_OK) return code;

  ruda_bench_t *b = ruda_bench_create(&opts);
  if (!b) {
    ruda_client_release(probe);
    fprintf(stderr, "ruda bench: out of memory\n");
    return RUDA_EXIT_FAILURE;
  }
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < NUM_GROUPS; ++i) {
    if (!all && one != &groups[i]) continue;
    /* `tune` tunes every size it measures (seconds each): run on its own. */
    if (all && groups[i].run == ruda_bench_tune) continue;
    if (all) ruda_bench_progress(b, "group %s", groups[i].name);
    groups[i].run(b);
    ruda_bench_flush(b);
  }
  double secs = (double)(ruda_bench_now_ns() - t0) * 1e-9;
  size_t failures = ruda_bench_failures(b);
  fprintf(stderr, "ruda bench: %zu case%s reported, %zu skipped, %zu failed in %.1f s\n",
          ruda_bench_reports(b), ruda_bench_reports(b) == 1 ? "" : "s", ruda_bench_skips(b),
          failures, secs);
  ruda_bench_destroy(b);
  ruda_client_release(probe);
  return failures ? RUDA_EXIT_FAILURE : RUDA_EXIT_OK;
}
