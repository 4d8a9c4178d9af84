/* The kernels launched on a stream since its last completed sync or read,
 * for the error of a device fault found later ("kernels launched on this
 * stream since its last sync: k1, k2 (and 3 more)"): the last
 * RUDA__RECENT_KERNELS distinct names and how many launches in all. Kept
 * by the GPU backends in their per-stream state; caller-owned storage,
 * not thread-safe (the stream's owner only). */
#ifndef RUDA_SERVER_RECENT_KERNELS_H
#define RUDA_SERVER_RECENT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define RUDA__RECENT_KERNELS 4

typedef struct ruda__recent_kernels {
  char names[RUDA__RECENT_KERNELS][64];
  uint32_t n, total;
} ruda__recent_kernels_t;

/* Notes that `name` was launched (a repeat of the last name counts only). */
void ruda__recent_kernels_note(ruda__recent_kernels_t *rk, const char *name);
/* Work before a completed sync or read cannot be the cause of a later
 * fault: forgets the names. */
static inline void ruda__recent_kernels_clear(ruda__recent_kernels_t *rk) {
  rk->n = 0;
  rk->total = 0;
}
/* "k1, k2 (and 3 more)", or "(no kernel recorded)", into the caller's
 * buffer (truncated to cap). */
void ruda__recent_kernels_format(const ruda__recent_kernels_t *rk, char *buf, size_t cap);

#endif /* RUDA_SERVER_RECENT_KERNELS_H */
