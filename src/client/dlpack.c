/* DLPack export and import (ruda/dlpack.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "ruda/dlpack.h"

/* ---- dtypes and extents ---- */

const char *ruda_dlpack_dtype_name(DLDataType t) {
  if (t.lanes != 1) return NULL;
  switch (t.code) {
    case kDLInt:
      return t.bits == 8 ? "int8" : t.bits == 16 ? "int16" : t.bits == 32 ? "int32"
             : t.bits == 64 ? "int64" : NULL;
    case kDLUInt:
      return t.bits == 8 ? "uint8" : t.bits == 16 ? "uint16" : t.bits == 32 ? "uint32"
             : t.bits == 64 ? "uint64" : NULL;
    case kDLFloat:
      return t.bits == 16 ? "float16" : t.bits == 32 ? "float32" : t.bits == 64 ? "float64" : NULL;
    case kDLBfloat: return t.bits == 16 ? "bfloat16" : NULL;
    case kDLBool: return t.bits == 8 ? "bool" : NULL;
    default: return NULL;
  }
}

static ruda_status_t bad_dtype(const char *who, DLDataType t) {
  static const char *const codes[] = {"int", "uint", "float", "opaque handle", "bfloat",
                                      "complex", "bool"};
  const char *kind = t.code < sizeof codes / sizeof codes[0] ? codes[t.code] : "float8/6/4 or unknown";
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "%s: dtype %s%u (code %u, %u bits, %u lanes) is not supported (int8..64, "
                            "uint8..64, float16/32/64, bfloat16, bool; one lane)",
                            who, kind, (unsigned)t.bits * (t.lanes ? t.lanes : 1), (unsigned)t.code,
                            (unsigned)t.bits, (unsigned)t.lanes);
}

/* Checks shape and strides (in elements; NULL: row-major, written to
 * `out_strides`) and gives the bytes from the first element to the end of
 * the last one the tensor reaches (0 for an empty tensor). */
static ruda_status_t extent(const char *who, int32_t ndim, const int64_t *shape,
                            const int64_t *strides, uint64_t elem, int64_t *out_strides,
                            uint64_t *out_bytes) {
  *out_bytes = 0;
  if (ndim < 0 || ndim > RUDA_DLPACK_MAX_DIMS)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: ndim %d is outside 0..%d", who,
                              (int)ndim, RUDA_DLPACK_MAX_DIMS);
  if (ndim > 0 && !shape)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: NULL shape with ndim %d", who,
                              (int)ndim);
  bool empty = false;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: shape[%d] is negative (%lld)",
                                who, (int)i, (long long)shape[i]);
    if (shape[i] == 0) empty = true;
  }
  /* Row-major strides when none are given. */
  int64_t run = 1;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    if (strides) {
      if (strides[i] < 0)
        return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                  "%s: strides[%d] is negative (%lld); ruda takes non-negative "
                                  "strides only",
                                  who, (int)i, (long long)strides[i]);
      out_strides[i] = strides[i];
    } else {
      out_strides[i] = run;
      if (shape[i] > 1 && run > INT64_MAX / shape[i])
        return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: the shape's size overflows",
                                  who);
      run *= shape[i] > 0 ? shape[i] : 1;
    }
  }
  if (empty) return NULL;
  /* The last element's index: sum of (shape - 1) * stride, overflow-checked. */
  uint64_t last = 0;
  for (int32_t i = 0; i < ndim; i++) {
    uint64_t n = (uint64_t)shape[i] - 1, s = (uint64_t)out_strides[i];
    if (n && s > (UINT64_MAX - last) / n)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "%s: shape and strides reach past 2^64 elements", who);
    last += n * s;
  }
  if (last + 1 > UINT64_MAX / elem || last == UINT64_MAX)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: the extent in bytes overflows",
                              who);
  *out_bytes = (last + 1) * elem;
  return NULL;
}

/* ---- Export ---- */

typedef struct exported {
  struct DLManagedTensorVersioned t;
  ruda_resource_t resource; /* keeps the memory alive */
  int64_t shape[RUDA_DLPACK_MAX_DIMS];
  int64_t strides[RUDA_DLPACK_MAX_DIMS];
} exported_t;

static void exported_delete(struct DLManagedTensorVersioned *t) {
  if (!t) return;
  exported_t *e = t->manager_ctx;
  ruda_resource_release(&e->resource);
  ruda__free(e);
}

typedef struct fence_call {
  uint64_t other;
} fence_call_t;

static ruda_status_t do_fence(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  fence_call_t *f = ctx;
  return s->vt->fence_external ? s->vt->fence_external(s, st, f->other) : NULL;
}

static ruda_status_t check_stream(ruda_client_t *c, int64_t stream) {
  if (stream == RUDA_DLPACK_NO_STREAM) return NULL;
  if (c->dev->id.type_id != RUDA_DEVICE_TYPE_CUDA)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_dlpack_export: stream %lld on a device without streams (it "
                              "takes only RUDA_DLPACK_NO_STREAM, -1)",
                              (long long)stream);
  if (stream == 0 || stream < -1)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_dlpack_export: stream %lld is not a CUDA stream (-1: none, "
                              "1: legacy default, 2: per-thread default, else a CUstream)",
                              (long long)stream);
  return NULL;
}

ruda_status_t ruda_dlpack_export(ruda_client_t *c, const ruda_handle_t *h, DLDataType dtype,
                                 int32_t ndim, const int64_t *shape, const int64_t *strides,
                                 int64_t stream, struct DLManagedTensorVersioned **out) {
  static const char who[] = "ruda_dlpack_export";
  if (out) *out = NULL;
  if (!c || !h || !out) return ruda__client_invalid("ruda_dlpack_export: NULL argument");
  if (!ruda_dlpack_dtype_name(dtype)) return bad_dtype(who, dtype);
  exported_t *e = ruda__calloc(1, sizeof *e);
  if (!e) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *e);
  uint64_t bytes = 0;
  ruda_status_t s = extent(who, ndim, shape, strides, dtype.bits / 8u, e->strides, &bytes);
  if (!s) s = check_stream(c, stream);
  if (!s) s = ruda__client_check_view(c, h, "dlpack export");
  if (!s && bytes > ruda_handle_size_in_used(h))
    s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                           "%s: the tensor reaches %llu bytes; the view holds %llu", who,
                           (unsigned long long)bytes,
                           (unsigned long long)ruda_handle_size_in_used(h));
  if (!s) s = ruda_client_get_resource(c, h, &e->resource);
  if (!s && stream != RUDA_DLPACK_NO_STREAM) {
    fence_call_t f = {(uint64_t)stream};
    s = ruda__client_call(c, who, RUDA__CALL_SHORT, do_fence, &f);
  }
  if (s) {
    ruda_resource_release(&e->resource);
    ruda__free(e);
    return s;
  }
  for (int32_t i = 0; i < ndim; i++) e->shape[i] = shape[i];
  struct DLManagedTensorVersioned *t = &e->t;
  t->version.major = DLPACK_MAJOR_VERSION;
  t->version.minor = DLPACK_MINOR_VERSION;
  t->manager_ctx = e;
  t->deleter = exported_delete;
  t->flags = ruda__handle_read_only(h) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  ruda_device_id_t dev = c->dev->id;
  t->dl_tensor.device.device_type = dev.type_id == RUDA_DEVICE_TYPE_CUDA     ? kDLCUDA
                                    : dev.type_id == RUDA_DEVICE_TYPE_OPENCL ? kDLOpenCL
                                                                             : kDLCPU;
  t->dl_tensor.device.device_id = dev.type_id == RUDA_DEVICE_TYPE_CPU ? 0 : (int32_t)dev.index_id;
  t->dl_tensor.data = (void *)(uintptr_t)e->resource.address;
  t->dl_tensor.byte_offset = 0;
  t->dl_tensor.ndim = ndim;
  t->dl_tensor.dtype = dtype;
  t->dl_tensor.shape = ndim ? e->shape : NULL;
  t->dl_tensor.strides = ndim ? e->strides : NULL;
  *out = t;
  return NULL;
}

/* ---- Import ---- */

static void call_deleter(void *ctx) {
  struct DLManagedTensorVersioned *t = ctx;
  if (t->deleter) t->deleter(t);
}

typedef struct import_call {
  ruda_memory_t *memory;
  ruda__external_memory_t ext;
} import_call_t;

static ruda_status_t do_import(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  import_call_t *i = ctx;
  if (!s->vt->import_memory)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "the %s backend imports no DLPack tensor",
                              s->vt->name);
  return s->vt->import_memory(s, i->memory, &i->ext, st);
}

static const char *dl_device_name(int32_t type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    default: return "an unknown device type";
  }
}

/* Whether the tensor's device is the client's. */
static ruda_status_t check_device(ruda_client_t *c, DLDevice d) {
  ruda_device_id_t dev = c->dev->id;
  char name[32];
  ruda_device_id_format(dev, name, sizeof name);
  bool host = d.device_type == kDLCPU || d.device_type == kDLCUDAHost;
  if (host || d.device_type == kDLCUDA) {
    bool ok = host ? dev.type_id == RUDA_DEVICE_TYPE_CPU
                   : dev.type_id == RUDA_DEVICE_TYPE_CUDA && d.device_id >= 0 &&
                         (uint32_t)d.device_id == dev.index_id;
    if (ok) return NULL;
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_dlpack_import: the tensor lives on %s device %d; the client "
                              "is %s (import it with a client of that device)",
                              dl_device_name(d.device_type), (int)d.device_id, name);
  }
  if (d.device_type == kDLOpenCL)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "ruda_dlpack_import: a kDLOpenCL tensor's cl_mem belongs to its "
                              "producer's OpenCL context, which ruda cannot use");
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "ruda_dlpack_import: the tensor lives on %s (type %d), a device ruda "
                            "has no backend for",
                            dl_device_name(d.device_type), (int)d.device_type);
}

ruda_status_t ruda_dlpack_import(ruda_client_t *c, struct DLManagedTensorVersioned *t,
                                 ruda_dlpack_tensor_t *out) {
  static const char who[] = "ruda_dlpack_import";
  if (out) memset(out, 0, sizeof *out);
  ruda_status_t s = NULL;
  if (!t) return ruda__client_invalid("ruda_dlpack_import: NULL tensor");
  if (!c || !out) {
    s = ruda__client_invalid("ruda_dlpack_import: NULL argument");
  } else if (t->version.major != DLPACK_MAJOR_VERSION) {
    s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                           "%s: DLPack version %u.%u; ruda reads major version %d", who,
                           (unsigned)t->version.major, (unsigned)t->version.minor,
                           DLPACK_MAJOR_VERSION);
  }
  const DLTensor *d = &t->dl_tensor;
  uint64_t bytes = 0;
  if (!s && !ruda_dlpack_dtype_name(d->dtype)) s = bad_dtype(who, d->dtype);
  if (!s) s = extent(who, d->ndim, d->shape, d->strides, d->dtype.bits / 8u, out->strides, &bytes);
  if (!s && bytes && !d->data)
    s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: NULL data for %llu bytes", who,
                           (unsigned long long)bytes);
  uint64_t base = (uint64_t)(uintptr_t)d->data;
  if (!s && bytes && (base > UINT64_MAX - bytes || d->byte_offset > UINT64_MAX - base - bytes))
    s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: byte_offset %llu overflows", who,
                           (unsigned long long)d->byte_offset);
  if (!s) s = check_device(c, d->device);
  if (!s) s = ruda__handle_create(bytes, c->dev->id, ruda__client_stream(c), &out->handle);
  if (!s) {
    bool ro = (t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    ruda_memory_t *m = ruda__handle_memory(&out->handle);
    if (ro) ruda__memory_set_read_only(m);
    import_call_t ic = {m, {base + d->byte_offset, bytes, call_deleter, t}};
    s = ruda__client_call(c, who, RUDA__CALL_SHORT, do_import, &ic);
    if (s) ruda_handle_release(&out->handle);
    out->read_only = ro;
  }
  if (s) {
    if (out) memset(out, 0, sizeof *out);
    call_deleter(t);
    return s;
  }
  out->dtype = d->dtype;
  out->ndim = d->ndim;
  for (int32_t i = 0; i < d->ndim; i++) out->shape[i] = d->shape[i];
  return NULL;
}

typedef struct stream_call {
  uint64_t value;
  bool has;
} stream_call_t;

static ruda_status_t do_stream(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  stream_call_t *sc = ctx;
  if (!s->vt->native_stream) return NULL;
  sc->has = true;
  return s->vt->native_stream(s, st, &sc->value);
}

ruda_status_t ruda_dlpack_stream(ruda_client_t *c, int64_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_dlpack_stream: NULL argument");
  *out = RUDA_DLPACK_NO_STREAM;
  stream_call_t sc = {0, false};
  ruda_status_t s = ruda__client_call(c, "ruda_dlpack_stream", RUDA__CALL_SHORT, do_stream, &sc);
  if (!s && sc.has) *out = (int64_t)sc.value;
  return s;
}
