/* Conformance: streams own their errors, memory and profiles, however many
 * streams have existed (more than [streaming] max_streams over time); memory
 * used across streams returns to the baseline once both sides are done;
 * dispatch counts that cannot run are rejected; profiling tokens; the
 * device-wide memory report. */

#include "cts.h"

/* Ids far above those ruda_stream_id_next() hands out in this program. */
#define IDS (1ull << 40)

static ruda_client_t *on_stream(uint64_t id) {
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_on_stream(cts_client(), (ruda_stream_id_t){id}, &c));
  return c;
}

/* A launch that fails on the device on every backend (no code it can
 * run), queued on `c`'s stream. */
static void queue_launch_error(ruda_client_t *c) {
  ruda_kernel_t *k = cts_kernel_unrunnable();
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL));
  ruda_kernel_release(k);
}

/* Exactly `n` queued errors, each a compilation error of that launch. */
static void expect_launch_errors(ruda_status_t s, size_t n) {
  if (n == 0) {
    ASSERT_OK(s);
    return;
  }
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_UEQ(ruda_status_error_count(s), n);
  for (size_t i = 0; i < n; i++) {
    ASSERT_NOT_NULL(ruda_status_find(ruda_status_error_at(s, i), RUDA_ERR_LAUNCH_COMPILATION));
  }
  ruda_status_free(s);
}

TEST(streams_1000_and_1128_have_their_own_errors_and_memory) {
  ruda_client_t *a = on_stream(IDS + 1000);
  ruda_client_t *b = on_stream(IDS + 1128);
  ruda_client_t *c1000 = on_stream(1000), *c1128 = on_stream(1128);
  ruda_client_t *pairs[2][2] = {{a, b}, {c1000, c1128}};
  for (int p = 0; p < 2; p++) {
    ruda_client_t *x = pairs[p][0], *y = pairs[p][1];
    ruda_handle_t hx, hy;
    ASSERT_OK(ruda_client_empty(x, 4096, &hx));
    ASSERT_OK(ruda_client_empty(y, 64, &hy));
    queue_launch_error(x);
    /* y is healthy and its usage is its own. */
    ASSERT_OK(ruda_client_sync(y));
    ruda_memory_usage_t uy;
    ASSERT_OK(ruda_client_memory_usage(y, &uy));
    ASSERT_UEQ(uy.number_allocs, 1);
    ASSERT_UEQ(uy.bytes_in_use, 64);
    /* x reports its own failure at its own sync, once. */
    ruda_memory_usage_t ux;
    ASSERT_ERR_KIND(ruda_client_memory_usage(x, &ux), RUDA_ERR_SERVER_UNHEALTHY);
    expect_launch_errors(ruda_client_sync(x), 1);
    ASSERT_OK(ruda_client_sync(x));
    ASSERT_OK(ruda_client_memory_usage(x, &ux));
    ASSERT_UEQ(ux.number_allocs, 1);
    ASSERT_UEQ(ux.bytes_in_use, 4096);
    ruda_handle_release(&hx);
    ruda_handle_release(&hy);
  }
  ruda_client_release(a);
  ruda_client_release(b);
  ruda_client_release(c1000);
  ruda_client_release(c1128);
}

TEST(errors_reach_exactly_their_stream_over_hundreds_of_streams) {
  /* More streams than max_streams (128 by default), all holding an error
   * at once, then many more streams over time that come and go. */
  enum { BUSY = 200, OVER_TIME = 300 };
  ruda_client_t *cs[BUSY];
  for (int i = 0; i < BUSY; i++) {
    cs[i] = on_stream(IDS + 10000 + (uint64_t)i * 128); /* the same slot mod 128 */
    for (int k = 0; k < i % 3; k++) queue_launch_error(cs[i]);
  }
  for (int round = 0; round < OVER_TIME; round++) {
    ruda_client_t *c = on_stream(IDS + 100000 + (uint64_t)round);
    ruda_handle_t h;
    uint32_t v = (uint32_t)round, back = 0;
    ASSERT_OK(ruda_client_create_buffer(c, &v, sizeof v, &h));
    ASSERT_OK(ruda_client_read(c, &h, &back, sizeof back));
    ASSERT_UEQ(back, (uint32_t)round);
    ruda_handle_release(&h);
    ASSERT_OK(ruda_client_sync(c));
    ruda_client_release(c);
  }
  for (int i = BUSY - 1; i >= 0; i--) {
    expect_launch_errors(ruda_client_sync(cs[i]), (size_t)(i % 3));
    ASSERT_OK(ruda_client_sync(cs[i]));
    ruda_client_release(cs[i]);
  }
}

TEST(memory_stays_with_its_stream_while_many_streams_come_and_go) {
  ruda_client_t *keep = on_stream(IDS + 500000);
  ruda_handle_t h;
  uint8_t data[3000];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7);
  ASSERT_OK(ruda_client_create_buffer(keep, data, sizeof data, &h));
  ruda_memory_usage_t before;
  ASSERT_OK(ruda_client_memory_usage(keep, &before));
  ASSERT_UEQ(before.number_allocs, 1);
  ASSERT_UEQ(before.bytes_in_use, sizeof data);
  for (uint64_t i = 0; i < 200; i++) {
    ruda_client_t *c = on_stream(IDS + 600000 + i);
    ruda_handle_t t = cts_empty(c, 128);
    ruda_memory_usage_t u;
    ASSERT_OK(ruda_client_memory_usage(c, &u));
    ASSERT_UEQ(u.number_allocs, 1);
    ASSERT_UEQ(u.bytes_in_use, 128);
    ruda_handle_release(&t);
    ruda_client_release(c);
  }
  /* The buffer and its stream's pools are intact. */
  ruda_memory_usage_t after;
  ASSERT_OK(ruda_client_memory_usage(keep, &after));
  ASSERT_UEQ(after.number_allocs, 1);
  ASSERT_UEQ(after.bytes_in_use, sizeof data);
  uint8_t back[sizeof data];
  ASSERT_OK(ruda_client_read(keep, &h, back, sizeof back));
  ASSERT_MEM_EQ(back, data, sizeof data);
  /* Read from other streams too (cross-stream use of a long-lived buffer). */
  ruda_client_t *other = on_stream(IDS + 700000);
  memset(back, 0, sizeof back);
  ASSERT_OK(ruda_client_read(other, &h, back, sizeof back));
  ASSERT_MEM_EQ(back, data, sizeof data);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_sync(other));
  ruda_client_release(other);
  ruda_client_release(keep);
}

TEST(a_stream_keeps_its_allocation_mode_while_idle) {
  /* persistent_memory is "enabled" by default: the mode is honoured. */
  ruda_client_t *c = on_stream(IDS + 800000);
  ASSERT_OK(ruda_client_allocation_mode(c, RUDA_ALLOCATION_PERSISTENT));
  for (uint64_t i = 0; i < 160; i++) {
    ruda_client_t *o = on_stream(IDS + 800001 + i);
    ASSERT_OK(ruda_client_sync(o));
    ruda_handle_t t = cts_empty(o, 64);
    ruda_handle_release(&t);
    ruda_client_release(o);
  }
  ruda_handle_t h = cts_empty(c, 1024);
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  /* Persistent: a slice of exactly the request, no page around it. */
  ASSERT_UEQ(u.bytes_reserved, 1024);
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_allocation_mode(c, RUDA_ALLOCATION_AUTO));
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
}

/* ---- Cross-stream use returns memory ---- */

TEST(memory_returns_to_baseline_after_cross_stream_use) {
  ruda_client_t *producer = cts_fresh_stream_client();
  ruda_client_t *consumer = cts_fresh_stream_client();
  ruda_memory_usage_t base_p, base_c;
  ASSERT_OK(ruda_client_memory_usage(producer, &base_p));
  ASSERT_OK(ruda_client_memory_usage(consumer, &base_c));
  enum { BUFS = 64, N = 1 << 14 };
  ruda_handle_t in[BUFS], out[BUFS];
  ruda_kernel_t *fill = cts_kernel_fill_u32();
  for (uint32_t i = 0; i < BUFS; i++) {
    ASSERT_OK(ruda_client_empty(producer, N * 4, &in[i]));
    uint64_t info[2] = {N, i + 1};
    ruda_kernel_args_t args = {.buffers = &in[i], .num_buffers = 1, .info = {info, 2, 2}};
    ASSERT_OK(ruda_client_launch(producer, fill, ruda_count_static(N / CTS_UNITS, 1, 1), &args));
  }
  /* The consumer reads every buffer and launches on it, writing into its
   * own memory too. */
  ruda_kernel_t *add = cts_kernel_add_f32();
  for (uint32_t i = 0; i < BUFS; i++) {
    uint32_t tail[4];
    ruda_handle_t view = ruda_handle_clone(&in[i]);
    ASSERT_OK(ruda_handle_offset_start(&view, (N - 4) * 4));
    ASSERT_OK(ruda_client_read(consumer, &view, tail, sizeof tail));
    ASSERT_UEQ(tail[3], i + 1);
    ruda_handle_release(&view);
    ASSERT_OK(ruda_client_empty(consumer, N * 4, &out[i]));
    ruda_handle_t bufs[3] = {in[i], in[i], out[i]};
    uint64_t info[1] = {N};
    ruda_kernel_args_t args = {.buffers = bufs, .num_buffers = 3, .info = {info, 1, 1}};
    ASSERT_OK(ruda_client_launch(consumer, add, ruda_count_static(N / CTS_UNITS, 1, 1), &args));
  }
  ASSERT_OK(ruda_client_sync(consumer));
  ASSERT_OK(ruda_client_sync(producer));
  for (uint32_t i = 0; i < BUFS; i++) {
    ruda_handle_release(&in[i]);
    ruda_handle_release(&out[i]);
  }
  ruda_memory_usage_t p, c;
  ASSERT_OK(ruda_client_memory_usage(producer, &p));
  ASSERT_OK(ruda_client_memory_usage(consumer, &c));
  ASSERT_UEQ(p.number_allocs, base_p.number_allocs);
  ASSERT_UEQ(p.bytes_in_use, base_p.bytes_in_use);
  ASSERT_UEQ(c.number_allocs, base_c.number_allocs);
  ASSERT_UEQ(c.bytes_in_use, base_c.bytes_in_use);
  ruda_kernel_release(fill);
  ruda_kernel_release(add);
  ruda_client_release(producer);
  ruda_client_release(consumer);
}

/* ---- Dispatch counts that cannot run ---- */

static ruda_status_t launch_and_sync(ruda_client_t *c, ruda_count_t count, ruda_handle_t *buf) {
  ruda_status_t s = cts_fill_u32(c, buf, CTS_UNITS, 9, count);
  if (s) return s;
  return ruda_client_sync(c);
}

TEST(dynamic_count_from_fewer_than_12_bytes_is_a_launch_error) {
  ruda_client_t *c = cts_fresh_stream_client();
  uint32_t out[CTS_UNITS] = {0};
  ruda_handle_t h = cts_upload(c, out, sizeof out);
  uint32_t xyz[4] = {1, 1, 1, 0};
  ruda_handle_t small, big;
  ASSERT_OK(ruda_client_create_buffer(c, xyz, 8, &small));
  ASSERT_OK(ruda_client_create_buffer(c, xyz, sizeof xyz, &big));
  ruda_handle_t view8 = ruda_handle_clone(&big);
  ASSERT_OK(ruda_handle_offset_end(&view8, 8)); /* 8 of 16 bytes */
  ruda_handle_t *bad[2] = {&small, &view8};
  for (int i = 0; i < 2; i++) {
    ruda_status_t s = launch_and_sync(c, ruda_count_dynamic(bad[i]), &h);
    ASSERT_NOT_NULL(s);
    ruda_status_t e = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN);
    ASSERT_NOT_NULL(e);
    ASSERT_STR_CONTAINS(ruda_status_reason(e), "fill_u32");
    ASSERT_STR_CONTAINS(ruda_status_reason(e), "12 bytes");
    ruda_status_free(s);
    uint32_t back[CTS_UNITS];
    ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
    ASSERT_UEQ(back[0], 0); /* nothing ran */
  }
  /* 12 bytes of a 16-byte buffer are enough. */
  ruda_handle_t view12 = ruda_handle_clone(&big);
  ASSERT_OK(ruda_handle_offset_end(&view12, 4));
  ASSERT_OK(launch_and_sync(c, ruda_count_dynamic(&view12), &h));
  uint32_t back[CTS_UNITS];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  ASSERT_UEQ(back[CTS_UNITS - 1], 9);
  ruda_handle_release(&view12);
  ruda_handle_release(&view8);
  ruda_handle_release(&small);
  ruda_handle_release(&big);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

TEST(dispatch_counts_whose_ruda_total_overflows_are_rejected) {
  ruda_client_t *c = cts_fresh_stream_client();
  uint32_t out[CTS_UNITS] = {0};
  ruda_handle_t h = cts_upload(c, out, sizeof out);
  ruda_count_t counts[2] = {ruda_count_static(1u << 22, 1u << 21, 1u << 21),
                            ruda_count_static(UINT32_MAX, UINT32_MAX, 2)};
  for (int i = 0; i < 2; i++) {
    /* Refused at the call (the client knows the device's limits), naming
     * the kernel; nothing is queued. */
    ruda_kernel_t *k = cts_kernel_fill_u32();
    uint64_t info[2] = {CTS_UNITS, 9};
    ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 2, 2}};
    ruda_status_t s = ruda_client_launch(c, k, counts[i], &args);
    ruda_kernel_release(k);
    ASSERT_NOT_NULL(s);
    ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
    ASSERT_OK(ruda_client_sync(c));
    /* Over an axis's limit: TooManyResources(RudaCount); within every
     * axis but past 64 bits in all: LaunchError::Unknown. */
    ruda_status_t e = ruda_status_find(s, RUDA_ERR_RESOURCE_RUDA_COUNT);
    if (!e) e = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN);
    ASSERT_NOT_NULL(e);
    char text[1024];
    ruda_status_format(s, text, sizeof text);
    /* The kernel, the value and the limit. */
    ASSERT_STR_CONTAINS(text, "fill_u32");
    char value[64];
    snprintf(value, sizeof value, "(%u, %u, %u)", counts[i].fixed.x, counts[i].fixed.y,
             counts[i].fixed.z);
    ASSERT_STR_CONTAINS(text, value);
    ASSERT_TRUE(strstr(text, "max is") != NULL || strstr(text, "18446744073709551615") != NULL);
    ruda_status_free(s);
  }
  uint32_t back[CTS_UNITS];
  ASSERT_OK(ruda_client_read(c, &h, back, sizeof back));
  ASSERT_UEQ(back[0], 0);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

/* ---- Profiling tokens ---- */

static void launch_fill(ruda_client_t *c, ruda_handle_t *h, uint32_t value, uint32_t n) {
  ruda_kernel_t *k = cts_kernel_fill_u32();
  uint64_t info[2] = {n, value};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(n / CTS_UNITS, 1, 1), &args));
  ruda_kernel_release(k);
}

TEST(profile_tokens_nest_overlap_and_reject_unknown_ones) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_client_t *other = cts_fresh_stream_client();
  enum { N = 1 << 16 };
  ruda_handle_t h = cts_empty(c, N * 4);
  ruda_profiling_token_t outer, inner, foreign;
  ASSERT_OK(ruda_client_profile_start(c, &outer));
  launch_fill(c, &h, 1, N);
  ASSERT_OK(ruda_client_profile_start(c, &inner));
  ASSERT_OK(ruda_client_profile_start(other, &foreign));
  ASSERT_UNE(outer.id, inner.id);
  ASSERT_UNE(inner.id, foreign.id);
  launch_fill(c, &h, 2, N);
  ruda_profile_duration_t d_outer, d_inner, d;
  /* Overlapping: the outer ends before the inner. */
  ASSERT_OK(ruda_client_profile_end(c, outer, &d_outer));
  launch_fill(c, &h, 3, N);
  ASSERT_OK(ruda_client_profile_end(c, inner, &d_inner));
  ASSERT_UGT(ruda_profile_duration_ns(d_outer), 0);
  ASSERT_UGT(ruda_profile_duration_ns(d_inner), 0);
  ASSERT_UGE(d_outer.end_ns, d_outer.start_ns);
  /* Ended twice, never handed out, or open on another stream. */
  ASSERT_ERR_KIND(ruda_client_profile_end(c, outer, &d), RUDA_ERR_PROFILE_NOT_REGISTERED);
  ASSERT_ERR_KIND(ruda_client_profile_end(c, (ruda_profiling_token_t){UINT64_MAX}, &d),
                  RUDA_ERR_PROFILE_NOT_REGISTERED);
  ASSERT_ERR_KIND(ruda_client_profile_end(c, foreign, &d), RUDA_ERR_PROFILE_NOT_REGISTERED);
  ASSERT_OK(ruda_client_profile_end(other, foreign, &d));
  ASSERT_ERR_KIND(ruda_client_profile_start(NULL, &outer), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_client_profile_end(c, outer, NULL), RUDA_ERR_INVALID_ARGUMENT);
  uint32_t v[4];
  ruda_handle_t view = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_start(&view, N * 4 - sizeof v));
  ASSERT_OK(ruda_client_read(c, &view, v, sizeof v));
  ASSERT_UEQ(v[3], 3);
  ruda_handle_release(&view);
  ruda_handle_release(&h);
  ruda_client_release(c);
  ruda_client_release(other);
}

TEST(a_profile_never_takes_an_error_from_its_stream) {
  ruda_client_t *c = cts_fresh_stream_client();
  /* An error from before the profile: the profile is clean, the error
   * stays for the sync. */
  queue_launch_error(c);
  ruda_profiling_token_t t;
  ruda_profile_duration_t d;
  ASSERT_OK(ruda_client_profile_start(c, &t));
  ASSERT_OK(ruda_client_profile_end(c, t, &d));
  /* An error while the profile is open: the profile fails, and the error
   * still reaches the sync. */
  ASSERT_OK(ruda_client_profile_start(c, &t));
  queue_launch_error(c);
  ruda_status_t s = ruda_client_profile_end(c, t, &d);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_PROFILE);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_LAUNCH_COMPILATION));
  ruda_status_free(s);
  expect_launch_errors(ruda_client_sync(c), 2);
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
}

/* ---- Device-wide usage ---- */

TEST(device_memory_usage_sums_every_stream) {
  ruda_client_t *a = cts_fresh_stream_client();
  ruda_client_t *b = cts_fresh_stream_client();
  ruda_memory_usage_t before;
  ASSERT_OK(ruda_client_memory_usage_device(a, &before));
  ruda_handle_t ha, hb;
  ASSERT_OK(ruda_client_empty(a, 1000, &ha));
  ASSERT_OK(ruda_client_empty(b, 3000, &hb));
  queue_launch_error(b); /* does not make the device report fail */
  ruda_memory_usage_t dev, ua;
  ASSERT_OK(ruda_client_memory_usage_device(b, &dev));
  ASSERT_UEQ(dev.number_allocs, before.number_allocs + 2);
  ASSERT_UEQ(dev.bytes_in_use, before.bytes_in_use + 4000);
  ASSERT_UGE(dev.bytes_reserved, dev.bytes_in_use);
  ASSERT_OK(ruda_client_memory_usage(a, &ua));
  ASSERT_UEQ(ua.bytes_in_use, 1000);
  /* The error is still queued on b. */
  expect_launch_errors(ruda_client_sync(b), 1);
  ruda_handle_release(&ha);
  ruda_handle_release(&hb);
  ASSERT_OK(ruda_client_sync(a));
  ASSERT_OK(ruda_client_memory_usage_device(a, &dev));
  ASSERT_UEQ(dev.number_allocs, before.number_allocs);
  ASSERT_UEQ(dev.bytes_in_use, before.bytes_in_use);
  ASSERT_ERR_KIND(ruda_client_memory_usage_device(a, NULL), RUDA_ERR_INVALID_ARGUMENT);
  ruda_client_release(a);
  ruda_client_release(b);
}

/* ---- Threads: each thread's stream gets exactly its own errors ---- */

static int own_errors(int id) {
  int wrong = 0;
  ruda_client_t *c = cts_client(); /* the thread's own stream */
  ruda_kernel_t *bad = cts_kernel_unrunnable();
  for (int round = 0; round < 50; round++) {
    int n = (round + id) % 3;
    for (int k = 0; k < n; k++) {
      ruda_status_t s = ruda_client_launch(c, bad, ruda_count_static(1, 1, 1), NULL);
      if (s) {
        ruda_status_free(s);
        wrong++;
      }
    }
    ruda_status_t s = ruda_client_sync(c);
    size_t got = s ? ruda_status_error_count(s) : 0;
    if (got != (size_t)n) wrong++;
    ruda_status_free(s);
  }
  ruda_kernel_release(bad);
  return wrong;
}

TEST(threads_each_get_exactly_their_own_errors) { cts_on_threads(6, own_errors); }
