/* Profiles: ruda_client_profile (a closure measured on the device) and
 * profiling tokens (start/end, nested and overlapping). A profile is failed
 * by an error queued on its stream while it is open and reports a copy of
 * it; the error itself stays queued (observing never moves an error). The
 * file map of the client is in client_internal.h. */
#include "client/client_internal.h"

/* ---- The closure form ---- */

typedef struct profile_ctx {
  const char *name;
  ruda_status_t (*fn)(ruda_client_t *, void *);
  void *ctx;
  ruda_profile_duration_t duration;
  ruda_status_t fn_status;
} profile_ctx_t;

static ruda_status_t profile_body(ruda_client_t *c, void *arg) {
  profile_ctx_t *p = arg;
  return ruda__client_profile_run(c, p->fn, p->ctx, false, &p->fn_status, &p->duration);
}

ruda_status_t ruda_client_profile(ruda_client_t *c, const char *name,
                                  ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                  void *ctx, ruda_profile_duration_t *out) {
  if (!c || !fn) return ruda__client_invalid("ruda_client_profile: NULL argument");
  ruda_status_t refused = ruda__device_refuse_in_kernel("ruda_client_profile");
  if (refused) return refused;
  profile_ctx_t p = {.name = name, .fn = fn, .ctx = ctx};
  ruda_status_t s = ruda_client_exclusive(c, profile_body, &p);
  if (p.fn_status) {
    ruda_status_free(s);
    return p.fn_status;
  }
  if (s) return s;
  if (out) *out = p.duration;
  return NULL;
}

/* ---- Profiling tokens ---- */

static ruda_status_t do_profile_start(ruda__server_t *s, ruda_stream_id_t st, void *out) {
  return s->vt->start_profile(s, st, out);
}

typedef struct profile_end_call {
  ruda_profiling_token_t token;
  ruda_profile_duration_t *out;
} profile_end_call_t;

static ruda_status_t do_profile_end(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  profile_end_call_t *e = ctx;
  return s->vt->end_profile(s, st, e->token, e->out);
}

static ruda_status_t profile_open(ruda_client_t *c, ruda_profiling_token_t *out) {
  return ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_profile_start, out);
}

static ruda_status_t profile_close(ruda_client_t *c, ruda_profiling_token_t token,
                                   ruda_profile_duration_t *out) {
  profile_end_call_t e = {token, out};
  return ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_profile_end, &e);
}

ruda_status_t ruda__client_profile_run(ruda_client_t *c, ruda_status_t (*fn)(ruda_client_t *, void *),
                                       void *ctx, bool run_unmeasured, ruda_status_t *out_fn,
                                       ruda_profile_duration_t *out) {
  ruda_profiling_token_t token;
  ruda_status_t s = profile_open(c, &token);
  *out_fn = !s || run_unmeasured ? fn(c, ctx) : NULL;
  if (s) return ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_into_server(s));
  return profile_close(c, token, out);
}

ruda_status_t ruda_client_profile_start(ruda_client_t *c, ruda_profiling_token_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_profile_start: NULL argument");
  return ruda__client_call(c, "ruda_client_profile_start", RUDA__CALL_SHORT, do_profile_start, out);
}

ruda_status_t ruda_client_profile_end(ruda_client_t *c, ruda_profiling_token_t token,
                                      ruda_profile_duration_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_profile_end: NULL argument");
  profile_end_call_t e = {token, out};
  return ruda__client_call(c, "ruda_client_profile_end", RUDA__CALL_SHORT, do_profile_end, &e);
}
