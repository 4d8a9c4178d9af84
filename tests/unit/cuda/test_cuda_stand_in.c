/* The CUDA server's own code on the host-memory stand-in for the driver
 * (cuda_stand_in.c): reads and writes of every size class (the idle small
 * read, the block pool, pinned staging, the write ring), views at offsets,
 * pitched rows (2-D copies), asynchronous reads whose handles go first,
 * stale handles, usage counters, allocations the device refuses, streams
 * used from several threads, launch validation, the driver calls the fast
 * paths make (the stand-in counts them), and the stash that reclaimed
 * stream states hand their device pages to. The values
 * are read back through the CUDA server's paths, so this runs those paths
 * under the sanitizers in CI, where no GPU is. Skips where ruda was built
 * without the CUDA headers (no stand-in then). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/json_check.h"
#include "backends/cuda/cuda_internal.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_client.h"
#include "test_kernel.h"

static ruda_client_t *stand_in_client(void) {
#if !defined(RUDA_CUDA_STAND_IN)
  SKIP("built without the CUDA headers: no stand-in driver");
  return NULL;
#else
  static ruda_client_t *client;
  if (client) return client;
  ruda__cuda_loader_test_override(RUDA_CUDA_STAND_IN, NULL);
  uint32_t n = 0;
  ASSERT_OK(ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n));
  ASSERT_UEQ(n, 1);
  ruda_device_id_t id = {RUDA_DEVICE_TYPE_CUDA, 0};
  ASSERT_OK(ruda_client_create(id, &client));
  return client;
#endif
}

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 131u + seed);
}

/* Writes a pattern into a fresh buffer of `n` bytes and reads it back. */
static void round_trip(ruda_client_t *c, size_t n, uint32_t seed) {
  uint8_t *src = malloc(n), *dst = malloc(n);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  fill_pattern(src, n, seed);
  memset(dst, 0, n);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, n, &h));
  ASSERT_OK(ruda_client_write(c, &h, src, n));
  ASSERT_OK(ruda_client_read(c, &h, dst, n));
  ASSERT_MEM_EQ(dst, src, n);
  ruda_handle_release(&h);
  free(src);
  free(dst);
}

TEST(stand_in_reads_back_what_was_written_at_every_size) {
  ruda_client_t *c = stand_in_client();
  /* The idle small read (<= 256 B), the block pool (<= 64 KiB), pinned
   * staging, and writes through the ring (above one ring of chunks). */
  static const size_t sizes[] = {1, 4, 256, 257, 65536, 65537, 3u << 20, 40u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) round_trip(c, sizes[i], (uint32_t)i);
  ASSERT_OK(ruda_client_sync(c));
}

TEST(stand_in_four_byte_views_read_their_own_words) {
  ruda_client_t *c = stand_in_client();
  enum { WORDS = 1024 };
  uint32_t words[WORDS];
  for (uint32_t i = 0; i < WORDS; i++) words[i] = 0x9E3779B9u * (i + 1); /* all four bytes */
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, words, sizeof words, &h));
  for (uint32_t k = 0; k < WORDS; k += 37) {
    ruda_handle_t v = ruda_handle_clone(&h);
    ASSERT_OK(ruda_handle_offset_start(&v, 4ull * k));
    ASSERT_OK(ruda_handle_offset_end(&v, 4ull * (WORDS - k - 1)));
    uint32_t got = 0;
    ASSERT_OK(ruda_client_read(c, &v, &got, sizeof got));
    ASSERT_UEQ(got, words[k]);
    ruda_handle_release(&v);
  }
  /* A view larger than the destination is refused, and names both sizes. */
  uint32_t two[2];
  ruda_status_t s = ruda_client_read(c, &h, two, sizeof two);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "4096 bytes");
  ruda_status_free(s);
  ruda_handle_release(&h);
}

TEST(stand_in_pitched_rows_land_at_their_pitch) {
  ruda_client_t *c = stand_in_client();
  enum { ROWS = 4, COLS = 16, PITCH = 64 };
  uint8_t zero[ROWS * PITCH];
  memset(zero, 0xEE, sizeof zero);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, zero, sizeof zero, &h));
  uint8_t rows[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) rows[i] = (uint8_t)(i + 1);
  ruda_shape_t shape = ruda_shape_2d(ROWS, COLS);
  ruda_strides_t strides = {.rank = 2, .values = {PITCH, 1}};
  ASSERT_OK(ruda_client_write_tensor(c, &h, &shape, &strides, 1, rows));
  /* The whole buffer: each row at its pitch, the gaps untouched. */
  uint8_t all[ROWS * PITCH];
  ASSERT_OK(ruda_client_read(c, &h, all, sizeof all));
  for (int r = 0; r < ROWS; r++)
    for (int k = 0; k < PITCH; k++)
      ASSERT_UEQ(all[r * PITCH + k], k < COLS ? (unsigned)(r * COLS + k + 1) : 0xEEu);
  /* Read back through the same pitched view. */
  uint8_t back[ROWS * COLS];
  memset(back, 0, sizeof back);
  ASSERT_OK(ruda_client_read_tensor(c, &h, &shape, &strides, 1, back));
  ASSERT_MEM_EQ(back, rows, sizeof rows);
  /* Strides that reach past the view are refused before anything runs. */
  ruda_strides_t wide = {.rank = 2, .values = {81, 1}}; /* 3 * 81 + 16 > 256 */
  ruda_status_t s = ruda_client_read_tensor(c, &h, &shape, &wide, 1, back);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(s);
  ruda_handle_release(&h);
}

TEST(stand_in_async_reads_complete_with_their_data) {
  ruda_client_t *c = stand_in_client();
  enum { N = 4, BYTES = 100000 }; /* above the block pool: pinned staging */
  uint8_t *src = malloc((size_t)N * BYTES), *dst = calloc((size_t)N, BYTES);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  ruda_handle_t h[N];
  ruda_future_t *f[N];
  for (int i = 0; i < N; i++) {
    fill_pattern(src + (size_t)i * BYTES, BYTES, 77u + (uint32_t)i);
    ASSERT_OK(ruda_client_create_buffer(c, src + (size_t)i * BYTES, BYTES, &h[i]));
  }
  for (int i = 0; i < N; i++)
    ASSERT_OK(ruda_client_read_async(c, &h[i], dst + (size_t)i * BYTES, BYTES, &f[i]));
  /* The handles may go before their reads complete. */
  for (int i = 0; i < N; i++) ruda_handle_release(&h[i]);
  for (int i = N; i-- > 0;) ASSERT_OK(ruda_future_wait(f[i]));
  ASSERT_MEM_EQ(dst, src, (size_t)N * BYTES);
  free(src);
  free(dst);
}

TEST(stand_in_stale_handle_is_invalid_and_the_client_goes_on) {
  ruda_client_t *c = stand_in_client();
  uint32_t v = 42, got = 0;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
  ruda_handle_t stale = h;
  ruda_handle_release(&h);
  ruda_status_t s = ruda_client_read(c, &stale, &got, sizeof got);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_HANDLE);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "released");
  ruda_status_free(s);
  s = ruda_client_write(c, &stale, &v, sizeof v);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_HANDLE);
  ruda_status_free(s);
  /* NULL destination with bytes to read. */
  ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
  s = ruda_client_read(c, &h, NULL, sizeof v);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(s);
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_UEQ(got, 42);
  ruda_handle_release(&h);
}

TEST(stand_in_usage_counts_live_buffers_and_returns_to_zero) {
  ruda_client_t *c = stand_in_client();
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_memory_cleanup(c));
  ruda_memory_usage_t before;
  ASSERT_OK(ruda_client_memory_usage(c, &before));
  ruda_handle_t h[3];
  const uint64_t sizes[3] = {1000, 65536, 5u << 20};
  for (int i = 0; i < 3; i++) ASSERT_OK(ruda_client_empty(c, sizes[i], &h[i]));
  ASSERT_OK(ruda_client_sync(c));
  ruda_memory_usage_t live;
  ASSERT_OK(ruda_client_memory_usage(c, &live));
  ASSERT_UEQ(live.number_allocs, before.number_allocs + 3);
  ASSERT_UEQ(live.bytes_in_use, before.bytes_in_use + 1000 + 65536 + (5u << 20));
  for (int i = 0; i < 3; i++) ruda_handle_release(&h[i]);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_memory_cleanup(c));
  ruda_memory_usage_t after;
  ASSERT_OK(ruda_client_memory_usage(c, &after));
  ASSERT_UEQ(after.number_allocs, before.number_allocs);
  ASSERT_UEQ(after.bytes_in_use, before.bytes_in_use);
}

/* The first use of a buffer of `size` bytes: its error (the reservation
 * may be made lazily, so the failure can come with the read). */
static ruda_status_t first_use(ruda_client_t *c, uint64_t size) {
  ruda_handle_t h;
  ruda_status_t s = ruda_client_empty(c, size, &h);
  if (s) return s;
  uint8_t one;
  ruda_handle_t first = ruda_handle_clone(&h);
  s = ruda_handle_offset_end(&first, size - 1);
  if (s == NULL) s = ruda_client_read(c, &first, &one, 1);
  ruda_handle_release(&first);
  ruda_handle_release(&h);
  if (s == NULL) s = ruda_client_sync(c);
  return s;
}

TEST(stand_in_allocations_the_device_refuses_are_reported_and_the_next_works) {
  ruda_client_t *c = stand_in_client();
  /* Larger than the device's memory (8 GiB): IoError::BufferTooBig. */
  ruda_status_t s = first_use(c, 16ull << 30);
  ASSERT_NOT_NULL(s);
  ruda_status_t e = ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG);
  ASSERT_NOT_NULL(e);
  ASSERT_UEQ(ruda_status_size_field(e), 16ull << 30);
  ruda_status_free(s);
  ruda_status_free(ruda_client_sync(c));
  round_trip(c, 4096, 9);
  /* Within the device's size, refused by the driver (the stand-in maps at
   * most 1 GiB at once): IoError::OutOfMemory from CUDA_ERROR_OUT_OF_MEMORY,
   * with the stream's and the device's usage. */
  s = first_use(c, 2ull << 30);
  ASSERT_NOT_NULL(s);
  e = ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_NOT_NULL(e);
  char *text = ruda_status_to_string(s);
  ASSERT_NOT_NULL(text);
  ASSERT_STR_CONTAINS(text, "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_STR_CONTAINS(text, "2.00 GiB");
  free(text);
  ruda_status_free(s);
  ruda_status_free(ruda_client_sync(c));
  round_trip(c, 1u << 20, 10);
}

typedef struct worker_arg {
  ruda_client_t *c;
  uint32_t seed;
  int failures;
} worker_arg_t;

/* Each thread works on its own stream (the default of a client used from
 * several threads). */
static void *stream_worker(void *p) {
  worker_arg_t *a = p;
  uint8_t src[4096], dst[4096];
  for (int round = 0; round < 100; round++) {
    fill_pattern(src, sizeof src, a->seed + (uint32_t)round);
    ruda_handle_t h;
    ruda_status_t s = ruda_client_create_buffer(a->c, src, sizeof src, &h);
    if (s == NULL) s = ruda_client_read(a->c, &h, dst, sizeof dst);
    if (s != NULL || memcmp(src, dst, sizeof src) != 0) a->failures++;
    ruda_status_free(s);
    uint32_t word = 0;
    ruda_handle_t four = ruda_handle_clone(&h);
    if (ruda_handle_offset_end(&four, sizeof src - 4) == NULL &&
        ruda_client_read(a->c, &four, &word, sizeof word) == NULL) {
      uint32_t want;
      memcpy(&want, src, sizeof want);
      if (word != want) a->failures++;
    } else {
      a->failures++;
    }
    ruda_handle_release(&four);
    ruda_handle_release(&h);
  }
  return NULL;
}

TEST(stand_in_threads_on_their_own_streams_read_their_own_data) {
  ruda_client_t *c = stand_in_client();
  enum { THREADS = 3 };
  pthread_t t[THREADS];
  worker_arg_t args[THREADS];
  for (int i = 0; i < THREADS; i++) {
    args[i] = (worker_arg_t){c, 1000u * (uint32_t)(i + 1), 0};
    ASSERT_EQ(pthread_create(&t[i], NULL, stream_worker, &args[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) ASSERT_EQ(args[i].failures, 0);
}

static const char empty_src[] =
    "extern \"C\" __global__ void stand_in_empty(const unsigned long long *info) {}\n";

TEST(stand_in_launches_are_validated_against_the_device) {
  ruda_client_t *c = stand_in_client();
  ruda_status_t s = ruda__cuda_nvrtc_probe();
  if (s) {
    ruda_status_free(s);
    SKIP("NVRTC is not available to compile the test kernel");
  }
  ruda_kernel_t *k =
      test_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "stand_in_empty", empty_src, ruda_dim_new_1d(64), 0);
  ruda_kernel_args_t a = {0};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), &a));
  ASSERT_OK(ruda_client_sync(c));
  /* 65536 rudas in y: above the stand-in's grid limit of 65535. */
  s = ruda_client_launch(c, k, ruda_count_static(1, 65536, 1), &a);
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  ASSERT_NOT_NULL(text);
  ASSERT_STR_CONTAINS(text, "stand_in_empty");
  free(text);
  ruda_status_free(s);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(2, 2, 1), &a));
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
}

/* ---- Which driver calls the fast paths make ---- */

typedef unsigned long (*calls_fn)(const char *name);

/* The stand-in's call counter (the library the loader opened). */
static calls_fn stand_in_counter(void) {
#if defined(RUDA_CUDA_STAND_IN)
  void *lib = dlopen(RUDA_CUDA_STAND_IN, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NOT_NULL(lib);
  calls_fn f = NULL;
  void *sym = dlsym(lib, "ruda_stand_in_calls");
  ASSERT_NOT_NULL(sym);
  memcpy(&f, &sym, sizeof f);
  dlclose(lib); /* the loader keeps its own reference */
  return f;
#else
  SKIP("built without the CUDA headers: no stand-in driver");
  return NULL;
#endif
}

static const char *const counted[] = {
    "cuMemcpyHtoD",        "cuMemcpyDtoH",  "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
    "cuStreamSynchronize", "cuStreamQuery", "cuEventRecord",     "cuEventQuery",
    "cuEventSynchronize",  "cuMemAlloc",    "cuMemAllocAsync",   "cuMemAllocHost",
    "cuMemFree",           "cuMemFreeAsync", "cuLaunchKernel",    "cuStreamWaitEvent"};
enum { NCOUNTED = sizeof counted / sizeof counted[0] };

static void snapshot(calls_fn f, unsigned long *out) {
  for (size_t i = 0; i < NCOUNTED; i++) {
    out[i] = f(counted[i]);
    ASSERT_UNE(out[i], ULONG_MAX);
  }
}

/* Calls of `name` since `before`; NULL: of every counted entry point. */
static unsigned long since(calls_fn f, const unsigned long *before, const char *name) {
  unsigned long n = 0;
  for (size_t i = 0; i < NCOUNTED; i++)
    if (!name || strcmp(name, counted[i]) == 0) n += f(counted[i]) - before[i];
  return n;
}

TEST(stand_in_fast_paths_make_only_the_driver_calls_they_need) {
  ruda_client_t *c = stand_in_client();
  calls_fn f = stand_in_counter();
  ASSERT_UEQ(f("cuMemcpyDtoHAsync_v2"), ULONG_MAX); /* names without the suffix */
  uint32_t v = 0x5eed1234u, got = 0;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
  ASSERT_OK(ruda_client_sync(c));
  unsigned long before[NCOUNTED];

  /* A small read of an idle stream: one copy into the stream's pinned
   * scratch and one wait, like cuMemcpyDtoH (no event, no allocation). */
  snapshot(f, before);
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_UEQ(got, v);
  ASSERT_UEQ(since(f, before, "cuMemcpyDtoHAsync"), 1);
  ASSERT_UEQ(since(f, before, "cuStreamSynchronize"), 1);
  ASSERT_UEQ(since(f, before, NULL), 2);

  /* Nothing enqueued since: a sync answers without the driver. */
  snapshot(f, before);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_UEQ(since(f, before, NULL), 0);

  /* Released and reserved again at the same size: from the reuse cache. */
  snapshot(f, before);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_empty(c, sizeof v, &h));
  ASSERT_UEQ(since(f, before, NULL), 0);
  /* The write after it is one copy; a read behind it waits for it with an
   * event instead (the stream is not idle). */
  v = 0xfeedbeefu;
  snapshot(f, before);
  ASSERT_OK(ruda_client_write(c, &h, &v, sizeof v));
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_UEQ(got, v);
  ASSERT_UEQ(since(f, before, "cuMemcpyHtoDAsync"), 1);
  ASSERT_UEQ(since(f, before, "cuMemcpyDtoHAsync"), 1);
  ASSERT_UEQ(since(f, before, "cuEventRecord"), 1);
  ruda_handle_release(&h);
}

/* One state each on `n` new streams from `base`: a 4-byte buffer written
 * and read back (the state takes a device page), or pinned staging only
 * (no device page). Each stream is left idle, so that states beyond
 * streaming.max_streams (128) are reclaimed. */
static void touch_streams(ruda_client_t *c, uint64_t base, uint32_t n, bool device) {
  for (uint32_t i = 0; i < n; i++) {
    ruda_client_t *sc = NULL;
    ruda_stream_id_t id = {base + i};
    ASSERT_OK(ruda_client_on_stream(c, id, &sc));
    if (device) {
      uint32_t v = 0xab000000u + i, got = 0;
      ruda_handle_t h;
      ASSERT_OK(ruda_client_create_buffer(sc, &v, sizeof v, &h));
      ASSERT_OK(ruda_client_read(sc, &h, &got, sizeof got));
      ASSERT_UEQ(got, v);
      ruda_handle_release(&h);
    } else {
      uint64_t size = 64;
      ruda_bytes_t b;
      ASSERT_OK(ruda_client_staging(sc, &size, 1, &b));
      ruda_bytes_release(&b);
    }
    ASSERT_OK(ruda_client_sync(sc));
    ruda_client_release(sc);
  }
}

/* Reclaimed states give their device pages (cuMemAlloc) to the server's
 * stash, not to cuMemFree (which waits for the whole device), and new
 * states take them from there. */
TEST(stand_in_reclaimed_streams_pass_their_pages_on_without_cuMemFree) {
  ruda_client_t *c = stand_in_client();
  calls_fn f = stand_in_counter();
  enum { STREAMS = 400, MAX_STREAMS = 128 };
  unsigned long before[NCOUNTED];
  snapshot(f, before);
  touch_streams(c, 1ull << 40, STREAMS, true);
  ASSERT_UEQ(since(f, before, "cuMemFree"), 0);
  ASSERT_UEQ(since(f, before, "cuMemFreeAsync"), 0);
  /* One page per state: only the states alive at once asked the driver. */
  unsigned long allocs = since(f, before, "cuMemAlloc");
  ASSERT_TRUE(allocs > 0);
  ASSERT_TRUE(allocs <= MAX_STREAMS + 8);
}

/* The stash counts in the device's usage; an allocation the driver refuses
 * frees it and tries once more, and so does a cleanup. */
TEST(stand_in_the_stash_is_counted_and_freed_when_memory_runs_out_or_on_cleanup) {
  ruda_client_t *c = stand_in_client();
  calls_fn f = stand_in_counter();
  enum { STREAMS = 200, STASHED = 64 };
  unsigned long before[NCOUNTED];
  ruda_memory_usage_t held, after;
  for (int round = 0; round < 2; round++) {
    uint64_t base = (2ull + (uint64_t)round) << 40;
    /* States with a page each, then states without: the first ones are
     * reclaimed into the stash, and nothing takes their pages. */
    touch_streams(c, base, STREAMS, true);
    touch_streams(c, base + STREAMS, STREAMS, false);
    ASSERT_OK(ruda_client_memory_usage_device(c, &held));
    snapshot(f, before);
    if (round == 0) {
      ruda_status_t s = first_use(c, 2ull << 30); /* the stand-in maps at most 1 GiB */
      ASSERT_NOT_NULL(s);
      ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY));
      ruda_status_free(s);
      ruda_status_free(ruda_client_sync(c));
    } else {
      ASSERT_OK(ruda_client_memory_cleanup(c));
      ASSERT_OK(ruda_client_sync(c));
    }
    ASSERT_TRUE(since(f, before, "cuMemFree") >= STASHED);
    ASSERT_OK(ruda_client_memory_usage_device(c, &after));
    ASSERT_UEQ(after.number_allocs, held.number_allocs);
    ASSERT_TRUE(after.bytes_reserved + STASHED * 4096ull <= held.bytes_reserved);
    round_trip(c, 4096, 11 + (uint32_t)round);
  }
}

/* ---- Buffers used on another stream ---- */

/* A stream that uses a buffer of another stream waits for that stream's
 * work once per new work there (an event), and keeps the buffer's memory
 * until its own work is done: released, the memory returns after syncs. */
TEST(stand_in_a_buffer_used_on_another_stream_waits_for_its_stream_once) {
  ruda_client_t *c = stand_in_client();
  calls_fn f = stand_in_counter();
  ruda_client_t *other = NULL;
  ASSERT_OK(ruda_client_on_stream(c, (ruda_stream_id_t){77001}, &other));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_memory_cleanup(c));
  ruda_memory_usage_t start = test_client_usage(c);
  enum { N = 4096 };
  uint8_t src[N], dst[N];
  fill_pattern(src, N, 21);
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, src, N, &h));
  unsigned long before[NCOUNTED];
  snapshot(f, before);
  ASSERT_OK(ruda_client_read(other, &h, dst, N));
  ASSERT_MEM_EQ(dst, src, N);
  ASSERT_UEQ(since(f, before, "cuStreamWaitEvent"), 1);
  /* Nothing new on the buffer's stream: no second wait. */
  snapshot(f, before);
  ASSERT_OK(ruda_client_read(other, &h, dst, N));
  ASSERT_UEQ(since(f, before, "cuStreamWaitEvent"), 0);
  /* New work there: waited for again, and its data is what is read. */
  fill_pattern(src, N, 22);
  ASSERT_OK(ruda_client_write(c, &h, src, N));
  snapshot(f, before);
  ASSERT_OK(ruda_client_read(other, &h, dst, N));
  ASSERT_MEM_EQ(dst, src, N);
  ASSERT_UEQ(since(f, before, "cuStreamWaitEvent"), 1);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_sync(other));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_memory_cleanup(c));
  test_expect_usage(test_client_usage(c), start.number_allocs, start.bytes_in_use);
  ruda_client_release(other);
}

static const char one_buffer_src[] =
    "extern \"C\" __global__ void stand_in_one(unsigned int *b, const unsigned long long *info) "
    "{}\n";

/* A launch takes its buffers through the same pipeline: one of another
 * stream is waited for once, and the launch reaches the driver. */
TEST(stand_in_a_launch_on_another_stream_waits_for_its_buffer_once) {
  ruda_client_t *c = stand_in_client();
  ruda_status_t s = ruda__cuda_nvrtc_probe();
  if (s) {
    ruda_status_free(s);
    SKIP("NVRTC is not available to compile the test kernel");
  }
  calls_fn f = stand_in_counter();
  ruda_client_t *other = NULL;
  ASSERT_OK(ruda_client_on_stream(c, (ruda_stream_id_t){77002}, &other));
  ruda_kernel_t *k =
      test_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "stand_in_one", one_buffer_src, ruda_dim_new_1d(32), 0);
  uint32_t v = 7;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
  ruda_kernel_args_t a = {0};
  a.buffers = &h;
  a.num_buffers = 1;
  unsigned long before[NCOUNTED];
  snapshot(f, before);
  ASSERT_OK(ruda_client_launch(other, k, ruda_count_static(1, 1, 1), &a));
  ASSERT_OK(ruda_client_launch(other, k, ruda_count_static(1, 1, 1), &a));
  ASSERT_OK(ruda_client_sync(other));
  ASSERT_UEQ(since(f, before, "cuLaunchKernel"), 2);
  ASSERT_UEQ(since(f, before, "cuStreamWaitEvent"), 1);
  uint32_t got = 0;
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_UEQ(got, v);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  ruda_client_release(other);
}

/* ---- The trace, bracketed by the server layer's pipeline ---- */

/* The "X" slice of category `cat` named `name`, NULL if none. */
static const jv_t *trace_slice(const jv_t *events, const char *cat, const char *name) {
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    const char *p = jv_str(e, "ph"), *c = jv_str(e, "cat"), *n = jv_str(e, "name");
    if (p && c && n && !strcmp(p, "X") && !strcmp(c, cat) && !strcmp(n, name)) return e;
  }
  return NULL;
}

static double trace_bytes(const jv_t *e) {
  const jv_t *b = jv_get(jv_get(e, "args"), "bytes");
  return b && b->type == JV_NUM ? b->num : -1;
}

/* Last in this file: the trace is the process's, and stopped here. The
 * slices docs/tools.md lists (the conformance suite's trace test on
 * cuda:0), launches and copies timed by the device's events. */
TEST(stand_in_the_trace_has_every_category_and_device_times) {
  ruda_client_t *c = stand_in_client();
  char path[512];
  snprintf(path, sizeof path, "%s/stand_in_trace.json", rt_tmpdir());
  ruda_status_t started = ruda_trace_start(path);
  if (!started && !ruda_trace_active()) SKIP("no trace");
  ASSERT_OK(started);
  ruda_status_t s = ruda__cuda_nvrtc_probe();
  bool nvrtc = s == NULL;
  ruda_status_free(s);
  uint32_t v[64] = {7};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h)); /* copy: write */
  ruda_kernel_t *k = NULL;
  if (nvrtc) {
    k = test_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "stand_in_one", one_buffer_src,
                    ruda_dim_new_1d(32), 0);
    ruda_kernel_args_t a = {0};
    a.buffers = &h;
    a.num_buffers = 1;
    ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a)); /* kernel */
  }
  ASSERT_OK(ruda_client_sync(c));
  uint32_t got[64] = {0};
  ASSERT_OK(ruda_client_read(c, &h, got, sizeof got)); /* copy: read */
  ASSERT_UEQ(got[0], 7);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&h);
  if (k) ruda_kernel_release(k);
  ruda_trace_stop();

  char *text = rt_read_file(path);
  ASSERT_NOT_NULL(text);
  char err[128];
  jv_t *root = jv_parse(text, err, sizeof err);
  free(text);
  ASSERT_NOT_NULL(root);
  const jv_t *events = jv_get(root, "traceEvents");
  ASSERT_NOT_NULL(events);
  const jv_t *w = trace_slice(events, "copy", "write");
  const jv_t *r = trace_slice(events, "copy", "read");
  ASSERT_NOT_NULL(w);
  ASSERT_NOT_NULL(r);
  ASSERT_TRUE(trace_bytes(w) == (double)sizeof v);
  ASSERT_TRUE(trace_bytes(r) == (double)sizeof got);
  /* The stand-in's events time everything at 1 us. */
  const jv_t *dur = jv_get(r, "dur");
  ASSERT_NOT_NULL(dur);
  ASSERT_TRUE(dur->num > 0.5 && dur->num < 1.5);
  if (nvrtc) ASSERT_NOT_NULL(trace_slice(events, "kernel", "stand_in_one"));
  ASSERT_NOT_NULL(trace_slice(events, "sync", "sync"));
  const jv_t *alloc = trace_slice(events, "alloc", "alloc");
  ASSERT_NOT_NULL(alloc);
  ASSERT_TRUE(trace_bytes(alloc) == (double)sizeof v);
  jv_free(root);
}
