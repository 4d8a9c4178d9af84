/* The conformance suite: behaviour tests written once against the client
 * API and run on every backend that registers.
 *
 * The device comes from RUDA_CTS_DEVICE ("cpu:0" by default, "cuda:0" on the
 * GPU machine). A device that is unavailable skips every test with the
 * reason. Each backend lists what it does not support and why
 * (cts_unsupported); those tests skip with that reason.
 */
#ifndef RUDA_CTS_H
#define RUDA_CTS_H

#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "cts_units.h"
#include "test.h"

/* The client under test (created once per program). Skips the calling test
 * when the device is unavailable. */
ruda_client_t *cts_client(void);
/* A new client pinned to a stream no other test uses. */
ruda_client_t *cts_fresh_stream_client(void);
/* Skips the calling test when the device's backend lists `feature` as
 * unsupported. */
void cts_require(const char *feature);
bool cts_is_cpu(void);
/* The client's stream syncs without an error and still round-trips data
 * (a buffer created from 16 words reads back equal); fails the test
 * otherwise. */
void cts_still_usable(ruda_client_t *c);
/* Runs fn(ctx) on a new thread (whose cts_client() is on that thread's
 * own default stream) and returns what it returned once it ended. */
ruda_status_t cts_on_another_thread(ruda_status_t (*fn)(void *ctx), void *ctx);
/* Fails the test unless `s` holds an error of `kind` whose reason contains
 * `reason` (any reason where NULL); returns that error (part of `s`, which
 * the caller still frees). */
ruda_status_t cts_expect_error(ruda_status_t s, ruda_error_kind_t kind, const char *reason);
/* Fails the test unless `s` is an error whose text (ruda_status_to_string)
 * contains `has` and does not contain `lacks` (either may be NULL). */
void cts_expect_text(ruda_status_t s, const char *has, const char *lacks);
/* Queues into *h a buffer of a size the device cannot give: four times its
 * memory (2^50 bytes where it does not say how much it has), which
 * ruda_client_empty accepts and the device's allocation then refuses.
 * Returns that size. */
uint64_t cts_empty_unallocatable(ruda_client_t *c, ruda_handle_t *h);
/* Runs fn(id) on `n` threads at once (id 0 .. n-1, n at most 16; each
 * thread's cts_client() is on its own default stream) and fails the test
 * unless every call returns 0: fn returns how many things it found wrong. */
void cts_on_threads(int n, int (*fn)(int id));

/* Kernels written once in the kernel dialect (cts_kernels.h), except
 * cts_kernel_fail, a raw CPU function. info[0] = element count. */
ruda_kernel_t *cts_kernel_add_f32(void);     /* c = a + b */
ruda_kernel_t *cts_kernel_fill_u32(void);    /* out[i] = info[1] */
ruda_kernel_t *cts_kernel_inc_u32(void);     /* x[i] += 1 */
ruda_kernel_t *cts_kernel_empty(void);       /* does nothing */
ruda_kernel_t *cts_kernel_fail(void);        /* reports a failure */
ruda_kernel_t *cts_kernel_sum_shared(void);  /* per-ruda sums through shared memory */
/* The empty kernel with these dims and this much dynamic shared memory. */
ruda_kernel_t *cts_kernel_with(ruda_dim_t dim, uint64_t shared);
/* "unrunnable": code only for another backend, so every launch is accepted
 * and then fails on the stream with LaunchError::CompilationError (the way
 * the suite makes an asynchronous launch error on every backend). */
ruda_kernel_t *cts_kernel_unrunnable(void);
/* Creates a kernel from `d`; the suite's own kernels must build (aborts
 * with the error otherwise). */
ruda_kernel_t *cts_kernel_from(ruda_kernel_desc_t d);
/* A new buffer holding the `bytes` bytes at `data`
 * (ruda_client_create_buffer); fails the test when it cannot be made. */
ruda_handle_t cts_upload(ruda_client_t *c, const void *data, size_t bytes);
/* A new buffer of `bytes` bytes, not initialized (ruda_client_empty);
 * fails the test when the call fails. */
ruda_handle_t cts_empty(ruda_client_t *c, uint64_t bytes);
/* Launches fill_u32 with `count` over the first `n` u32 of `h` (out[i] =
 * `value`); the launch's status. */
ruda_status_t cts_fill_u32(ruda_client_t *c, const ruda_handle_t *h, uint64_t n, uint32_t value,
                           ruda_count_t count);
/* A buffer of CTS_UNITS zeros filled with `value` by a launch of `count`
 * and read back into `out`; fails the test on any error. */
void cts_fill_and_read(ruda_client_t *c, ruda_count_t count, uint32_t value,
                       uint32_t out[CTS_UNITS]);

#endif
