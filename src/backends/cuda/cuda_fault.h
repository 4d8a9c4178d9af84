/* Faults of the CUDA server: the poison state (cuda_fault_t in
 * cuda_types.h: the first sticky error, its text, whether a caller already
 * received it, the context generation, whether the device is lost) and the
 * errors that report a fault, with the names of the kernels launched since
 * the stream's last sync.
 *
 * The lowest module of the server: anything may call it, it calls nothing
 * above it. Acting on a fault (resetting the device, which frees every
 * stream) is the vtable layer's (cuda_server.c), done once at the entry of
 * an operation. Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_FAULT_H
#define RUDA_CUDA_FAULT_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- The poison state ---- */

/* The context generation: bumped by every reset, so objects of a context
 * that was reset are recognised (any thread). */
static inline uint64_t ruda__cuda_generation(cuda_fault_t *f) { return atomic_load(&f->generation); }

/* True after a sticky fault not yet settled, or once the device is lost:
 * only the reset may touch the context then. One atomic load when healthy. */
static inline bool ruda__cuda_faulted(cuda_fault_t *f) {
  return atomic_load(&f->poisoned) != 0 || f->dead != 0;
}

/* Records a sticky fault (any thread). `reported`: the caller that saw it
 * returns (or queues) an error describing it, so the reset that follows
 * needs no second report. */
void ruda__cuda_poison(cuda_fault_t *f, CUresult r, const char *text, bool reported);

/* The error that reports a poisoning no caller received yet, to be queued
 * once the device has been reset; NULL when a caller already received it.
 * Only while poisoned and not dead. */
ruda_status_t ruda__cuda_fault_unreported(cuda_fault_t *f);

/* After a reset (recovered or not): `ok` false marks the device lost
 * (with the poisoning code, else `r`); then a new generation starts and the
 * poisoning is cleared. */
void ruda__cuda_fault_reset_done(cuda_fault_t *f, bool ok, CUresult r);

/* The device is lost (a reset after a sticky fault failed: the driver
 * keeps the context dead for the rest of the process):
 * ServerError::DeviceLost naming cuda:`index`, the code and the remedy
 * (restart the process). */
ruda_status_t ruda__cuda_fault_lost_error(cuda_fault_t *f, uint16_t index);
/* Queues the DeviceLost error on every stream of `streams` that has none
 * queued yet, so that every stream of the device fails at once. On the
 * thread running the server. */
void ruda__cuda_fault_lost_all(cuda_fault_t *f, ruda__stream_table_t *streams, uint16_t index);
/* The same for one stream. */
void ruda__cuda_fault_lost_one(cuda_fault_t *f, ruda__stream_t *rs, uint16_t index);
/* Once the device is lost, a later poisoning can bring nothing back: the
 * caller that queued the lost error clears it. */
void ruda__cuda_fault_unpoison(cuda_fault_t *f);

/* ---- Fault reports ---- */

/* The error for a fault seen while waiting on the stream. */
ruda_status_t ruda__cuda_fault_error(CUresult r, const char *call, const char *kernels) RUDA__COLD;
/* The error for a failure `r` of `call` on work of a stream; a sticky one
 * (the context is gone) also poisons `f`, reported by this error. */
ruda_status_t ruda__cuda_stream_fault(cuda_fault_t *f, CUresult r, const char *call,
                                      const char *kernels) RUDA__COLD;

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_FAULT_H */
