/* graph: replaying a recorded graph against running the same work
 * operation by operation.
 *
 *  replay_per_kernel   one replay of a graph of 1000 empty kernels, then a
 *                      sync, per kernel. Baseline on cpu:N and opencl:N:
 *                      the same 1000 launches made one by one (then a
 *                      sync); on cuda:N (bench_cuda.c): cuGraphLaunch of
 *                      the same kernels captured directly into a CUDA
 *                      graph.
 */
#include <stdlib.h>

#include "harness.h"
#include "ruda/client.h"

static void empty_kernel(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }

typedef ruda_bench_graph_ctx_t graph_ctx_t;

ruda_status_t ruda_bench_graph_record(ruda_bench_graph_ctx_t *x, const ruda_kernel_args_t *args) {
  ruda_status_t st = ruda_client_graph_begin(x->c);
  for (int i = 0; !st && i < RUDA_BENCH_GRAPH_KERNELS; i++) {
    st = ruda_client_launch(x->c, x->k, ruda_count_static(1, 1, 1), args);
  }
  if (!st) st = ruda_client_graph_end(x->c, &x->g);
  return st;
}

void ruda_bench_graph_replay(void *p) {
  graph_ctx_t *x = p;
  ruda_bench_keep_error(&x->err, ruda_client_graph_replay(x->c, x->g));
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
}

void ruda_bench_graph_report(ruda_bench_t *b, ruda_status_t err, ruda_bench_stats_t r,
                             ruda_bench_stats_t base, const char *baseline) {
  if (ruda_bench_fail_status(b, "graph", "replay_per_kernel", err)) return;
  ruda_bench_report(b, "graph", "replay_per_kernel", "ns",
                    ruda_bench_stats_scale(r, 1.0 / RUDA_BENCH_GRAPH_KERNELS),
                    ruda_bench_stats_scale(base, 1.0 / RUDA_BENCH_GRAPH_KERNELS), baseline, true);
}

static void one_by_one(void *p) {
  graph_ctx_t *x = p;
  for (int i = 0; i < RUDA_BENCH_GRAPH_KERNELS; i++) {
    ruda_bench_keep_error(&x->err, ruda_client_launch(x->c, x->k, ruda_count_static(1, 1, 1), NULL));
  }
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
}

/* The empty kernel for the bench's device: a CPU function and OpenCL C. */
static ruda_status_t make_empty(ruda_kernel_t **out) {
  ruda_kernel_code_t code[3] = {
      ruda_kernel_code_cpu(empty_kernel),
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C,
                            "__kernel void empty_kernel(__global const ulong *info) {}"),
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C,
                            "extern \"C\" __global__ void empty_kernel() {}"),
  };
  ruda_kernel_desc_t d = {.name = "empty_kernel", .ruda_dim = {1, 1, 1}, .code = code,
                          .num_code = 3};
  return ruda_kernel_create(&d, out);
}

void ruda_bench_graph(ruda_bench_t *b) {
  if (ruda_bench_on_cuda(b)) {
    ruda_bench_cuda_graph(b);
    return;
  }
  graph_ctx_t x = {0};
  if (!ruda_bench_open_client(b, "graph", "replay_per_kernel", &x.c)) return;
  ruda_status_t st = make_empty(&x.k);
  if (!st) st = ruda_bench_graph_record(&x, NULL);
  if (ruda_bench_fail_status(b, "graph", "replay_per_kernel", st)) goto out;
  size_t reps = ruda_bench_pick(b, 30, 8, 1);
  ruda_bench_stats_t r = ruda_bench_measure(ruda_bench_graph_replay, &x, 3, reps, 1);
  ruda_bench_stats_t base = ruda_bench_measure(one_by_one, &x, 3, reps, 1);
  ruda_bench_graph_report(b, x.err, r, base, "the same launches one by one");
out:
  ruda_graph_release(x.g);
  ruda_kernel_release(x.k);
  ruda_client_release(x.c);
}
