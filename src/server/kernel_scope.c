/* Per-thread record of the kernel being run (see kernel_scope.h). */
#include "server/kernel_scope.h"

#include <stddef.h>

#include "base/sync.h"

RUDA__THREAD_LOCAL const ruda__kernel_scope_t *ruda__kernel_scope_tls;

RUDA__HOT
void ruda__kernel_scope_enter(ruda__kernel_scope_t *scope, const char *name,
                              ruda_device_id_t device) {
  scope->name = name;
  scope->device = device;
  scope->outer = ruda__kernel_scope_tls;
  ruda__kernel_scope_tls = scope;
}

RUDA__HOT
void ruda__kernel_scope_leave(const ruda__kernel_scope_t *scope) {
  ruda__kernel_scope_tls = scope->outer;
}
