/* allreduce: collectives against NCCL / MPI directly. Skipped until the
 * comm layer implements all-reduce. */
#include "harness.h"

void ruda_bench_allreduce(ruda_bench_t *b) {
  const char *why = ruda_bench_on_cuda(b)
                        ? "all-reduce is not implemented yet (src/comm: NCCL collectives); "
                          "needs 2 GPUs"
                        : "all-reduce is not implemented yet (src/comm: in-process CPU and "
                          "MPI collectives)";
  ruda_bench_skip(b, "allreduce", "allreduce_64MiB", why);
  ruda_bench_skip(b, "allreduce", "allreduce_1GiB", why);
}
