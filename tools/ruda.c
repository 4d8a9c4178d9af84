/* The `ruda` command: devices, demo, bench, kernels, tune. */
#include <stdlib.h>
#include <string.h>

#include "ruda/version.h"
#include "ruda_tools.h"
#include "tools_common.h"

static void print_usage(FILE *f) {
  fprintf(f,
          "usage: ruda <command> [options]\n"
          "\n"
          "ruda is a compute runtime: CPU threads (always available), NVIDIA GPUs and\n"
          "OpenCL devices.\n"
          "\n"
          "commands:\n"
          "  devices [--json]                      list every backend and its devices\n"
          "  demo [--device D] [--trace FILE]      run and check a small workload\n"
          "  bench <group> [--device D] [--json] [--quick]\n"
          "                                        benchmarks against raw baselines\n"
          "  kernels check|embed FILE...           portable kernels: compile for CUDA and\n"
          "                                        OpenCL without a GPU, or embed their text\n"
          "  tune list|show OP|clear|export FILE|import FILE|run OP --sizes S\n"
          "                                        the autotuner's cache; tune ahead of a job\n"
          "  help [command]                        this text, or a command's help\n"
          "  version, --version                    the library's version\n"
          "\n"
          "D is one of " RUDA_TOOLS_DEVICE_FORMS " (a type alone is its device 0;\n"
          "the default is cpu; `ruda devices` lists them). `ruda <command> --help`\n"
          "describes each command.\n"
          "\n"
          "environment:\n"
          "  RUDA_TRACE=FILE   write a Chrome trace JSON timeline (open in ui.perfetto.dev)\n"
          "  RUDA_CONFIG=FILE  read this ruda.toml instead of searching for one\n"
          "\n"
          "exit codes:\n"
          "  0  success\n"
          "  1  a check or a benchmark failed\n"
          "  2  usage error\n"
          "  3  the requested device or backend is unavailable\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return RUDA_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (ruda_tools_is_help(cmd)) {
    print_usage(stdout);
    return RUDA_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("ruda %s\n", ruda_version_string());
    return RUDA_EXIT_OK;
  }
  if (strcmp(cmd, "help") == 0) {
    if (argc < 3) {
      print_usage(stdout);
    } else if (strcmp(argv[2], "devices") == 0) {
      ruda_cmd_devices_help(stdout);
    } else if (strcmp(argv[2], "demo") == 0) {
      ruda_cmd_demo_help(stdout);
    } else if (strcmp(argv[2], "bench") == 0) {
      ruda_cmd_bench_help(stdout);
    } else if (strcmp(argv[2], "kernels") == 0) {
      ruda_cmd_kernels_help(stdout);
    } else if (strcmp(argv[2], "tune") == 0) {
      ruda_cmd_tune_help(stdout);
    } else {
      fprintf(stderr, "ruda help: unknown command '%s'\n", argv[2]);
      return RUDA_EXIT_USAGE;
    }
    return RUDA_EXIT_OK;
  }
  int code;
  if (strcmp(cmd, "devices") == 0) {
    code = ruda_cmd_devices(argc - 2, argv + 2);
  } else if (strcmp(cmd, "demo") == 0) {
    code = ruda_cmd_demo(argc - 2, argv + 2);
  } else if (strcmp(cmd, "bench") == 0) {
    code = ruda_cmd_bench(argc - 2, argv + 2);
  } else if (strcmp(cmd, "kernels") == 0) {
    code = ruda_cmd_kernels(argc - 2, argv + 2);
  } else if (strcmp(cmd, "tune") == 0) {
    code = ruda_cmd_tune(argc - 2, argv + 2);
  } else {
    fprintf(stderr, "ruda: unknown command '%s'\n\n", cmd);
    print_usage(stderr);
    return RUDA_EXIT_USAGE;
  }
  fflush(stdout);
  return code;
}
