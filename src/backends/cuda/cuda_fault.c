/* Faults of the CUDA server: the poison state and the errors that report a
 * fault (cuda_fault.h). Called from any module and, for poisoning and the
 * fault errors, from any thread (futures); calls only the error
 * translation below it. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- The poison state ---- */

void ruda__cuda_poison(cuda_fault_t *f, CUresult r, const char *text, bool reported) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&f->poisoned, &expected, (int)r)) {
    snprintf(f->poison_text, sizeof f->poison_text, "%s", text);
    atomic_store(&f->poison_reported, reported ? 1 : 0);
    atomic_store(&f->poison_text_ready, 1);
  } else if (reported) {
    atomic_store(&f->poison_reported, 1);
  }
}

ruda_status_t ruda__cuda_fault_unreported(cuda_fault_t *f) {
  if (atomic_load(&f->poison_reported)) return NULL;
  int code = atomic_load(&f->poisoned);
  char text[600];
  snprintf(text, sizeof text, "%s", atomic_load(&f->poison_text_ready) ? f->poison_text : "");
  return ruda_status_into_server(ruda_status_set_vendor(
      ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                         "a kernel failed on the device (%s): %s; the CUDA context was "
                         "reset and buffers created before are gone",
                         ruda__cu_result_name((CUresult)code), text),
      "cuStreamSynchronize", ruda__cu_result_name((CUresult)code), code));
}

void ruda__cuda_fault_reset_done(cuda_fault_t *f, bool ok, CUresult r) {
  int code = atomic_load(&f->poisoned);
  if (!ok && f->dead == 0) f->dead = code ? code : (int)r;
  atomic_fetch_add(&f->generation, 1);
  atomic_store(&f->poison_text_ready, 0);
  atomic_store(&f->poison_reported, 0);
  atomic_store(&f->poisoned, 0);
}

ruda_status_t ruda__cuda_fault_lost_error(cuda_fault_t *f, uint16_t index) {
  return ruda_status_set_vendor(
      ruda_status_create(RUDA_ERR_SERVER_DEVICE_LOST,
                         "cuda:%u is lost after a kernel fault (%s): the driver keeps the "
                         "context dead and refused to reset it, so no work can run on this "
                         "device again in this process; restart the process (other devices "
                         "keep working)",
                         index, ruda__cu_result_name((CUresult)f->dead)),
      "cuDevicePrimaryCtxReset", ruda__cu_result_name((CUresult)f->dead), f->dead);
}

/* Whether `rs` already has a DeviceLost queued. */
static bool lost_queued(ruda__stream_t *rs) {
  for (size_t i = 0; i < rs->errors.len; i++) {
    if (ruda_status_kind(rs->errors.items[i]) == RUDA_ERR_SERVER_DEVICE_LOST) return true;
  }
  return false;
}

typedef struct lost_ctx {
  cuda_fault_t *f;
  uint16_t index;
} lost_ctx_t;

static void push_lost(void *ctx, ruda__stream_t *rs) {
  lost_ctx_t *l = ctx;
  if (!lost_queued(rs)) ruda__stream_push_error(rs, ruda__cuda_fault_lost_error(l->f, l->index));
}

void ruda__cuda_fault_lost_one(cuda_fault_t *f, ruda__stream_t *rs, uint16_t index) {
  lost_ctx_t l = {f, index};
  push_lost(&l, rs);
}

void ruda__cuda_fault_lost_all(cuda_fault_t *f, ruda__stream_table_t *streams, uint16_t index) {
  lost_ctx_t l = {f, index};
  ruda__stream_table_foreach(streams, push_lost, &l);
}

void ruda__cuda_fault_unpoison(cuda_fault_t *f) { atomic_store(&f->poisoned, 0); }

/* ---- Fault reports ---- */

ruda_status_t ruda__cuda_fault_error(CUresult r, const char *call, const char *kernels) {
  ruda_status_t s = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call,
                                   "a kernel failed on the device; kernels launched on this "
                                   "stream since its last sync: %s",
                                   kernels);
  return ruda_status_into_server(s);
}

ruda_status_t ruda__cuda_stream_fault(cuda_fault_t *f, CUresult r, const char *call,
                                      const char *kernels) {
  if (ruda__cu_result_is_sticky(r)) ruda__cuda_poison(f, r, kernels, true);
  return ruda__cuda_fault_error(r, call, kernels);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
