/* The recent kernels of a stream, for fault reports (recent_kernels.h). */
#include <stdio.h>
#include <string.h>

#include "ruda/export.h"
#include "server/recent_kernels.h"

RUDA__HOT
void ruda__recent_kernels_note(ruda__recent_kernels_t *rk, const char *name) {
  rk->total++;
  if (rk->n > 0 && strncmp(rk->names[(rk->n - 1) % RUDA__RECENT_KERNELS], name, 63) == 0) return;
  char *slot;
  if (rk->n < RUDA__RECENT_KERNELS) {
    slot = rk->names[rk->n++];
  } else {
    memmove(rk->names[0], rk->names[1], sizeof rk->names[0] * (RUDA__RECENT_KERNELS - 1));
    slot = rk->names[RUDA__RECENT_KERNELS - 1];
  }
  size_t len = strnlen(name, sizeof rk->names[0] - 1);
  memcpy(slot, name, len);
  slot[len] = '\0';
}

void ruda__recent_kernels_format(const ruda__recent_kernels_t *rk, char *buf, size_t cap) {
  if (cap == 0) return;
  buf[0] = '\0';
  size_t used = 0;
  uint32_t n = rk->n < RUDA__RECENT_KERNELS ? rk->n : RUDA__RECENT_KERNELS;
  for (uint32_t i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", rk->names[i]);
  if (rk->total > n && used < cap)
    snprintf(buf + used, cap - used, " (and %u more)", rk->total - n);
  if (buf[0] == '\0') snprintf(buf, cap, "(no kernel recorded)");
}
