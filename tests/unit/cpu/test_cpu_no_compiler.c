/* A portable kernel without a compiled-in function on a machine without
 * the configured C compiler (RUDA_CPU_COMPILER names one that does not
 * exist, set before ruda reads its configuration): the launch fails with
 * Unavailable naming what was looked for; a kernel with a cpu_fn runs. */
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static void no_compiler(void) __attribute__((constructor));
static void no_compiler(void) { setenv("RUDA_CPU_COMPILER", "ruda-no-such-compiler", 1); }

static void add_one(const ruda_cpu_kernel_ctx_t *ctx) {
  uint32_t *x = ctx->buffers[0];
  x[ctx->ruda_pos.x] += 1;
}

TEST(no_compiler_is_unavailable_and_names_what_was_looked_for) {
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  static const char text[] =
      "RUDA_KERNEL(k, RUDA_DIM(1, 1, 1), RUDA_BUFFER(uint32_t *, x)) {\n"
      "  RUDA_SINGLE x[0] = 1;\n"
      "}\n";
  ruda_kernel_t *k = test_kernel_from_text(text, NULL, NULL);
  uint32_t x[4] = {0};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, x, sizeof x, &h));
  ruda_status_t s = test_launch_and_sync(c, k, &h);
  ASSERT_NOT_NULL(s);
  char *msg = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(msg, "A backend, library or device is unavailable");
  ASSERT_STR_CONTAINS(msg, "'ruda-no-such-compiler' on PATH");
  free(msg);
  ruda_status_free(s);
  ruda_kernel_release(k);

  /* A compiled-in function needs no compiler. */
  ruda_kernel_code_t code = ruda_kernel_code_cpu(add_one);
  ruda_kernel_desc_t d = test_kernel_desc("add_one", ruda_dim_new_1d(1), &code);
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &h, x, sizeof x));
  for (int i = 0; i < 4; i++) ASSERT_UEQ(x[i], 1);
  ruda_kernel_release(k);
  ruda_handle_release(&h);
  ruda_client_release(c);
}
