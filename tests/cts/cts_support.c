/* Shared pieces of the conformance suite: device selection, the per-backend
 * unsupported lists and the kernels. Included by every tests/cts program. */
#include <pthread.h>
#include <stdio.h>

#include "cts.h"
#include "test_kernel.h"

typedef struct unsupported {
  const char *backend;
  const char *feature;
  const char *why;
} unsupported_t;

/* What a backend does not support, and why: the built-in backends' list.
 * Another backend declares its own in its backend.cmake
 * (RUDA_BACKEND_CTS_UNSUPPORTED), which reaches its conformance run as
 * RUDA_CTS_UNSUPPORTED="feature=why|feature=why" (tests/CMakeLists.txt),
 * so adding one needs no edit here. */
static const unsupported_t cts_unsupported[] = {
    {"cpu", "staging", "the CPU backend has no pinned staging buffers (host memory is already host memory)"},
    {"cuda", "arbitrary_strides", "CUDA copies only row-major pitched layouts (cuMemcpy2D)"},
    {"cuda", "cpu_kernel_fail", "ruda_cpu_kernel_fail is the CPU backend's failure channel"},
    {"opencl", "arbitrary_strides",
     "OpenCL copies only row-major pitched layouts (clEnqueue{Read,Write}BufferRect)"},
    {"opencl", "cpu_kernel_fail", "ruda_cpu_kernel_fail is the CPU backend's failure channel"},
    {"cpu", "disk_cache", "the CPU backend runs natively compiled C functions: nothing is compiled at run time, so there is no disk cache"},
};

static ruda_client_t *g_client;
static ruda_status_t g_error;
static ruda_device_id_t g_device;
static const char *g_device_name;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void cts_open(void) {
  const char *name = getenv("RUDA_CTS_DEVICE");
  if (!name || !*name) name = "cpu:0";
  g_device_name = name;
  g_error = ruda_device_parse(name, &g_device);
  if (!g_error) g_error = ruda_client_create(g_device, &g_client);
}

/* Without the device the suite skips, saying why; with RUDA_REQUIRE_DEVICE
 * naming its backend (CI, for opencl) it fails instead. */
ruda_client_t *cts_client(void) {
  pthread_once(&g_once, cts_open);
  if (g_error) {
    static char why[1024];
    size_t n = (size_t)snprintf(why, sizeof why, "%s: ", g_device_name);
    if (n < sizeof why) ruda_status_format(g_error, why + n, sizeof why - n);
    SKIP_UNAVAILABLE(g_device_name, why);
  }
  return g_client;
}

bool cts_is_cpu(void) {
  cts_client();
  return g_device.type_id == RUDA_DEVICE_TYPE_CPU;
}

void cts_still_usable(ruda_client_t *c) {
  ASSERT_OK(ruda_client_sync(c));
  uint32_t src[16], dst[16];
  for (int i = 0; i < 16; i++) src[i] = (uint32_t)i * 7u + 1u;
  ruda_handle_t h = cts_upload(c, src, sizeof src);
  ASSERT_OK(ruda_client_read(c, &h, dst, sizeof dst));
  ASSERT_MEM_EQ(src, dst, sizeof src);
  ruda_handle_release(&h);
}

ruda_status_t cts_expect_error(ruda_status_t s, ruda_error_kind_t kind, const char *reason) {
  ASSERT_NOT_NULL(s);
  ruda_status_t e = ruda_status_find(s, kind);
  if (!e) {
    char *text = ruda_status_to_string(s);
    rt_fail_msg(__FILE__, __LINE__, "no error of kind %d in:\n%s", (int)kind,
                text ? text : "(no text)");
    free(text);
    rt_fail();
  }
  if (reason) ASSERT_STR_CONTAINS(ruda_status_reason(e), reason);
  return e;
}

void cts_expect_text(ruda_status_t s, const char *has, const char *lacks) {
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  ASSERT_NOT_NULL(text);
  bool ok = (!has || strstr(text, has)) && (!lacks || !strstr(text, lacks));
  if (!ok) {
    rt_fail_msg(__FILE__, __LINE__, "the text should contain \"%s\" and not \"%s\":\n%s",
                has ? has : "", lacks ? lacks : "", text);
    free(text);
    rt_fail();
  }
  free(text);
}

uint64_t cts_empty_unallocatable(ruda_client_t *c, ruda_handle_t *h) {
  uint64_t total = ruda_client_properties(c)->hardware.total_memory;
  uint64_t size = total ? total * 4 : (1ull << 50);
  ASSERT_OK(ruda_client_empty(c, size, h));
  return size;
}

ruda_client_t *cts_fresh_stream_client(void) {
  ruda_client_t *c = cts_client();
  ruda_client_t *s = NULL;
  ruda_status_t err = ruda_client_on_stream(c, ruda_stream_id_next(), &s);
  if (err) {
    ruda_status_free(err);
    SKIP("cannot create a stream client");
  }
  return s;
}

typedef struct cts_thread {
  int (*fn)(int id);
  int id, wrong;
} cts_thread_t;

static void *cts_thread_main(void *p) {
  cts_thread_t *t = p;
  t->wrong = t->fn(t->id);
  return NULL;
}

void cts_on_threads(int n, int (*fn)(int id)) {
  enum { MAX_THREADS = 16 };
  ASSERT_TRUE(n > 0 && n <= MAX_THREADS);
  cts_client();
  pthread_t th[MAX_THREADS];
  cts_thread_t t[MAX_THREADS];
  for (int i = 0; i < n; i++) {
    t[i] = (cts_thread_t){fn, i, 0};
    ASSERT_EQ(pthread_create(&th[i], NULL, cts_thread_main, &t[i]), 0);
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++) ASSERT_EQ(t[i].wrong, 0);
}

typedef struct cts_call {
  ruda_status_t (*fn)(void *ctx);
  void *ctx;
  ruda_status_t status;
} cts_call_t;

static void *cts_call_main(void *p) {
  cts_call_t *call = p;
  call->status = call->fn(call->ctx);
  return NULL;
}

ruda_status_t cts_on_another_thread(ruda_status_t (*fn)(void *ctx), void *ctx) {
  cts_client();
  cts_call_t call = {fn, ctx, NULL};
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, cts_call_main, &call), 0);
  pthread_join(th, NULL);
  return call.status;
}

void cts_require(const char *feature) {
  cts_client();
  const char *backend = ruda_device_type_name(g_device.type_id);
  for (size_t i = 0; i < sizeof cts_unsupported / sizeof cts_unsupported[0]; i++) {
    if (strcmp(cts_unsupported[i].backend, backend) == 0 &&
        strcmp(cts_unsupported[i].feature, feature) == 0) {
      SKIP(cts_unsupported[i].why);
    }
  }
  /* The run's own list: "feature=why" entries separated by '|'. */
  const char *list = getenv("RUDA_CTS_UNSUPPORTED");
  size_t flen = strlen(feature);
  while (list && *list) {
    size_t len = strcspn(list, "|");
    const char *eq = memchr(list, '=', len);
    if (eq && (size_t)(eq - list) == flen && strncmp(list, feature, flen) == 0) {
      static char why[512];
      snprintf(why, sizeof why, "%.*s", (int)(len - flen - 1), eq + 1);
      SKIP(why);
    }
    list += len;
    if (*list == '|') list++;
  }
}

/* ---- Kernels ---- */

#include "cts_kernels.h"


static void fail_cpu(const ruda_cpu_kernel_ctx_t *k) {
  if (k->ruda_pos.x == 1) ruda_cpu_kernel_fail(k, "ruda %u saw a bad value", k->ruda_pos.x);
}

ruda_kernel_t *cts_kernel_from(ruda_kernel_desc_t d) {
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  if (s) {
    char buf[512];
    ruda_status_format(s, buf, sizeof buf);
    fprintf(stderr, "kernel %s: %s\n", d.name, buf);
    ruda_status_free(s);
    abort(); /* the suite's own kernels must build */
  }
  return k;
}

ruda_kernel_t *cts_kernel_add_f32(void) { return cts_kernel_from(RUDA_KERNEL_DESC(add_f32)); }
ruda_kernel_t *cts_kernel_fill_u32(void) { return cts_kernel_from(RUDA_KERNEL_DESC(fill_u32)); }
ruda_kernel_t *cts_kernel_inc_u32(void) { return cts_kernel_from(RUDA_KERNEL_DESC(inc_u32)); }
ruda_kernel_t *cts_kernel_empty(void) { return cts_kernel_with(ruda_dim_new_1d(1), 0); }
ruda_kernel_t *cts_kernel_fail(void) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(fail_cpu);
  ruda_kernel_desc_t d = test_kernel_desc("fail", ruda_dim_new_1d(1), &code);
  return cts_kernel_from(d);
}
ruda_kernel_t *cts_kernel_sum_shared(void) {
  ruda_kernel_desc_t d = RUDA_KERNEL_DESC(sum_shared);
  d.shared_mem_bytes = CTS_UNITS * sizeof(float);
  return cts_kernel_from(d);
}
static void unrunnable_cpu(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

ruda_kernel_t *cts_kernel_unrunnable(void) {
  ruda_kernel_code_t code = cts_is_cpu()
      ? ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C,
                              "extern \"C\" __global__ void unrunnable() {}")
      : ruda_kernel_code_cpu(unrunnable_cpu);
  ruda_kernel_desc_t d = test_kernel_desc("unrunnable", ruda_dim_new_1d(1), &code);
  return cts_kernel_from(d);
}

ruda_kernel_t *cts_kernel_with(ruda_dim_t dim, uint64_t shared) {
  ruda_kernel_desc_t d = RUDA_KERNEL_DESC(empty);
  d.ruda_dim = dim;
  d.shared_mem_bytes = shared;
  return cts_kernel_from(d);
}

ruda_handle_t cts_upload(ruda_client_t *c, const void *data, size_t bytes) {
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, data, bytes, &h));
  return h;
}

ruda_handle_t cts_empty(ruda_client_t *c, uint64_t bytes) {
  ruda_handle_t h;
  ASSERT_OK(ruda_client_empty(c, bytes, &h));
  return h;
}

ruda_status_t cts_fill_u32(ruda_client_t *c, const ruda_handle_t *h, uint64_t n, uint32_t value,
                           ruda_count_t count) {
  ruda_kernel_t *k = cts_kernel_fill_u32();
  uint64_t info[2] = {n, value};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 2, 2}};
  ruda_status_t s = ruda_client_launch(c, k, count, &args);
  ruda_kernel_release(k);
  return s;
}

void cts_fill_and_read(ruda_client_t *c, ruda_count_t count, uint32_t value,
                       uint32_t out[CTS_UNITS]) {
  memset(out, 0, CTS_UNITS * sizeof out[0]);
  ruda_handle_t h = cts_upload(c, out, CTS_UNITS * sizeof out[0]);
  ASSERT_OK(cts_fill_u32(c, &h, CTS_UNITS, value, count));
  ASSERT_OK(ruda_client_read(c, &h, out, CTS_UNITS * sizeof out[0]));
  ruda_handle_release(&h);
}
