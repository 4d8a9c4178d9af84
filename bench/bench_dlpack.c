/* dlpack: exchanging a tensor with another library through DLPack
 * (ruda/dlpack.h), on the bench's device.
 *
 *  export_import_roundtrip  ns per ruda_dlpack_export of a 1 MiB handle as a
 *                           2-D float32 tensor, ruda_dlpack_import of that
 *                           tensor as a new handle (no copy), and the
 *                           release of that handle (which runs the export's
 *                           deleter); baseline: what a minimal producer and
 *                           consumer do by hand (fill a malloc'ed
 *                           DLManagedTensorVersioned, call its deleter)
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/client.h"
#include "ruda/dlpack.h"

typedef struct dl_ctx {
  ruda_client_t *client;
  ruda_handle_t h;
  ruda_status_t error;
  int64_t shape[2];
  float *raw;
} dl_ctx_t;

static void ruda_roundtrip(void *p) {
  dl_ctx_t *c = p;
  static const DLDataType f32 = {kDLFloat, 32, 1};
  struct DLManagedTensorVersioned *t = NULL;
  ruda_status_t s = ruda_dlpack_export(c->client, &c->h, f32, 2, c->shape, NULL,
                                       RUDA_DLPACK_NO_STREAM, &t);
  ruda_dlpack_tensor_t rt;
  if (!s) s = ruda_dlpack_import(c->client, t, &rt);
  if (!s) ruda_handle_release(&rt.handle);
  ruda_bench_keep_error(&c->error, s);
}

typedef struct raw_tensor {
  struct DLManagedTensorVersioned t;
  int64_t shape[2];
  int64_t strides[2];
} raw_tensor_t;

static void raw_delete(struct DLManagedTensorVersioned *t) { free(t->manager_ctx); }

static void raw_roundtrip(void *p) {
  dl_ctx_t *c = p;
  raw_tensor_t *r = calloc(1, sizeof *r);
  if (!r) return;
  r->t.version.major = DLPACK_MAJOR_VERSION;
  r->t.manager_ctx = r;
  r->t.deleter = raw_delete;
  r->t.dl_tensor.data = c->raw;
  r->t.dl_tensor.device.device_type = kDLCPU;
  r->t.dl_tensor.ndim = 2;
  r->t.dl_tensor.dtype.code = kDLFloat;
  r->t.dl_tensor.dtype.bits = 32;
  r->t.dl_tensor.dtype.lanes = 1;
  r->shape[0] = c->shape[0];
  r->shape[1] = c->shape[1];
  r->strides[0] = c->shape[1];
  r->strides[1] = 1;
  r->t.dl_tensor.shape = r->shape;
  r->t.dl_tensor.strides = r->strides;
  /* The consumer reads the header and gives the tensor back. */
  struct DLManagedTensorVersioned *volatile seen = &r->t;
  seen->deleter(seen);
}

void ruda_bench_dlpack(ruda_bench_t *b) {
  if (ruda_bench_on_opencl(b)) {
    ruda_bench_skip(b, "dlpack", "export_import_roundtrip",
                    "opencl:N exports only: a cl_mem belongs to one OpenCL context, so ruda "
                    "imports no kDLOpenCL tensor");
    return;
  }
  dl_ctx_t c;
  memset(&c, 0, sizeof c);
  if (!ruda_bench_open_client(b, "dlpack", "export_import_roundtrip", &c.client)) return;
  c.shape[0] = 512;
  c.shape[1] = 512;
  c.raw = calloc(512 * 512, sizeof(float));
  ruda_status_t s = ruda_client_empty(c.client, 512 * 512 * sizeof(float), &c.h);
  if (!s) s = ruda_client_sync(c.client);
  if (s || !c.raw) {
    ruda_bench_fail_status(b, "dlpack", "export_import_roundtrip", s);
  } else {
    size_t reps = ruda_bench_pick(b, 30, 10, 1), inner = ruda_bench_pick(b, 2000, 500, 1);
    ruda_bench_stats_t r, base;
    ruda_bench_compare_calls(ruda_roundtrip, raw_roundtrip, &c, 100, reps, inner, &r, &base);
    if (c.error) ruda_bench_fail_status(b, "dlpack", "export_import_roundtrip", c.error);
    else ruda_bench_report(b, "dlpack", "export_import_roundtrip", "ns", r, base,
                           "malloc'ed DLManagedTensorVersioned + deleter", true);
    c.error = NULL;
  }
  ruda_handle_release(&c.h);
  free(c.raw);
  ruda_client_release(c.client);
}
