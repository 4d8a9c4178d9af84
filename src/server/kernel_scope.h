/* Which kernel the calling thread is running, if any.
 *
 * A backend that runs user code on its own threads (the CPU backend's
 * kernels, on the device worker and the pool threads) marks that code with
 * ruda__kernel_scope_enter/leave. The client asks ruda__kernel_scope_current
 * before it queues work or waits: a kernel that calls back into ruda would
 * wait for the launch it is part of (a deadlock), or re-enter the server in
 * the middle of the launch, so such calls are refused with an error that
 * names the kernel.
 *
 * Thread-safety: the state is per thread; every function may be called
 * from any thread. Scopes nest (a kernel launched inline from inside another
 * one restores the outer kernel on leave).
 */
#ifndef RUDA_SERVER_KERNEL_SCOPE_H
#define RUDA_SERVER_KERNEL_SCOPE_H

#include "base/sync.h"
#include "ruda/types.h"

typedef struct ruda__kernel_scope {
  const char *name;       /* the kernel's name (borrowed from its object) */
  ruda_device_id_t device;
  const struct ruda__kernel_scope *outer;
} ruda__kernel_scope_t;

/* Marks the calling thread as running kernel `name` on `device` until
 * ruda__kernel_scope_leave(scope). `scope` is caller-owned storage (a
 * stack variable) that must stay valid until the leave. */
void ruda__kernel_scope_enter(ruda__kernel_scope_t *scope, const char *name,
                              ruda_device_id_t device);
void ruda__kernel_scope_leave(const ruda__kernel_scope_t *scope);
/* The innermost kernel the calling thread is running, or NULL (inline:
 * every client call asks). */
extern RUDA__THREAD_LOCAL const ruda__kernel_scope_t *ruda__kernel_scope_tls;
static inline const ruda__kernel_scope_t *ruda__kernel_scope_current(void) {
  return ruda__kernel_scope_tls;
}

#endif
