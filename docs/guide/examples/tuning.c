/* Tuning your own kernel: two candidates of x[i] *= s, a key bucketed by
 * size, a correctness check; the first call of a size tunes it, later
 * calls launch the winner (docs/guide/11-tuning-kernels.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ruda/ruda.h>

#include "scale_variants.h"

static int fail(ruda_status_t st) {
  char buf[1024];
  ruda_status_format(st, buf, sizeof buf);
  fprintf(stderr, "error: %s\n", buf);
  ruda_status_free(st);
  return 1;
}

/* guide-begin: candidates */
/* Each candidate's launch: its kernel, its dispatch count, the chunk each
 * ruda takes (args->sizes[0] is n). */
typedef struct { uint64_t chunk; } form_t;
static const form_t k_range = {4096}, k_units = {256};

static ruda_status_t scale_launch(ruda_client_t *c, ruda_kernel_t *k,
                                  const ruda_tune_args_t *args, const void *param) {
  const form_t *f = param;
  uint64_t n = args->sizes[0];
  uint64_t w[3] = {args->scalars[0], n, f->chunk};
  ruda_kernel_args_t a = {args->buffers, 1, NULL, 0, {w, 3, 3}};
  return ruda_client_launch(c, k, ruda_count_static((uint32_t)((n + f->chunk - 1) / f->chunk), 1, 1),
                            &a);
}
/* guide-end: candidates */

int main(void) {
  ruda_client_t *c;
  ruda_status_t st = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c);
  if (st) return fail(st);
  ruda_kernel_t *range, *units;
  if ((st = RUDA_KERNEL_CREATE(scale_range, &range)) || (st = RUDA_KERNEL_CREATE(scale_units, &units)))
    return fail(st);

  /* guide-begin: op */
  ruda_tune_candidate_t cands[2] = {
      {.name = "range", .kernel = range, .launch = scale_launch, .param = &k_range},
      {.name = "units", .kernel = units, .launch = scale_launch, .param = &k_units},
  };
  static const ruda_tune_dim_t dims[1] = {{"n", 2}};  /* n rounded up to a power of 2 */
  static const ruda_tune_access_t access[1] = {RUDA_TUNE_READ_WRITE};  /* in place */
  ruda_tune_op_desc_t d = ruda_tune_op_desc_default();
  d.name = "guide_scale";
  d.candidates = cands;
  d.num_candidates = 2;
  d.dims = dims;        /* no key function: the key is args.sizes[0] */
  d.num_dims = 1;
  d.access = access;    /* tuning runs on a scratch copy of x */
  d.num_access = 1;
  d.check_reference = 0; /* every candidate must match "range" */
  ruda_tune_op_t *op;
  st = ruda_tune_op_create(c, &d, &op);
  /* guide-end: op */
  ruda_kernel_release(range);
  ruda_kernel_release(units);
  if (st) return fail(st);

  enum { N = 100000 };
  float *host = malloc(N * sizeof *host);
  for (int i = 0; i < N; i++) host[i] = (float)i;
  ruda_handle_t x;
  if ((st = ruda_client_create_buffer(c, host, N * sizeof *host, &x))) return fail(st);

  /* guide-begin: call */
  float s = 3.0f;
  uint64_t s_bits = 0, n = N;
  memcpy(&s_bits, &s, sizeof s);
  ruda_tune_args_t args = {&x, 1, &s_bits, 1, &n, 1};
  st = ruda_tune_op_launch(op, c, &args);  /* tunes n=131072's bucket, then runs the winner */
  if (!st) st = ruda_tune_op_launch(op, c, &args);  /* a hash lookup, then the launch */
  /* guide-end: call */
  if (!st) st = ruda_client_read(c, &x, host, N * sizeof *host);
  if (st) return fail(st);
  printf("x[1] = %g, x[99999] = %g\n", host[1], host[N - 1]);
  const char *winner;
  if ((st = ruda_tune_op_select(op, c, &args, NULL, &winner))) return fail(st);
  printf("candidates: %zu, the winner is one of them: %s\n", ruda_tune_op_num_candidates(op),
         (strcmp(winner, "range") == 0 || strcmp(winner, "units") == 0) ? "yes" : "no");
  ruda_handle_release(&x);
  free(host);
  ruda_tune_op_release(op);
  ruda_client_release(c);
  return 0;
}
