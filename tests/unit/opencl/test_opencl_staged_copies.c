/* Pageable writes and reads staged through pinned memory (opencl_copy.c),
 * forced on with a 64 KiB threshold and two copy threads so that they run
 * on any OpenCL device, PoCL included: every byte lands at any offset and
 * size around the chunk edges, both ways, a staged write keeps its place
 * between kernels on its stream, transfers below the threshold or of
 * pitched layouts take the plain path, and a staged write past its view
 * is refused before any staging. Skips without an OpenCL device. */
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

TEST(opencl_backend_not_built) {
  SKIP_UNAVAILABLE("opencl", "ruda was built without the OpenCL headers");
}

#else

#include "backends/opencl/opencl_copy.h"
#include "opencl_test_util.h"

/* Before any server exists: the settings are read when it is created. */
__attribute__((constructor)) static void stage_everything(void) {
  setenv("RUDA_OPENCL_STAGE_MIN_KIB", "64", 1);
  setenv("RUDA_OPENCL_COPY_THREADS", "2", 1);
}

/* Adds info[1] to the first info[0] u32 of its buffer (launched by
 * ocl_launch_over). */
static const char add_src[] =
    "__kernel void add(__global uint *b, __global const ulong *info) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i < info[0]) b[i] += (uint)info[1];\n"
    "}\n";

static uint8_t *pattern(size_t n, uint32_t seed) {
  uint8_t *p = malloc(n);
  ASSERT_NOT_NULL(p);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
  return p;
}

TEST(staged_transfers_land_whole_at_any_offset_and_size) {
  ruda_client_t *c = client();
  const size_t total = (19u << 20) + 4096;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, total, &h));
  uint8_t *zero = calloc(total, 1), *back = malloc(total);
  ASSERT_NOT_NULL(zero);
  ASSERT_NOT_NULL(back);
  ASSERT_OK(ruda_client_write(c, &h, zero, total)); /* staged too */
  /* At the threshold, one chunk and a byte, several chunks and an odd
   * tail, at offsets of a page, an alignment unit and more. */
  const struct {
    uint64_t offset, size;
  } cases[] = {
      {0, 64u << 10}, {4096, (1u << 20) + 1}, {1u << 20, (17u << 20) + 4097}, {0, total}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t before = ruda__ocl_staged_writes();
    uint8_t *src = pattern(cases[i].size, (uint32_t)i + 1);
    ruda_handle_t v = ruda_handle_clone(&h);
    ASSERT_OK(ruda_handle_offset_start(&v, cases[i].offset));
    ASSERT_OK(ruda_handle_offset_end(&v, total - cases[i].offset - cases[i].size));
    ASSERT_OK(ruda_client_write(c, &v, src, cases[i].size));
    ASSERT_OK(ruda_client_sync(c)); /* a write below 1 MiB is queued, not waited for */
    ASSERT_UEQ(ruda__ocl_staged_writes(), before + 1);
    uint64_t reads = ruda__ocl_staged_reads();
    memset(back, 0xee, total);
    ASSERT_OK(ruda_client_read(c, &h, back, total));
    ASSERT_TRUE(memcmp(back + cases[i].offset, src, cases[i].size) == 0);
    /* The view alone, read through staging at its offset. */
    bool room = cases[i].size < total; /* for a byte past the read */
    memset(back, 0xee, cases[i].size + room);
    ASSERT_OK(ruda_client_read(c, &v, back, cases[i].size));
    ASSERT_TRUE(memcmp(back, src, cases[i].size) == 0);
    if (room) ASSERT_UEQ(back[cases[i].size], 0xee);
    ASSERT_UEQ(ruda__ocl_staged_reads(), reads + 2);
    ASSERT_OK(ruda_client_read(c, &h, back, total));
    /* Around the view: what the write before left there. */
    if (cases[i].offset > 0) ASSERT_UEQ(back[cases[i].offset - 1], 0);
    if (cases[i].offset + cases[i].size < total) ASSERT_UEQ(back[cases[i].offset + cases[i].size], 0);
    ASSERT_OK(ruda_client_write(c, &h, zero, total));
    ruda_handle_release(&v);
    free(src);
  }
  free(zero);
  free(back);
  ruda_handle_release(&h);
}

TEST(a_staged_write_keeps_its_place_between_kernels) {
  ruda_client_t *c = client();
  const size_t n = (5u << 20) / 4 + 3; /* u32 */
  ruda_kernel_t *k = ocl_kernel("add", add_src, ruda_dim_new_1d(64), 0);
  uint32_t *src = malloc(n * 4), *back = malloc(n * 4);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(back);
  for (size_t i = 0; i < n; i++) src[i] = (uint32_t)i * 3u;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, n * 4, &h));
  for (int round = 0; round < 3; round++) {
    ASSERT_OK(ocl_launch_over(c, k, &h, n, 1000)); /* overwritten by the write after it */
    uint64_t before = ruda__ocl_staged_writes();
    ASSERT_OK(ruda_client_write(c, &h, src, n * 4));
    ASSERT_UEQ(ruda__ocl_staged_writes(), before + 1);
    ASSERT_OK(ocl_launch_over(c, k, &h, n, (uint32_t)round + 1)); /* sees the whole write */
    ASSERT_OK(ruda_client_read(c, &h, back, n * 4));
    for (size_t i = 0; i < n; i += 4093) ASSERT_UEQ(back[i], (uint32_t)i * 3u + round + 1);
    ASSERT_UEQ(back[n - 1], (uint32_t)(n - 1) * 3u + round + 1);
  }
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
  ruda_handle_release(&h);
  free(src);
  free(back);
}

TEST(small_and_pitched_transfers_are_not_staged_and_a_write_past_its_view_is_refused) {
  ruda_client_t *c = client();
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 4u << 20, &h));
  uint8_t *src = pattern(4u << 20, 9);
  uint64_t before = ruda__ocl_staged_writes();
  ASSERT_OK(ruda_client_write(c, &h, src, (64u << 10) - 1));
  /* 1024 rows of 1024 bytes, 4096 bytes apart. */
  ruda_shape_t shape = ruda_shape_2d(1024, 1024);
  ruda_strides_t strides = {2, {4096, 1}};
  ASSERT_OK(ruda_client_write_tensor(c, &h, &shape, &strides, 1, src));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_UEQ(ruda__ocl_staged_writes(), before);
  uint8_t *tile = malloc(1u << 20);
  ASSERT_NOT_NULL(tile);
  uint64_t reads = ruda__ocl_staged_reads();
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 1, tile));
  ASSERT_TRUE(memcmp(tile, src, 1u << 20) == 0);
  ruda_handle_t head = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_end(&head, (4u << 20) - ((64u << 10) - 1)));
  ASSERT_OK(ruda_client_read(c, &head, tile, (64u << 10) - 1));
  /* Row 0 of the pitched write, then the plain write's bytes up to row 1. */
  ASSERT_TRUE(memcmp(tile, src, 4096) == 0);
  ASSERT_TRUE(memcmp(tile + 4096, src + 1024, 1024) == 0); /* row 1 */
  ruda_handle_release(&head);
  ASSERT_UEQ(ruda__ocl_staged_reads(), reads);
  /* 4 MiB + 1 into a 4 MiB view: an error, and the stream goes on. */
  uint8_t *big = pattern((4u << 20) + 1, 3);
  ruda_status_t s = ruda_client_write(c, &h, big, (4u << 20) + 1);
  if (s == NULL) s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ruda_status_free(s);
  ASSERT_UEQ(ruda__ocl_staged_writes(), before);
  ASSERT_OK(ruda_client_write(c, &h, src, 4u << 20));
  ASSERT_UEQ(ruda__ocl_staged_writes(), before + 1);
  uint8_t *back = malloc(4u << 20);
  ASSERT_NOT_NULL(back);
  ASSERT_OK(ruda_client_read(c, &h, back, 4u << 20));
  ASSERT_TRUE(memcmp(back, src, 4u << 20) == 0);
  free(back);
  free(big);
  free(tile);
  free(src);
  ruda_handle_release(&h);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
