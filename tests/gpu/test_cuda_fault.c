/* A kernel that writes out of bounds: the fault surfaces at the next sync
 * as an error naming the kernel and CUDA_ERROR_ILLEGAL_ADDRESS, the process
 * keeps running, and afterwards the device either works again (the context
 * was reset; buffers from before are gone) or, where the driver refuses the
 * reset (580.x does: cuDevicePrimaryCtxReset returns the sticky error),
 * every call of every stream fails with ServerError::DeviceLost, while
 * cpu:0 keeps working. Its own program, because either way
 * every allocation of the process is gone. */
#include "cuda_test_util.h"

static const char oob_src[] =
    "extern \"C\" __global__ void oob_write(unsigned int *out, const unsigned long long *info) {\n"
    "  out[info[0] + threadIdx.x] = 1u;\n"
    "}\n";

TEST(out_of_bounds_write_is_reported_and_never_crashes) {
  ruda_client_t *c = cuda_client();
  ruda_kernel_t *bad = cuda_kernel("oob_write", oob_src, ruda_dim_new_1d(32), 0);
  ruda_handle_t h;
  uint32_t zeros[32] = {0};
  ASSERT_OK(ruda_client_create_buffer(c, zeros, sizeof zeros, &h));
  uint64_t info[1] = {1ull << 38}; /* 1 TiB past the buffer */
  ruda_kernel_args_t args = {&h, 1, NULL, 0, {info, 1, 1}};
  ASSERT_OK(ruda_client_launch_unchecked(c, bad, ruda_count_static(1, 1, 1), &args));
  ruda_status_t e = ruda_client_sync(c);
  ASSERT_NOT_NULL(e);
  char *text = status_text(e);
  printf("  fault: %s\n", text);
  ASSERT_STR_CONTAINS(text, "oob_write");
  ASSERT_STR_CONTAINS(text, "CUDA_ERROR_ILLEGAL_ADDRESS");
  free(text);
  ruda_status_free(e);
  ruda_handle_release(&h);

  /* The context was reset: the device works again, or, where the driver
   * cannot reset it, every call says so clearly. */
  ruda_kernel_t *fill = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(64), 0);
  ruda_handle_t h2;
  ASSERT_OK(ruda_client_empty(c, 256 * 4, &h2));
  uint64_t finfo[2] = {256, 9};
  ruda_kernel_args_t fargs = {&h2, 1, NULL, 0, {finfo, 2, 2}};
  ASSERT_OK(ruda_client_launch(c, fill, ruda_count_static(4, 1, 1), &fargs));
  uint32_t back[256];
  memset(back, 0, sizeof back);
  ruda_status_t r = ruda_client_read(c, &h2, back, sizeof back);
  if (r) {
    char *t = status_text(r);
    printf("  after the fault: %s\n", t);
    ASSERT_STR_CONTAINS(t, "restart the process");
    free(t);
    /* Lost: DeviceLost, on this stream and (at once) on another thread's,
     * a clear answer from ruda_device_recover, and cpu:0 unaffected. */
    ASSERT_NOT_NULL(ruda_status_find(r, RUDA_ERR_SERVER_DEVICE_LOST));
    ruda_status_free(r);
    ASSERT_ERR_KIND(ruda_client_sync(c), RUDA_ERR_SERVER_DEVICE_LOST);
    ruda_status_t rec = ruda_device_recover(ruda_client_device(c));
    ASSERT_NOT_NULL(rec);
    ASSERT_EQ(ruda_status_kind(rec), RUDA_ERR_UNAVAILABLE);
    t = status_text(rec);
    printf("  ruda_device_recover: %s\n", t);
    free(t);
    ruda_status_free(rec);
    ruda_client_t *cpu = NULL;
    ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &cpu));
    client_round_trips(cpu);
    ruda_client_release(cpu);
    printf("  cpu:0 works while cuda:0 is lost\n");
  } else {
    printf("  after the fault: the device was reset and works again\n");
    for (int i = 0; i < 256; i++) ASSERT_UEQ(back[i], 9);
  }
  ruda_handle_release(&h2);
  ruda_kernel_release(fill);
  ruda_kernel_release(bad);
}
