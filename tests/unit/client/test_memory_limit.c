/* Out of memory on the CPU backend with RUDA_CPU_MEMORY_LIMIT (its own
 * program: the limit is read when cpu:0 starts). A limit below the pool's
 * page size must not fail a request that fits (a smaller page is used), and
 * a request that does not fit fails with an OutOfMemory that names the
 * request, the limit, what the stream and the device hold and the largest
 * free block; the handle then reads as unbound and the runtime stays
 * usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

#define MIB (1024ull * 1024ull)

__attribute__((constructor)) static void set_limit(void) {
  setenv("RUDA_CPU_MEMORY_LIMIT", "4194304", 1); /* 4 MiB per stream */
}

static ruda_client_t *stream_client(void) {
  ruda_client_t *c = NULL, *s = NULL;
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_status_t e = ruda_client_create(cpu, &c);
  if (!e) e = ruda_client_on_stream(c, ruda_stream_id_next(), &s);
  ruda_client_release(c);
  if (e) {
    ruda_status_free(e);
    return NULL;
  }
  return s;
}

TEST(request_below_the_limit_gets_a_smaller_page) {
  ruda_client_t *c = stream_client();
  ASSERT_NOT_NULL(c);
  static uint8_t src[MIB], dst[MIB];
  for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 13);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, src, sizeof src, &h));
  ASSERT_OK(ruda_client_read(c, &h, dst, sizeof dst));
  ASSERT_MEM_EQ(src, dst, sizeof src);
  ASSERT_TRUE(ruda_handle_is_bound(&h));
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ASSERT_UEQ(u.bytes_in_use, MIB);
  ASSERT_ULE(u.bytes_reserved, 4 * MIB);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

TEST(out_of_memory_names_request_limit_usage_and_largest_free_block) {
  ruda_client_t *c = stream_client();
  ASSERT_NOT_NULL(c);
  ruda_handle_t a, b, small;
  ASSERT_OK(ruda_client_empty(c, 3 * MIB, &a));
  ASSERT_OK(ruda_client_empty(c, 4096, &small));
  ASSERT_OK(ruda_client_sync(c));
  /* Pages under this limit are exact-sized: a freed one is given back to
   * the storage before the next page, so no free block is left. */
  ruda_handle_release(&small);
  ASSERT_OK(ruda_client_empty(c, 2 * MIB, &b));
  ruda_status_t e = ruda_client_sync(c);
  ASSERT_NOT_NULL(e);
  ruda_status_t oom = ruda_status_find(e, RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_NOT_NULL(oom);
  ASSERT_UEQ(ruda_status_size_field(oom), 2 * MIB); /* the request, not a page */
  const char *r = ruda_status_reason(oom);
  char want[128], two[32], four[32], three[32];
  ruda_bytes_format(2 * MIB, two, sizeof two);
  ruda_bytes_format(4 * MIB, four, sizeof four);
  ruda_bytes_format(3 * MIB, three, sizeof three);
  snprintf(want, sizeof want, "cpu:0 stream %llu: tried to allocate %s (2097152 bytes)",
           (unsigned long long)ruda_client_stream(c).value, two);
  ASSERT_STR_CONTAINS(r, want);
  snprintf(want, sizeof want, "with a limit of %s", four);
  ASSERT_STR_CONTAINS(r, want);
  snprintf(want, sizeof want, "; %s in use and %s reserved on this stream", three, three);
  ASSERT_STR_CONTAINS(r, want);
  ASSERT_STR_CONTAINS(r, "reserved on the device");
  ASSERT_STR_CONTAINS(r, "largest free block 0 B");
  ruda_status_free(e);
  /* The failed allocation left the handle unbound; the stream is healthy. */
  ASSERT_FALSE(ruda_handle_is_bound(&b));
  ASSERT_TRUE(ruda_handle_is_bound(&a));
  ruda_handle_release(&b);
  ruda_handle_release(&a);
  ruda_handle_t again;
  ASSERT_OK(ruda_client_empty(c, 2 * MIB, &again));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_TRUE(ruda_handle_is_bound(&again));
  ruda_handle_release(&again);
  ruda_client_release(c);
}

TEST(request_above_the_limit_is_out_of_memory) {
  ruda_client_t *c = stream_client();
  ASSERT_NOT_NULL(c);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, 5 * MIB, &h));
  ruda_status_t e = ruda_client_sync(c);
  ruda_status_t oom = ruda_status_find(e, RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_NOT_NULL(oom);
  ASSERT_UEQ(ruda_status_size_field(oom), 5 * MIB);
  char want[64], four[32];
  ruda_bytes_format(4 * MIB, four, sizeof four);
  snprintf(want, sizeof want, "with a limit of %s", four);
  ASSERT_STR_CONTAINS(ruda_status_reason(oom), want);
  ruda_status_free(e);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
}
