/* Per-thread record of the kernel being run (see kernel_scope.h). */
#include "server/kernel_scope.h"

#include <stddef.h>

#include "base/sync.h"

static RUDA__THREAD_LOCAL const ruda__kernel_scope_t *tls_scope;

RUDA__HOT
void ruda__kernel_scope_enter(ruda__kernel_scope_t *scope, const char *name,
                              ruda_device_id_t device) {
  scope->name = name;
  scope->device = device;
  scope->outer = tls_scope;
  tls_scope = scope;
}

RUDA__HOT
void ruda__kernel_scope_leave(const ruda__kernel_scope_t *scope) { tls_scope = scope->outer; }

RUDA__HOT
const ruda__kernel_scope_t *ruda__kernel_scope_current(void) { return tls_scope; }
