/* Public futures: a server's future (or a result known early) plus the
 * bindings that must stay alive until the operation completes. When both a
 * call's status and a server future exist, the call's status is the
 * result (the future is still waited for, so nothing it uses is freed
 * early). */
#include "base/alloc.h"
#include "client/client_internal.h"

struct ruda_future {
  ruda__future_t *inner; /* NULL when `early` holds the result */
  ruda_status_t early;
  ruda_binding_t *bindings; /* kept alive until completion */
  size_t num_bindings;
};

static void release_bindings(ruda_binding_t *bindings, size_t n) {
  for (size_t i = 0; i < n; i++) ruda_binding_release(&bindings[i]);
  ruda__free(bindings);
}

RUDA__HOT
ruda_status_t ruda__client_future_finish(ruda__future_t *f) {
  if (!f) return NULL;
  ruda_status_t s = f->vt->wait(f);
  f->vt->destroy(f);
  return s;
}

ruda_status_t ruda__client_future_make(ruda__future_t *inner, ruda_status_t early,
                                       ruda_binding_t *bindings, size_t n, ruda_future_t **out) {
  ruda_future_t *f = ruda__calloc(1, sizeof *f);
  *out = f;
  if (!f) {
    ruda_status_t s = early, w = ruda__client_future_finish(inner);
    if (s) ruda_status_free(w);
    else s = w;
    release_bindings(bindings, n);
    return s ? s : ruda_status_create(RUDA_ERR_IO_UNKNOWN, "out of host memory creating a future");
  }
  f->inner = inner;
  f->early = early;
  f->bindings = bindings;
  f->num_bindings = n;
  return NULL;
}

ruda_status_t ruda_future_wait(ruda_future_t *f) {
  if (!f) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_future_wait: NULL future");
  ruda_status_t s = f->early, w = ruda__client_future_finish(f->inner);
  if (s) ruda_status_free(w);
  else s = w;
  release_bindings(f->bindings, f->num_bindings);
  ruda__free(f);
  return s;
}

bool ruda_future_poll(ruda_future_t *f) {
  if (!f) return true;
  return f->inner ? f->inner->vt->poll(f->inner) : true;
}
