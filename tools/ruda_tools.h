/* The `ruda` command's subcommands: each tools/cmd_<name>.c defines its
 * entry point and help, which the dispatcher (tools/ruda.c) calls. Their
 * shared helpers are in tools_common.h. */
#ifndef RUDA_TOOLS_H
#define RUDA_TOOLS_H

#include <stdio.h>

int ruda_cmd_devices(int argc, char **argv);
int ruda_cmd_demo(int argc, char **argv);
int ruda_cmd_bench(int argc, char **argv);
int ruda_cmd_kernels(int argc, char **argv);
int ruda_cmd_tune(int argc, char **argv);

void ruda_cmd_devices_help(FILE *f);
void ruda_cmd_demo_help(FILE *f);
void ruda_cmd_bench_help(FILE *f);
void ruda_cmd_kernels_help(FILE *f);
void ruda_cmd_tune_help(FILE *f);

#endif
