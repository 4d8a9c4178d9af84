/* The error model: every variant's construction, fields, text, JSON,
 * nesting, cloning, lookup, out-of-memory fallback and backtraces. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/backtrace.h"
#include "ruda/status.h"
#include "test.h"

#define NO_REASON "No reason provided for the error"

/* Checks the Display text and the JSON of `s`, then frees it. */
#define CHECK_TEXT_JSON(s, text, js)              \
  do {                                            \
    ruda_status_t s_ = (s);                       \
    char *t_ = ruda_status_to_string(s_);         \
    char *j_ = ruda_status_to_json(s_);           \
    ASSERT_STR_EQ(t_, text);                      \
    ASSERT_STR_EQ(j_, js);                        \
    free(t_);                                     \
    free(j_);                                     \
    ruda_status_free(s_);                         \
  } while (0)

static uint32_t k_req3[3] = {1, 2, 3};
static uint32_t k_max3[3] = {4, 5, 6};

/* ---- leaves ------------------------------------------------------------ */

TEST(success_is_null) {
  ASSERT_EQ(ruda_status_kind(NULL), RUDA_OK);
  ASSERT_EQ(ruda_status_family(NULL), RUDA_FAMILY_NONE);
  char buf[8];
  ASSERT_EQ(ruda_status_format(NULL, buf, sizeof buf), 2);
  ASSERT_STR_EQ(buf, "OK");
  ASSERT_NULL(ruda_status_clone(NULL));
  ASSERT_NULL(ruda_status_into_server(NULL));
  ASSERT_NULL(ruda_status_reason(NULL));
  ASSERT_NULL(ruda_status_cause(NULL));
  ASSERT_NULL(ruda_status_root(NULL));
  ASSERT_NULL(ruda_status_find(NULL, RUDA_ERR_CONFIG));
  ASSERT_FALSE(ruda_status_is_static(NULL));
  char *j = ruda_status_to_json(NULL);
  ASSERT_STR_EQ(j, "null");
  free(j);
  ruda_status_free(NULL);
}

TEST(shared_memory) {
  ruda_status_t s =
      ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, 49156, 49152);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_RESOURCE_SHARED_MEMORY);
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_RESOURCE);
  ASSERT_UEQ(ruda_status_requested(s), 49156);
  ASSERT_UEQ(ruda_status_max(s), 49152);
  ASSERT_NULL(ruda_status_reason(s));
  ASSERT_NULL(ruda_status_cause(s));
  ASSERT_PTR_EQ(ruda_status_root(s), s);
  ASSERT_FALSE(ruda_status_is_static(s));
  ASSERT_STR_EQ(ruda_error_kind_name(ruda_status_kind(s)),
                "ResourceLimitError::SharedMemory");
  CHECK_TEXT_JSON(s,
                  "Too much shared memory requested.\nRequested 49156 bytes, "
                  "maximum 49152 bytes available.",
                  "{\"SharedMemory\":{\"requested\":49156,\"max\":49152}}");
}

TEST(units) {
  ruda_status_t s = ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS, 2048, 1024);
  ASSERT_UEQ(ruda_status_requested(s), 2048);
  ASSERT_UEQ(ruda_status_max(s), 1024);
  CHECK_TEXT_JSON(s,
                  "Total unit count exceeds maximum.\nRequested 2048 units, max "
                  "units is 1024.",
                  "{\"Units\":{\"requested\":2048,\"max\":1024}}");
}

TEST(ruda_dim) {
  ruda_status_t s = ruda_status_ruda_dim(k_req3, k_max3);
  uint32_t r[3], m[3];
  ASSERT_TRUE(ruda_status_dims(s, r, m));
  ASSERT_EQ(r[0], 1);
  ASSERT_EQ(r[2], 3);
  ASSERT_EQ(m[1], 5);
  ASSERT_EQ(m[2], 6);
  CHECK_TEXT_JSON(s,
                  "Ruda dim exceeds maximum bounds.\nRequested (1, 2, 3), max is "
                  "(4, 5, 6).",
                  "{\"RudaDim\":{\"requested\":[1,2,3],\"max\":[4,5,6]}}");
  ruda_status_t other = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "x");
  ASSERT_FALSE(ruda_status_dims(other, r, m));
  ruda_status_free(other);
}

TEST(server_generic) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "kernel %d failed", 7);
  ASSERT_STR_EQ(ruda_status_reason(s), "kernel 7 failed");
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_SERVER);
  CHECK_TEXT_JSON(s, "An error happened during execution\nCaused by:\n  kernel 7 failed",
                  "{\"Generic\":{\"reason\":\"kernel 7 failed\"}}");
}

TEST(reason_not_provided) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, NULL);
  ASSERT_STR_EQ(ruda_status_reason(s), NO_REASON);
  CHECK_TEXT_JSON(s, "An unknown error happened during launch\nCaused by:\n  " NO_REASON,
                  "{\"Unknown\":{\"reason\":\"" NO_REASON "\"}}");
}

TEST(launch_leaves) {
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "pool full"),
                  "An out-of-memory error happened during launch\nCaused by:\n  pool full",
                  "{\"OutOfMemory\":{\"reason\":\"pool full\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "bad"),
                  "An unknown error happened during launch\nCaused by:\n  bad",
                  "{\"Unknown\":{\"reason\":\"bad\"}}");
}

TEST(profile_leaves) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED, NULL);
  ASSERT_NULL(ruda_status_reason(s));
  ASSERT_STR_EQ(ruda_error_kind_name(ruda_status_kind(s)), "ProfileError::NotRegistered");
  CHECK_TEXT_JSON(s, "No profiling registered", "{\"NotRegistered\":{}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "clock"),
                  "An unknown error happened during profiling\nCaused by:\n  clock",
                  "{\"Unknown\":{\"reason\":\"clock\"}}");
}

TEST(io_leaves) {
  ruda_status_t s = ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, 1ull << 40);
  ASSERT_UEQ(ruda_status_size_field(s), 1ull << 40);
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_IO);
  CHECK_TEXT_JSON(s, "can't allocate buffer of size: 1099511627776",
                  "{\"BufferTooBig\":{\"size\":1099511627776}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES, NULL),
                  "the provided strides are not supported for this operation",
                  "{\"UnsupportedStrides\":{}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "handle 3 freed"),
                  "couldn't find resource for that handle: handle 3 freed",
                  "{\"NotFound\":{\"reason\":\"handle 3 freed\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_IO_NOT_FOUND, NULL),
                  "couldn't find resource for that handle: " NO_REASON,
                  "{\"NotFound\":{\"reason\":\"" NO_REASON "\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_IO_FREE_ERROR, NULL),
                  "couldn't free the handle, since it is currently in used. ",
                  "{\"FreeError\":{}}");
  ruda_status_t u = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "dma %s", "stalled");
  ASSERT_STR_EQ(ruda_status_reason(u), "dma stalled");
  CHECK_TEXT_JSON(u, "Unknown error happened during execution\nCaused by:\n  dma stalled",
                  "{\"Unknown\":{\"description\":\"dma stalled\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, NULL),
                  "The current IO operation is not supported",
                  "{\"UnsupportedIoOperation\":{}}");
  ruda_status_t oom = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, 4096);
  ASSERT_UEQ(ruda_status_size_field(oom), 4096);
  ASSERT_STR_EQ(ruda_status_reason(oom), NO_REASON);
  CHECK_TEXT_JSON(oom,
                  "Out of memory: can't allocate buffer of size: 4096\nCaused by:\n  " NO_REASON,
                  "{\"OutOfMemory\":{\"size\":4096,\"reason\":\"" NO_REASON "\"}}");
}

TEST(compilation_leaves) {
  CHECK_TEXT_JSON(
      ruda_status_create(RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION, "wgmma"),
      "An unsupported instruction caused the compilation to fail\nCaused by:\n  wgmma",
      "{\"UnsupportedInstruction\":{\"reason\":\"wgmma\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "nvrtc: syntax"),
                  "A compilation error happened\nCaused by:\n  nvrtc: syntax",
                  "{\"Generic\":{\"reason\":\"nvrtc: syntax\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_COMPILATION_VALIDATION, "oob"),
                  "A validation error caused the compilation to fail\nCaused by:\n  oob",
                  "{\"Validation\":{\"reason\":\"oob\"}}");
}

TEST(ruda_own_kinds) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "size is 0");
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_RUDA);
  CHECK_TEXT_JSON(s, "Invalid argument\nCaused by:\n  size is 0",
                  "{\"InvalidArgument\":{\"reason\":\"size is 0\"}}");
  CHECK_TEXT_JSON(ruda_status_create(RUDA_ERR_UNAVAILABLE, "no CUDA driver"),
                  "A backend, library or device is unavailable\nCaused by:\n  no CUDA driver",
                  "{\"Unavailable\":{\"reason\":\"no CUDA driver\"}}");
}

TEST(config_location) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_CONFIG, "expected an integer");
  ASSERT_PTR_EQ(ruda_status_set_location(s, "/x/ruda.toml", 12, "streaming.max_streams"), s);
  ASSERT_STR_EQ(ruda_status_file(s), "/x/ruda.toml");
  ASSERT_EQ(ruda_status_line(s), 12);
  ASSERT_STR_EQ(ruda_status_key(s), "streaming.max_streams");
  CHECK_TEXT_JSON(s,
                  "Invalid configuration in /x/ruda.toml:12, key `streaming.max_streams`\n"
                  "Caused by:\n  expected an integer",
                  "{\"Config\":{\"reason\":\"expected an integer\",\"file\":\"/x/ruda.toml\","
                  "\"line\":12,\"key\":\"streaming.max_streams\"}}");
  ruda_status_t bare = ruda_status_create(RUDA_ERR_CONFIG, "bad");
  ASSERT_NULL(ruda_status_file(bare));
  ASSERT_EQ(ruda_status_line(bare), 0);
  ASSERT_NULL(ruda_status_key(bare));
  CHECK_TEXT_JSON(bare, "Invalid configuration\nCaused by:\n  bad",
                  "{\"Config\":{\"reason\":\"bad\",\"file\":null,\"line\":0,\"key\":null}}");
  ruda_status_t k = ruda_status_set_location(ruda_status_create(RUDA_ERR_CONFIG, "bad"),
                                             NULL, 3, "a");
  CHECK_TEXT_JSON(k, "Invalid configuration at line 3, key `a`\nCaused by:\n  bad",
                  "{\"Config\":{\"reason\":\"bad\",\"file\":null,\"line\":3,\"key\":\"a\"}}");
  /* Setting again replaces. */
  ruda_status_t r = ruda_status_create(RUDA_ERR_CONFIG, "bad");
  ruda_status_set_location(r, "a.toml", 1, "x");
  ruda_status_set_location(r, "b.toml", 2, NULL);
  ASSERT_STR_EQ(ruda_status_file(r), "b.toml");
  ASSERT_NULL(ruda_status_key(r));
  ruda_status_free(r);
}

TEST(vendor_fields) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_UNAVAILABLE, "no device");
  ASSERT_NULL(ruda_status_vendor_call(s));
  ASSERT_EQ(ruda_status_vendor_code(s), 0);
  ASSERT_PTR_EQ(ruda_status_set_vendor(s, "cuInit", "CUDA_ERROR_NO_DEVICE", 100), s);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "cuInit");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "CUDA_ERROR_NO_DEVICE");
  ASSERT_EQ(ruda_status_vendor_code(s), 100);
  /* Vendor details print after the message; the JSON leaves them out. */
  CHECK_TEXT_JSON(s,
                  "A backend, library or device is unavailable\nCaused by:\n  no device\n"
                  "  cuInit: CUDA_ERROR_NO_DEVICE (100)",
                  "{\"Unavailable\":{\"reason\":\"no device\"}}");
  ASSERT_NULL(ruda_status_set_vendor(NULL, "a", "b", 1));
}

/* ---- nesting ----------------------------------------------------------- */

TEST(nest_three_levels_shared_memory) {
  ruda_status_t s = ruda_status_wrap(
      RUDA_ERR_SERVER_LAUNCH,
      ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
                       ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY,
                                                  49156, 49152)));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
  ruda_status_t mid = ruda_status_cause(s);
  ASSERT_EQ(ruda_status_kind(mid), RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  ruda_status_t leaf = ruda_status_cause(mid);
  ASSERT_EQ(ruda_status_kind(leaf), RUDA_ERR_RESOURCE_SHARED_MEMORY);
  ASSERT_PTR_EQ(ruda_status_root(s), leaf);
  ASSERT_PTR_EQ(ruda_status_find(s, RUDA_ERR_RESOURCE_SHARED_MEMORY), leaf);
  ASSERT_NULL(ruda_status_find(s, RUDA_ERR_RESOURCE_UNITS));
  ASSERT_UEQ(ruda_status_requested(ruda_status_root(s)), 49156);
  CHECK_TEXT_JSON(s,
                  "A launch failed\nCaused by:\n  "
                  "Too many resources were requested during launch\n"
                  "Too much shared memory requested.\nRequested 49156 bytes, "
                  "maximum 49152 bytes available.",
                  "{\"Launch\":{\"TooManyResources\":{\"SharedMemory\":"
                  "{\"requested\":49156,\"max\":49152}}}}");
}

TEST(nest_every_wrapper) {
  CHECK_TEXT_JSON(
      ruda_status_wrap(RUDA_ERR_SERVER_PROFILE,
                       ruda_status_wrap(RUDA_ERR_PROFILE_LAUNCH,
                                        ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "u"))),
      "Profiling failed\nCaused by:\n  "
      "A launch error happened during profiling\nCaused by:\n  "
      "An unknown error happened during launch\nCaused by:\n  u",
      "{\"Profile\":{\"Launch\":{\"Unknown\":{\"reason\":\"u\"}}}}");
  CHECK_TEXT_JSON(
      ruda_status_wrap(RUDA_ERR_SERVER_IO,
                       ruda_status_wrap(RUDA_ERR_IO_EXECUTION,
                                        ruda_status_create(RUDA_ERR_SERVER_GENERIC, "g"))),
      "A memory operation failed\nCaused by:\n  "
      "Can't perform the IO operation because of a runtime error: "
      "An error happened during execution\nCaused by:\n  g",
      "{\"Io\":{\"Execution\":{\"Generic\":{\"reason\":\"g\"}}}}");
  CHECK_TEXT_JSON(
      ruda_status_wrap(RUDA_ERR_PROFILE_SERVER,
                       ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH,
                                        ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION,
                                                         ruda_status_create(
                                                             RUDA_ERR_COMPILATION_VALIDATION,
                                                             "v")))),
      "An execution error happened during profiling\nCaused by:\n  "
      "A launch failed\nCaused by:\n  "
      "A compilation error happened during launch\nCaused by:\n  "
      "A validation error caused the compilation to fail\nCaused by:\n  v",
      "{\"Server\":{\"Launch\":{\"CompilationError\":{\"Validation\":{\"reason\":\"v\"}}}}}");
  CHECK_TEXT_JSON(
      ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH,
                       ruda_status_wrap(RUDA_ERR_LAUNCH_IO,
                                        ruda_status_create(RUDA_ERR_IO_FREE_ERROR, NULL))),
      "A launch failed\nCaused by:\n  "
      "An io error happened during launch\nCaused by:\n  "
      "couldn't free the handle, since it is currently in used. ",
      "{\"Launch\":{\"IoError\":{\"FreeError\":{}}}}");
}

/* A failed launch names its kernel and stream; the JSON form is
 * unchanged. Nothing in a server error's text mentions profiling unless a
 * profile is involved. */
TEST(launch_context_names_kernel_and_stream) {
  ruda_status_t s = ruda_status_set_launch(
      ruda_status_into_server(ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "boom")), "vec_add",
      1128);
  ASSERT_STR_EQ(ruda_status_kernel(s), "vec_add");
  uint64_t stream = 0;
  ASSERT_TRUE(ruda_status_stream(s, &stream));
  ASSERT_UEQ(stream, 1128);
  ruda_status_t c = ruda_status_clone(s);
  ASSERT_STR_EQ(ruda_status_kernel(c), "vec_add");
  CHECK_TEXT_JSON(c,
                  "A launch of kernel 'vec_add' on stream 1128 failed\nCaused by:\n  "
                  "An unknown error happened during launch\nCaused by:\n  boom",
                  "{\"Launch\":{\"Unknown\":{\"reason\":\"boom\"}}}");
  ruda_status_free(s);
  s = ruda_status_set_launch(
      ruda_status_into_server(ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "stale handle")), NULL,
      7);
  ASSERT_NULL(ruda_status_kernel(s));
  CHECK_TEXT_JSON(s,
                  "A memory operation failed on stream 7\nCaused by:\n  "
                  "couldn't find resource for that handle: stale handle",
                  "{\"Io\":{\"NotFound\":{\"reason\":\"stale handle\"}}}");
  s = ruda_status_create(RUDA_ERR_SERVER_LAUNCH, "x");
  ASSERT_FALSE(ruda_status_stream(s, &stream));
  char *text = ruda_status_to_string(s);
  ASSERT_TRUE(strstr(text, "profiling") == NULL);
  free(text);
  ruda_status_free(s);
}

TEST(create_wrapping_kind_makes_default_cause) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_SERVER_LAUNCH, "driver said %s", "no");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_STR_EQ(ruda_status_reason(ruda_status_cause(s)), "driver said no");
  ruda_status_free(s);
  s = ruda_status_create(RUDA_ERR_IO_EXECUTION, "x");
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_SERVER_GENERIC);
  ruda_status_free(s);
  s = ruda_status_create(RUDA_ERR_LAUNCH_COMPILATION, "x");
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_COMPILATION_GENERIC);
  ruda_status_free(s);
  /* TooManyResources has no default: no cause, the text says so. */
  s = ruda_status_create(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, "x");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  ASSERT_NULL(ruda_status_cause(s));
  CHECK_TEXT_JSON(s, "Too many resources were requested during launch\n" NO_REASON,
                  "{\"TooManyResources\":null}");
}

TEST(wrap_coerces_wrong_family) {
  /* A ResourceLimitError inside ServerError::Launch gains TooManyResources. */
  ruda_status_t s = ruda_status_wrap(
      RUDA_ERR_SERVER_LAUNCH, ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS, 5, 4));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  ASSERT_EQ(ruda_status_kind(ruda_status_root(s)), RUDA_ERR_RESOURCE_UNITS);
  ruda_status_free(s);
  /* A LaunchError inside IoError::Execution becomes ServerError::Launch. */
  s = ruda_status_wrap(RUDA_ERR_IO_EXECUTION, ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "x"));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_SERVER_LAUNCH);
  ruda_status_free(s);
  /* A ServerError inside ServerError::Io becomes IoError::Execution. */
  s = ruda_status_wrap(RUDA_ERR_SERVER_IO, ruda_status_create(RUDA_ERR_SERVER_GENERIC, "x"));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_IO_EXECUTION);
  ruda_status_free(s);
  /* TooManyResources around a non-resource error: the level is dropped. */
  s = ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
                       ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "c"));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_COMPILATION);
  ruda_status_free(s);
  /* ruda's own error inside a LaunchError slot: LaunchError::Unknown with
   * the same text. */
  s = ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH,
                       ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "bad"));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_STR_EQ(ruda_status_reason(ruda_status_cause(s)),
                "Invalid argument\nCaused by:\n  bad");
  ruda_status_free(s);
  /* ProfileError::Launch around an IoError: LaunchError::IoError between. */
  s = ruda_status_wrap(RUDA_ERR_PROFILE_LAUNCH,
                       ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES, NULL));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_LAUNCH_IO);
  ruda_status_free(s);
  /* A non-wrapping kind takes the cause's text as its reason. */
  s = ruda_status_wrap(RUDA_ERR_SERVER_GENERIC,
                       ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "h"));
  ASSERT_NULL(ruda_status_cause(s));
  ASSERT_STR_EQ(ruda_status_reason(s), "couldn't find resource for that handle: h");
  ruda_status_free(s);
  /* Wrapping nothing. */
  s = ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH, NULL);
  ASSERT_NULL(ruda_status_cause(s));
  ruda_status_free(s);
}

TEST(into_server_every_family) {
  ruda_status_t s = ruda_status_into_server(ruda_status_create(RUDA_ERR_SERVER_GENERIC, "g"));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_GENERIC);
  ruda_status_free(s);
  s = ruda_status_into_server(ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "l"));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
  ruda_status_free(s);
  s = ruda_status_into_server(ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED, NULL));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_PROFILE);
  ruda_status_free(s);
  s = ruda_status_into_server(ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, 9));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_IO);
  ruda_status_free(s);
  s = ruda_status_into_server(ruda_status_ruda_dim(k_req3, k_max3));
  CHECK_TEXT_JSON(s,
                  "A launch failed\nCaused by:\n  "
                  "Too many resources were requested during launch\n"
                  "Ruda dim exceeds maximum bounds.\nRequested (1, 2, 3), max is (4, 5, 6).",
                  "{\"Launch\":{\"TooManyResources\":{\"RudaDim\":{\"requested\":[1,2,3],"
                  "\"max\":[4,5,6]}}}}");
  s = ruda_status_into_server(ruda_status_create(RUDA_ERR_COMPILATION_GENERIC, "c"));
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(s)), RUDA_ERR_LAUNCH_COMPILATION);
  ruda_status_free(s);
  ruda_status_t own = ruda_status_create(RUDA_ERR_UNAVAILABLE, "no gpu");
  ruda_status_set_vendor(own, "cuInit", "CUDA_ERROR_NO_DEVICE", 100);
  s = ruda_status_into_server(own);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_GENERIC);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "cuInit");
  /* The vendor line moves with the fields, so the text prints it once. */
  ASSERT_STR_EQ(ruda_status_reason(s),
                "A backend, library or device is unavailable\nCaused by:\n  no gpu");
  CHECK_TEXT_JSON(s,
                  "An error happened during execution\nCaused by:\n  "
                  "A backend, library or device is unavailable\nCaused by:\n  no gpu\n"
                  "  cuInit: CUDA_ERROR_NO_DEVICE (100)",
                  "{\"Generic\":{\"reason\":\"A backend, library or device is "
                  "unavailable\\nCaused by:\\n  no gpu\"}}");
}

/* An error no variant of the wanted family can hold is restated by the
 * family's catch-all, keeping its vendor details inspectable. */
TEST(restated_errors_keep_vendor_details_once) {
  ruda_status_t own = ruda_status_create(RUDA_ERR_UNAVAILABLE, "no nvrtc");
  ruda_status_set_vendor(own, "dlopen", "ENOENT", 2);
  ruda_status_t s = ruda_status_wrap(RUDA_ERR_LAUNCH_COMPILATION, own);
  ruda_status_t leaf = ruda_status_root(s);
  ASSERT_EQ(ruda_status_kind(leaf), RUDA_ERR_COMPILATION_GENERIC);
  ASSERT_STR_EQ(ruda_status_vendor_call(leaf), "dlopen");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(leaf), "ENOENT");
  ASSERT_EQ(ruda_status_vendor_code(leaf), 2);
  CHECK_TEXT_JSON(s,
                  "A compilation error happened during launch\nCaused by:\n  "
                  "A compilation error happened\nCaused by:\n  "
                  "A backend, library or device is unavailable\nCaused by:\n  no nvrtc\n"
                  "  dlopen: ENOENT (2)",
                  "{\"CompilationError\":{\"Generic\":{\"reason\":\"A backend, library "
                  "or device is unavailable\\nCaused by:\\n  no nvrtc\"}}}");
  /* A non-wrapping kind given a cause restates it the same way. */
  own = ruda_status_set_vendor(ruda_status_create(RUDA_ERR_UNAVAILABLE, "x"), "f", "E", 1);
  s = ruda_status_wrap(RUDA_ERR_INVALID_ARGUMENT, own);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "f");
  CHECK_TEXT_JSON(s,
                  "Invalid argument\nCaused by:\n  A backend, library or device is "
                  "unavailable\nCaused by:\n  x\n  f: E (1)",
                  "{\"InvalidArgument\":{\"reason\":\"A backend, library or device is "
                  "unavailable\\nCaused by:\\n  x\"}}");
}

/* ---- ServerUnhealthy ---------------------------------------------------- */

static ruda_status_t make_unhealthy(void) {
  ruda_status_t errs[3] = {
      ruda_status_create(RUDA_ERR_SERVER_GENERIC, "first"),
      NULL, /* skipped */
      ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
                       ruda_status_ruda_dim(k_req3, k_max3)),
  };
  return ruda_status_unhealthy(errs, 3);
}

TEST(unhealthy_list) {
  ruda_status_t s = make_unhealthy();
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_UEQ(ruda_status_error_count(s), 2);
  ASSERT_EQ(ruda_status_kind(ruda_status_error_at(s, 0)), RUDA_ERR_SERVER_GENERIC);
  /* Elements are converted into ServerErrors. */
  ASSERT_EQ(ruda_status_kind(ruda_status_error_at(s, 1)), RUDA_ERR_SERVER_LAUNCH);
  ASSERT_NULL(ruda_status_error_at(s, 2));
  ruda_status_t dim = ruda_status_find(s, RUDA_ERR_RESOURCE_RUDA_DIM);
  ASSERT_NOT_NULL(dim);
  ASSERT_PTR_EQ(dim, ruda_status_root(ruda_status_error_at(s, 1)));
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_SERVER_GENERIC));
  ASSERT_NULL(ruda_status_find(s, RUDA_ERR_IO_UNKNOWN));
  CHECK_TEXT_JSON(s,
                  "Work queued on the stream failed\nCaused by:\n  ["
                  "An error happened during execution\nCaused by:\n  first, "
                  "A launch failed\nCaused by:\n  "
                  "Too many resources were requested during launch\n"
                  "Ruda dim exceeds maximum bounds.\nRequested (1, 2, 3), max is (4, 5, 6).]",
                  "{\"ServerUnhealthy\":{\"errors\":[{\"Generic\":{\"reason\":\"first\"}},"
                  "{\"Launch\":{\"TooManyResources\":{\"RudaDim\":{\"requested\":[1,2,3],"
                  "\"max\":[4,5,6]}}}}]}}");
}

TEST(unhealthy_empty_and_nested_find) {
  ruda_status_t s = ruda_status_unhealthy(NULL, 0);
  ASSERT_UEQ(ruda_status_error_count(s), 0);
  CHECK_TEXT_JSON(s, "Work queued on the stream failed\nCaused by:\n  []",
                  "{\"ServerUnhealthy\":{\"errors\":[]}}");
  /* An unhealthy list inside IoError::Execution inside ProfileError::Server:
   * find looks through causes and lists, depth first. */
  ruda_status_t inner = make_unhealthy();
  ruda_status_t outer = ruda_status_wrap(
      RUDA_ERR_SERVER_PROFILE,
      ruda_status_wrap(RUDA_ERR_PROFILE_SERVER,
                       ruda_status_wrap(RUDA_ERR_SERVER_IO,
                                        ruda_status_wrap(RUDA_ERR_IO_EXECUTION, inner))));
  ASSERT_PTR_EQ(ruda_status_find(outer, RUDA_ERR_SERVER_UNHEALTHY), inner);
  ASSERT_PTR_EQ(ruda_status_find(outer, RUDA_ERR_RESOURCE_RUDA_DIM),
                ruda_status_find(inner, RUDA_ERR_RESOURCE_RUDA_DIM));
  ASSERT_PTR_EQ(ruda_status_root(outer), inner);
  ASSERT_ERR_KIND(outer, RUDA_ERR_RESOURCE_RUDA_DIM);
}

/* ---- clone, format, names ---------------------------------------------- */

TEST(clone_is_deep) {
  ruda_status_t inner = make_unhealthy();
  ruda_status_t s = ruda_status_wrap(RUDA_ERR_IO_EXECUTION, inner);
  ruda_status_set_vendor(s, "cuMemcpy", "CUDA_ERROR_ILLEGAL_ADDRESS", 700);
  ruda_status_t c = ruda_status_clone(s);
  ASSERT_TRUE(c != s);
  ASSERT_FALSE(ruda_status_is_static(c));
  ASSERT_TRUE(ruda_status_cause(c) != inner);
  ASSERT_TRUE(ruda_status_error_at(ruda_status_cause(c), 0) != ruda_status_error_at(inner, 0));
  char *a = ruda_status_to_string(s), *b = ruda_status_to_string(c);
  ASSERT_STR_EQ(a, b);
  free(a);
  free(b);
  a = ruda_status_to_json(s);
  b = ruda_status_to_json(c);
  ASSERT_STR_EQ(a, b);
  free(a);
  free(b);
  ASSERT_STR_EQ(ruda_status_vendor_code_name(c), "CUDA_ERROR_ILLEGAL_ADDRESS");
  ruda_status_free(s); /* the clone outlives the original */
  ASSERT_UEQ(ruda_status_error_count(ruda_status_cause(c)), 2);
  ruda_status_t cfg = ruda_status_set_location(ruda_status_create(RUDA_ERR_CONFIG, "r"),
                                               "f.toml", 4, "k");
  ruda_status_t cc = ruda_status_clone(cfg);
  ruda_status_free(cfg);
  ASSERT_STR_EQ(ruda_status_file(cc), "f.toml");
  ASSERT_STR_EQ(ruda_status_key(cc), "k");
  ASSERT_EQ(ruda_status_line(cc), 4);
  ruda_status_free(cc);
  ruda_status_free(c);
}

TEST(format_truncates_like_snprintf) {
  ruda_status_t s = ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS, 5, 4);
  char full[256];
  size_t n = ruda_status_format(s, full, sizeof full);
  ASSERT_UEQ(n, strlen(full));
  ASSERT_UEQ(ruda_status_format(s, NULL, 0), n);
  char small[10];
  memset(small, 'x', sizeof small);
  ASSERT_UEQ(ruda_status_format(s, small, sizeof small), n);
  ASSERT_STR_EQ(small, "Total uni");
  char one[1] = {'x'};
  ASSERT_UEQ(ruda_status_format(s, one, 1), n);
  ASSERT_EQ(one[0], '\0');
  ruda_status_free(s);
}

TEST(json_escapes_strings) {
  ruda_status_t s = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "a\"b\\c\nd\te\x01\x1f/\xc3\xa9");
  char *j = ruda_status_to_json(s);
  ASSERT_STR_EQ(j, "{\"Generic\":{\"reason\":\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f/\xc3\xa9\"}}");
  free(j);
  ruda_status_free(s);
}

TEST(kind_names_and_families) {
  static const struct {
    ruda_error_kind_t kind;
    const char *name;
    ruda_error_family_t family;
  } rows[] = {
      {RUDA_ERR_SERVER_GENERIC, "ServerError::Generic", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_LAUNCH, "ServerError::Launch", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_PROFILE, "ServerError::Profile", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_IO, "ServerError::Io", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_UNHEALTHY, "ServerError::ServerUnhealthy", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_CANCELLED, "ServerError::Cancelled", RUDA_FAMILY_SERVER},
      {RUDA_ERR_SERVER_DEVICE_LOST, "ServerError::DeviceLost", RUDA_FAMILY_SERVER},
      {RUDA_ERR_LAUNCH_COMPILATION, "LaunchError::CompilationError", RUDA_FAMILY_LAUNCH},
      {RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "LaunchError::OutOfMemory", RUDA_FAMILY_LAUNCH},
      {RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, "LaunchError::TooManyResources", RUDA_FAMILY_LAUNCH},
      {RUDA_ERR_LAUNCH_UNKNOWN, "LaunchError::Unknown", RUDA_FAMILY_LAUNCH},
      {RUDA_ERR_LAUNCH_IO, "LaunchError::IoError", RUDA_FAMILY_LAUNCH},
      {RUDA_ERR_RESOURCE_SHARED_MEMORY, "ResourceLimitError::SharedMemory", RUDA_FAMILY_RESOURCE},
      {RUDA_ERR_RESOURCE_UNITS, "ResourceLimitError::Units", RUDA_FAMILY_RESOURCE},
      {RUDA_ERR_RESOURCE_RUDA_DIM, "ResourceLimitError::RudaDim", RUDA_FAMILY_RESOURCE},
      {RUDA_ERR_PROFILE_UNKNOWN, "ProfileError::Unknown", RUDA_FAMILY_PROFILE},
      {RUDA_ERR_PROFILE_NOT_REGISTERED, "ProfileError::NotRegistered", RUDA_FAMILY_PROFILE},
      {RUDA_ERR_PROFILE_LAUNCH, "ProfileError::Launch", RUDA_FAMILY_PROFILE},
      {RUDA_ERR_PROFILE_SERVER, "ProfileError::Server", RUDA_FAMILY_PROFILE},
      {RUDA_ERR_IO_BUFFER_TOO_BIG, "IoError::BufferTooBig", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_UNSUPPORTED_STRIDES, "IoError::UnsupportedStrides", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_NOT_FOUND, "IoError::NotFound", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_FREE_ERROR, "IoError::FreeError", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_UNKNOWN, "IoError::Unknown", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, "IoError::UnsupportedIoOperation", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_EXECUTION, "IoError::Execution", RUDA_FAMILY_IO},
      {RUDA_ERR_IO_OUT_OF_MEMORY, "IoError::OutOfMemory", RUDA_FAMILY_IO},
      {RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION, "CompilationError::UnsupportedInstruction",
       RUDA_FAMILY_COMPILATION},
      {RUDA_ERR_COMPILATION_GENERIC, "CompilationError::Generic", RUDA_FAMILY_COMPILATION},
      {RUDA_ERR_COMPILATION_VALIDATION, "CompilationError::Validation", RUDA_FAMILY_COMPILATION},
      {RUDA_ERR_COMPILATION_NO_CODE, "CompilationError::NoCode", RUDA_FAMILY_COMPILATION},
      {RUDA_ERR_RESOURCE_RUDA_COUNT, "ResourceLimitError::RudaCount", RUDA_FAMILY_RESOURCE},
      {RUDA_ERR_INVALID_ARGUMENT, "RudaError::InvalidArgument", RUDA_FAMILY_RUDA},
      {RUDA_ERR_UNAVAILABLE, "RudaError::Unavailable", RUDA_FAMILY_RUDA},
      {RUDA_ERR_CONFIG, "RudaError::Config", RUDA_FAMILY_RUDA},
      {RUDA_ERR_INVALID_HANDLE, "RudaError::InvalidHandle", RUDA_FAMILY_RUDA},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ASSERT_STR_EQ(ruda_error_kind_name(rows[i].kind), rows[i].name);
    ASSERT_EQ(ruda_error_kind_family(rows[i].kind), rows[i].family);
    /* Every kind can be created, rendered and freed. */
    ruda_status_t s = ruda_status_create(rows[i].kind, "r");
    ASSERT_EQ(ruda_status_kind(s), rows[i].kind);
    char *t = ruda_status_to_string(s), *j = ruda_status_to_json(s);
    ASSERT_NOT_NULL(t);
    ASSERT_NOT_NULL(j);
    ASSERT_EQ(j[0], '{');
    free(t);
    free(j);
    ruda_status_free(s);
  }
  ASSERT_STR_EQ(ruda_error_kind_name(RUDA_OK), "Ok");
  ASSERT_STR_EQ(ruda_error_kind_name((ruda_error_kind_t)999), "UnknownErrorKind");
  ASSERT_EQ(ruda_error_kind_family((ruda_error_kind_t)999), RUDA_FAMILY_NONE);
}

TEST(unknown_kind_becomes_invalid_argument) {
  ruda_status_t s = ruda_status_create((ruda_error_kind_t)999, "what");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(s);
  s = ruda_status_create(RUDA_OK, "ok is not an error");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(s);
}

/* ---- out of memory ------------------------------------------------------ */

TEST(static_fallback_when_memory_is_exhausted) {
  ruda__test_fail_alloc_after(0);
  ruda_status_t s = ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, 1, 2);
  ruda_status_t t = ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "gone");
  ruda_status_t w = ruda_status_wrap(RUDA_ERR_SERVER_LAUNCH,
                                     ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "x"));
  ruda_status_t u = ruda_status_unhealthy(&t, 1); /* takes t */
  uint64_t failed = ruda__test_failed_allocs();
  ruda__test_fail_alloc_after(-1);
  ASSERT_UGT(failed, 0);
  ASSERT_TRUE(ruda_status_is_static(s));
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_RESOURCE_SHARED_MEMORY);
  ASSERT_UEQ(ruda_status_requested(s), 0); /* dynamic fields are lost */
  ASSERT_TRUE(ruda_status_is_static(w));
  ASSERT_EQ(ruda_status_kind(w), RUDA_ERR_SERVER_LAUNCH);
  ASSERT_TRUE(ruda_status_is_static(u));
  ASSERT_EQ(ruda_status_kind(u), RUDA_ERR_SERVER_UNHEALTHY);
  /* Static errors render, clone to themselves, ignore setters and free as
   * no-ops. */
  char buf[256];
  ruda_status_format(s, buf, sizeof buf);
  ASSERT_STR_EQ(buf,
                "Too much shared memory requested.\nRequested 0 bytes, maximum 0 bytes "
                "available.");
  ASSERT_PTR_EQ(ruda_status_clone(s), s);
  ASSERT_PTR_EQ(ruda_status_set_vendor(s, "a", "b", 1), s);
  ASSERT_NULL(ruda_status_vendor_call(s));
  ASSERT_PTR_EQ(ruda_status_set_location(s, "f", 1, "k"), s);
  ASSERT_NULL(ruda_status_file(s));
  ASSERT_PTR_EQ(ruda_status_into_server(w), w);
  ruda_status_free(s);
  ruda_status_free(w);
  ruda_status_free(u);
  /* Same kind: same static object. */
  ruda__test_fail_alloc_after(0);
  ruda_status_t s2 = ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, 3, 4);
  ruda_status_t bad = ruda_status_create((ruda_error_kind_t)12345, "x");
  ruda__test_fail_alloc_after(-1);
  ASSERT_PTR_EQ(s2, s);
  ASSERT_EQ(ruda_status_kind(bad), RUDA_ERR_INVALID_ARGUMENT);
  ruda__test_fail_alloc_after(0);
  ruda_status_t lu = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "lost");
  char *text = ruda_status_to_string(lu);
  char *js = ruda_status_to_json(lu);
  ruda__test_fail_alloc_after(-1);
  ASSERT_TRUE(ruda_status_is_static(lu));
  /* A static error says what happened instead of its lost reason. */
  ASSERT_STR_EQ(ruda_status_reason(lu),
                "out of host memory (the details of this error could not be allocated)");
  char sbuf[256];
  ruda_status_format(lu, sbuf, sizeof sbuf);
  ASSERT_STR_CONTAINS(sbuf, "out of host memory");
  ASSERT_NULL(text); /* only NULL when memory is exhausted */
  ASSERT_NULL(js);
}

/* Builds a nested error, clones it and renders it, failing the Nth
 * allocation for N = 0, 1, 2... until everything succeeds: every
 * out-of-memory path runs, nothing leaks (under ASan), every result has the
 * right outer kind. */
TEST(every_allocation_failure_path) {
  bool done = false;
  for (int64_t n = 0; !done && n < 10000; n++) {
    ruda__test_fail_alloc_after(n);
    ruda_status_t list[2] = {
        ruda_status_create(RUDA_ERR_SERVER_GENERIC, "a %d", 1),
        ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
                         ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS, 9, 8)),
    };
    ruda_status_t u = ruda_status_unhealthy(list, 2);
    ruda_status_t outer = ruda_status_wrap(RUDA_ERR_IO_EXECUTION, u);
    ruda_status_set_vendor(outer, "call", "CODE", 3);
    ruda_status_t cfg = ruda_status_set_location(
        ruda_status_create(RUDA_ERR_CONFIG, "r"), "file", 2, "key");
    ruda_status_t own = ruda_status_into_server(ruda_status_create(RUDA_ERR_UNAVAILABLE, "x"));
    ruda_status_t c = ruda_status_clone(outer);
    char *text = ruda_status_to_string(c);
    char *js = ruda_status_to_json(c);
    ruda__test_fail_alloc_after(-1);
    ASSERT_EQ(ruda_status_kind(outer), RUDA_ERR_IO_EXECUTION);
    ASSERT_EQ(ruda_status_kind(c), RUDA_ERR_IO_EXECUTION);
    ASSERT_EQ(ruda_status_kind(cfg), RUDA_ERR_CONFIG);
    ASSERT_EQ(ruda_status_kind(own), RUDA_ERR_SERVER_GENERIC);
    done = !ruda_status_is_static(outer) && !ruda_status_is_static(c) &&
           !ruda_status_is_static(cfg) && !ruda_status_is_static(own) &&
           ruda_status_file(cfg) && ruda_status_vendor_call(outer) && text && js &&
           ruda_status_find(c, RUDA_ERR_RESOURCE_UNITS);
    if (done) {
      ASSERT_STR_CONTAINS(text, "Requested 9 units, max units is 8.");
      ASSERT_STR_CONTAINS(js, "\"Units\":{\"requested\":9,\"max\":8}");
    }
    free(text);
    free(js);
    ruda_status_free(c);
    ruda_status_free(outer);
    ruda_status_free(cfg);
    ruda_status_free(own);
  }
  ASSERT_TRUE(done);
}

/* ---- backtraces --------------------------------------------------------- */

TEST(no_backtrace_no_trailer) {
  ruda__backtrace_override(0);
  ruda_status_t s = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "x");
  ASSERT_NULL(ruda_status_backtrace(s));
  char buf[256];
  ruda_status_format(s, buf, sizeof buf);
  ASSERT_TRUE(strstr(buf, "Backtrace") == NULL);
  ruda_status_free(s);
  ruda__backtrace_override(-1);
}

static ruda_status_t __attribute__((noinline)) make_with_backtrace(void) {
  return ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, 49156, 49152);
}

TEST(backtrace_when_enabled) {
  ruda__backtrace_override(1);
  ASSERT_TRUE(ruda_backtrace_enabled());
  ruda_status_t leaf = make_with_backtrace();
  ruda_status_t s = ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, leaf);
  ruda_status_t io = ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES, NULL);
  ruda_status_t g = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "g");
  ruda__backtrace_override(-1);
  const char *bt = ruda_status_backtrace(leaf);
  ASSERT_NOT_NULL(bt);
  ASSERT_GT(strlen(bt), 0);
  ASSERT_STR_CONTAINS(bt, "0: ");
  /* Wrappers do not capture their own. */
  ASSERT_NULL(ruda_status_backtrace(s));
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "maximum 49152 bytes available.\nBacktrace\n");
  free(text);
  text = ruda_status_to_string(io);
  ASSERT_STR_CONTAINS(text, "not supported for this operation\n");
  ASSERT_STR_CONTAINS(text, ruda_status_backtrace(io));
  free(text);
  text = ruda_status_to_string(g);
  ASSERT_STR_CONTAINS(text, "Caused by:\n  g\nBacktrace:\n");
  free(text);
  /* JSON leaves backtraces out; clones keep them. */
  char *js = ruda_status_to_json(s);
  ASSERT_STR_EQ(js, "{\"TooManyResources\":{\"SharedMemory\":{\"requested\":49156,\"max\":49152}}}");
  free(js);
  ruda_status_t c = ruda_status_clone(s);
  ASSERT_STR_EQ(ruda_status_backtrace(ruda_status_root(c)), bt);
  /* into_server of ruda's own kinds moves the backtrace to the Generic. */
  ruda__backtrace_override(1);
  ruda_status_t own = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "x");
  ruda__backtrace_override(-1);
  const char *own_bt = ruda_status_backtrace(own);
  ASSERT_NOT_NULL(own_bt);
  ruda_status_t srv = ruda_status_into_server(own);
  ASSERT_NOT_NULL(ruda_status_backtrace(srv));
  ASSERT_TRUE(strstr(ruda_status_reason(srv), "Backtrace") == NULL);
  ruda_status_free(srv);
  ruda_status_free(c);
  ruda_status_free(s);
  ruda_status_free(io);
  ruda_status_free(g);
}

TEST(backtrace_env_is_read) {
  /* RUDA_BACKTRACE is read on first use after the override is cleared. */
  setenv("RUDA_BACKTRACE", "full", 1);
  ruda__backtrace_override(-1);
  ASSERT_TRUE(ruda_backtrace_enabled());
  ruda_status_t s = ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED, NULL);
  ASSERT_NOT_NULL(ruda_status_backtrace(s));
  ruda_status_free(s);
  setenv("RUDA_BACKTRACE", "0", 1);
  ruda__backtrace_override(-1);
  ASSERT_FALSE(ruda_backtrace_enabled());
  setenv("RUDA_BACKTRACE", "1", 1);
  ruda__backtrace_override(-1);
  ASSERT_TRUE(ruda_backtrace_enabled());
  unsetenv("RUDA_BACKTRACE");
  ruda__backtrace_override(-1);
  ASSERT_FALSE(ruda_backtrace_enabled());
}

TEST(backtrace_capture_directly) {
  char *bt = ruda__backtrace_capture(0);
  ASSERT_NOT_NULL(bt);
  ASSERT_STR_CONTAINS(bt, "   0: ");
  ASSERT_NE(bt[strlen(bt) - 1], '\n');
  ruda__free(bt);
  /* Skipping more frames than exist still gives one frame. */
  bt = ruda__backtrace_capture(1000);
  ASSERT_NOT_NULL(bt);
  ruda__free(bt);
  ruda__test_fail_alloc_after(0);
  bt = ruda__backtrace_capture(0);
  ruda__test_fail_alloc_after(-1);
  ASSERT_NULL(bt);
}
