/* Shared pieces of the conformance suite: device selection, the per-backend
 * unsupported lists and the kernels. Included by every tests/cts program. */
#include <pthread.h>
#include <stdio.h>

#include "cts.h"

typedef struct unsupported {
  const char *backend;
  const char *feature;
  const char *why;
} unsupported_t;

/* What a backend does not support, and why. */
static const unsupported_t cts_unsupported[] = {
    {"cpu", "staging", "the CPU backend has no pinned staging buffers (host memory is already host memory)"},
    {"cuda", "arbitrary_strides", "CUDA copies only row-major pitched layouts (cuMemcpy2D)"},
    {"cuda", "cpu_kernel_fail", "ruda_cpu_kernel_fail is the CPU backend's failure channel"},
    {"cpu", "disk_cache", "the CPU backend runs natively compiled C functions: nothing is compiled at run time, so there is no disk cache"},
};

static ruda_client_t *g_client;
static ruda_status_t g_error;
static ruda_device_id_t g_device;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void cts_open(void) {
  const char *name = getenv("RUDA_CTS_DEVICE");
  if (!name || !*name) name = "cpu:0";
  g_error = ruda_device_parse(name, &g_device);
  if (!g_error) g_error = ruda_client_create(g_device, &g_client);
}

ruda_client_t *cts_client(void) {
  pthread_once(&g_once, cts_open);
  if (g_error) {
    static char why[1024];
    ruda_status_format(g_error, why, sizeof why);
    SKIP(why);
  }
  return g_client;
}

bool cts_is_cpu(void) {
  cts_client();
  return g_device.type_id == RUDA_DEVICE_TYPE_CPU;
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

void cts_require(const char *feature) {
  cts_client();
  const char *backend = ruda_device_type_name(g_device.type_id);
  for (size_t i = 0; i < sizeof cts_unsupported / sizeof cts_unsupported[0]; i++) {
    if (strcmp(cts_unsupported[i].backend, backend) == 0 &&
        strcmp(cts_unsupported[i].feature, feature) == 0) {
      SKIP(cts_unsupported[i].why);
    }
  }
}

/* ---- Kernels ---- */

static void add_f32_cpu(const ruda_cpu_kernel_ctx_t *k) {
  const float *a = k->buffers[0];
  const float *b = k->buffers[1];
  float *c = k->buffers[2];
  uint64_t n = k->info[0];
  uint64_t base = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) {
    uint64_t i = base + u;
    if (i < n) c[i] = a[i] + b[i];
  }
}

static const char add_f32_cuda[] =
    "extern \"C\" __global__ void add_f32(const float *a, const float *b, float *c,\n"
    "                                     const unsigned long long *info) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < info[0]) c[i] = a[i] + b[i];\n"
    "}\n";

static void fill_u32_cpu(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *out = k->buffers[0];
  uint64_t n = k->info[0];
  uint64_t base = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) {
    if (base + u < n) out[base + u] = (uint32_t)k->info[1];
  }
}

static const char fill_u32_cuda[] =
    "extern \"C\" __global__ void fill_u32(unsigned int *out, const unsigned long long *info) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < info[0]) out[i] = (unsigned int)info[1];\n"
    "}\n";

static void empty_cpu(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

static const char empty_cuda[] =
    "extern \"C\" __global__ void empty(const unsigned long long *info) {}\n";

static void fail_cpu(const ruda_cpu_kernel_ctx_t *k) {
  if (k->ruda_pos.x == 1) ruda_cpu_kernel_fail(k, "ruda %u saw a bad value", k->ruda_pos.x);
}

/* out[ruda] = sum of in[ruda*units .. +units) computed through shared memory. */
static void sum_shared_cpu(const ruda_cpu_kernel_ctx_t *k) {
  const float *in = k->buffers[0];
  float *out = k->buffers[1];
  float *sh = k->shared;
  uint64_t base = (uint64_t)k->ruda_pos.x * k->ruda_dim.x;
  for (uint32_t u = 0; u < k->ruda_dim.x; u++) sh[u] = in[base + u];
  for (uint32_t stride = k->ruda_dim.x / 2; stride > 0; stride /= 2) {
    for (uint32_t u = 0; u < stride; u++) sh[u] += sh[u + stride];
  }
  out[k->ruda_pos.x] = sh[0];
}

static const char sum_shared_cuda[] =
    "extern \"C\" __global__ void sum_shared(const float *in, float *out,\n"
    "                                        const unsigned long long *info) {\n"
    "  extern __shared__ float sh[];\n"
    "  unsigned int u = threadIdx.x;\n"
    "  sh[u] = in[(unsigned long long)blockIdx.x * blockDim.x + u];\n"
    "  __syncthreads();\n"
    "  for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {\n"
    "    if (u < s) sh[u] += sh[u + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (u == 0) out[blockIdx.x] = sh[0];\n"
    "}\n";

static ruda_kernel_t *make(const char *name, ruda_cpu_kernel_fn fn, const char *cuda,
                           ruda_dim_t dim, uint64_t shared) {
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = dim;
  d.shared_mem_bytes = shared;
  ruda_kernel_code_t code[2] = {ruda_kernel_code_cpu(fn),
                                ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, cuda)};
  d.code = code;
  d.num_code = cuda ? 2 : 1;
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  if (s) {
    char buf[512];
    ruda_status_format(s, buf, sizeof buf);
    fprintf(stderr, "kernel %s: %s\n", name, buf);
    ruda_status_free(s);
    abort(); /* the suite's own kernels must build */
  }
  return k;
}

ruda_kernel_t *cts_kernel_add_f32(void) {
  return make("add_f32", add_f32_cpu, add_f32_cuda, ruda_dim_new_1d(CTS_UNITS), 0);
}
ruda_kernel_t *cts_kernel_fill_u32(void) {
  return make("fill_u32", fill_u32_cpu, fill_u32_cuda, ruda_dim_new_1d(CTS_UNITS), 0);
}
ruda_kernel_t *cts_kernel_empty(void) {
  return make("empty", empty_cpu, empty_cuda, ruda_dim_new_1d(1), 0);
}
ruda_kernel_t *cts_kernel_fail(void) {
  return make("fail", fail_cpu, NULL, ruda_dim_new_1d(1), 0);
}
ruda_kernel_t *cts_kernel_sum_shared(void) {
  return make("sum_shared", sum_shared_cpu, sum_shared_cuda, ruda_dim_new_1d(CTS_UNITS),
              CTS_UNITS * sizeof(float));
}
ruda_kernel_t *cts_kernel_with(ruda_dim_t dim, uint64_t shared) {
  return make("empty", empty_cpu, empty_cuda, dim, shared);
}
