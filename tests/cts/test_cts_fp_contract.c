/* Conformance: compilation.fp_contract = "off" (docs/configuration.md) gives
 * the same bits on every backend. The suite's device runs a*x + y and a dot
 * product next to a second device in the same process (opencl:0 when the
 * suite runs on a CPU device, else cpu:0), and the results must be equal bit
 * for bit; with contraction (PoCL and GPUs fuse a*x + y into an FMA) they
 * differ in the last bits for these inputs. On a CPU device the kernels'
 * text compiled at run time (the system C compiler with cpu_flags, FMA
 * instructions allowed) must agree too, where a compiler is found. */
#include <stdint.h>
#include <stdlib.h>

#include "cts.h"
#include "cts_fp_contract_kernels.h"

enum { N = 4096, ROWS = 256, LEN = 64 };

/* Inputs whose products need more than 24 bits, so that one rounding
 * (an FMA) and two (a multiply, then an add) differ. */
static float input(uint32_t i, uint32_t salt) {
  uint32_t h = (i + salt) * 2654435761u;
  h ^= h >> 15;
  return ((float)(h & 0xffffff) / 16777216.0f - 0.5f) * 3.0f + 1.0e-3f * (float)(i % 7);
}

typedef struct results {
  float axpy[N];
  float dot[ROWS];
} results_t;

static void fail_status(ruda_status_t s, const char *what) {
  if (!s) return;
  char *text = ruda_status_to_string(s);
  rt_fail_msg(__FILE__, __LINE__, "%s: %s", what, text ? text : "?");
  free(text);
  ruda_status_free(s);
  rt_fail();
}

/* The kernel of `d` with its text only (no natively compiled function): on
 * a CPU device the text is compiled at run time. */
static ruda_status_t create_from_text(ruda_kernel_desc_t d, ruda_kernel_code_t *code,
                                      ruda_kernel_t **out) {
  *code = *d.code;
  code->cpu_fn = NULL;
  d.code = code;
  return ruda_kernel_create(&d, out);
}

static void run_on(ruda_client_t *c, results_t *r, bool from_text) {
  static float x[N], y[N], dx[ROWS * LEN], dy[ROWS * LEN];
  for (uint32_t i = 0; i < N; i++) {
    x[i] = input(i, 1);
    y[i] = input(i, 2);
  }
  for (uint32_t i = 0; i < ROWS * LEN; i++) {
    dx[i] = input(i, 3);
    dy[i] = input(i, 4);
  }
  ruda_kernel_t *ka = NULL, *kd = NULL;
  ruda_kernel_code_t code_a, code_d;
  if (from_text) {
    fail_status(create_from_text(RUDA_KERNEL_DESC(fpc_axpy), &code_a, &ka), "creating fpc_axpy");
    fail_status(create_from_text(RUDA_KERNEL_DESC(fpc_dot), &code_d, &kd), "creating fpc_dot");
  } else {
    fail_status(RUDA_KERNEL_CREATE(fpc_axpy, &ka), "creating fpc_axpy");
    fail_status(RUDA_KERNEL_CREATE(fpc_dot, &kd), "creating fpc_dot");
  }
  ruda_handle_t hx, hy, hdx, hdy, hout;
  fail_status(ruda_client_create_buffer(c, x, sizeof x, &hx), "create x");
  fail_status(ruda_client_create_buffer(c, y, sizeof y, &hy), "create y");
  fail_status(ruda_client_create_buffer(c, dx, sizeof dx, &hdx), "create dx");
  fail_status(ruda_client_create_buffer(c, dy, sizeof dy, &hdy), "create dy");
  fail_status(ruda_client_empty(c, sizeof r->dot, &hout), "create out");
  fail_status(RUDA_LAUNCH(fpc_axpy, c, ka, ruda_count_static(N / CTS_UNITS, 1, 1), &hx, &hy,
                          0.7853981f, (uint32_t)N),
              "launching fpc_axpy");
  fail_status(RUDA_LAUNCH(fpc_dot, c, kd, ruda_count_static(ROWS / CTS_UNITS, 1, 1), &hdx, &hdy,
                          &hout, (uint32_t)ROWS, (uint32_t)LEN),
              "launching fpc_dot");
  fail_status(ruda_client_read(c, &hy, r->axpy, sizeof r->axpy), "reading y");
  fail_status(ruda_client_read(c, &hout, r->dot, sizeof r->dot), "reading the dot products");
  ruda_handle_release(&hx);
  ruda_handle_release(&hy);
  ruda_handle_release(&hdx);
  ruda_handle_release(&hdy);
  ruda_handle_release(&hout);
  ruda_kernel_release(ka);
  ruda_kernel_release(kd);
}

static size_t first_difference(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) return i;
  return n;
}

TEST(fp_contract_off_bit_identical) {
  /* Before the first client: the process's configuration is read once. */
  if (!getenv("RUDA_FP_CONTRACT")) setenv("RUDA_FP_CONTRACT", "off", 1);
  if (ruda_config_get()->compilation.fp_contract != RUDA_FP_CONTRACT_OFF)
    SKIP("RUDA_FP_CONTRACT is set to another value than \"off\"");
  ruda_client_t *c = cts_client();
  bool on_cpu = cts_is_cpu();
  ruda_device_id_t other_id = {on_cpu ? RUDA_DEVICE_TYPE_OPENCL : RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *other = NULL;
  ruda_status_t s = ruda_client_create(other_id, &other);
  if (s) {
    char why[512];
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    SKIP_UNAVAILABLE(on_cpu ? "opencl" : "cpu", why);
  }
  static results_t mine, theirs;
  run_on(c, &mine, false);
  run_on(other, &theirs, false);
  ruda_client_release(other);
  size_t i = first_difference(mine.axpy, theirs.axpy, N);
  if (i < N)
    rt_fail_msg(__FILE__, __LINE__, "a*x+y differs at %zu: %a here, %a on %s", i,
                (double)mine.axpy[i], (double)theirs.axpy[i], on_cpu ? "opencl:0" : "cpu:0");
  ASSERT_UEQ(i, N);
  i = first_difference(mine.dot, theirs.dot, ROWS);
  if (i < ROWS)
    rt_fail_msg(__FILE__, __LINE__, "dot product %zu differs: %a here, %a on %s", i,
                (double)mine.dot[i], (double)theirs.dot[i], on_cpu ? "opencl:0" : "cpu:0");
  ASSERT_UEQ(i, ROWS);
  if (!on_cpu) return;
  /* The same text compiled at run time for this CPU device. */
  static results_t compiled;
  ruda_kernel_code_t probe_code;
  ruda_kernel_t *probe = NULL;
  ruda_status_t ps = create_from_text(RUDA_KERNEL_DESC(fpc_axpy), &probe_code, &probe);
  if (!ps) {
    uint32_t zero = 0;
    ruda_handle_t hz;
    ps = ruda_client_create_buffer(c, &zero, sizeof zero, &hz);
    if (!ps) {
      ps = RUDA_LAUNCH(fpc_axpy, c, probe, ruda_count_static(1, 1, 1), &hz, &hz, 1.0f, 0u);
      if (!ps) ps = ruda_client_sync(c);
      ruda_handle_release(&hz);
    }
  }
  ruda_kernel_release(probe);
  if (ps) {
    char why[512];
    ruda_status_format(ps, why, sizeof why);
    ruda_status_free(ps);
    printf("no run-time compiled side: %s\n", why);
    return;
  }
  run_on(c, &compiled, true);
  i = first_difference(compiled.axpy, theirs.axpy, N);
  if (i < N)
    rt_fail_msg(__FILE__, __LINE__, "a*x+y compiled at run time differs at %zu: %a, %a on opencl:0",
                i, (double)compiled.axpy[i], (double)theirs.axpy[i]);
  ASSERT_UEQ(i, N);
  i = first_difference(compiled.dot, theirs.dot, ROWS);
  ASSERT_UEQ(i, ROWS);
}
