/* NCCL collectives and send/recv of the CUDA server (docs/collectives.md):
 * the ServerCommunication methods and the settling of a stream's NCCL work.
 * The library is loaded by nccl_loader.c and its codes are translated by
 * nccl_errors.c.
 *
 * Communicators. In one process, comm_init of a device set meets its peers
 * at the set's rendezvous (comm/rendezvous.h); the last to arrive makes an
 * ncclUniqueId and creates every member in one NCCL group
 * (ncclCommInitRankConfig per device), as ncclCommInitAll would. Across
 * processes a member is created on its own worker from the token that rank
 * 0 made (comm_token) and the MPI transport broadcast. Communicators are
 * non-blocking (config.blocking = 0; RUDA_NCCL_BLOCKING=1 makes them
 * blocking), so every wait for NCCL polls ncclCommGetAsyncError against the
 * communication timeout instead of hanging.
 *
 * Operations run on the compute stream of the caller's ruda stream: later
 * work there is ordered after them with no event, and buffers from other
 * streams are ordered like a launch's (ruda__stream_order). In one
 * process the participants meet at the rendezvous and the last to arrive
 * issues every participant's call in one ncclGroupStart/End (the other
 * workers are parked at the rendezvous meanwhile, so no communicator is
 * used by two threads); a participant whose buffers failed fails the round
 * before anything reaches NCCL. RUDA_NCCL_GROUPED=0 makes each worker issue
 * its own call instead, for comparison. Across processes each rank issues
 * its own call; a rank whose buffers failed takes part with scratch memory
 * so its peers finish, and reports the error.
 *
 * Errors and hangs. sync and read settle the stream's collectives first
 * (their vtable entries call ruda__cuda_comms_settle): they wait for them polling
 * ncclCommGetAsyncError; an asynchronous error aborts the communicator
 * (ncclCommAbort) and becomes an error of the stream; so does a wait past
 * the communication timeout (a peer that never arrived). flush only polls.
 * An aborted communicator fails every later operation at once.
 *
 * Shutdown: ruda_shutdown() calls comm_shutdown on every device at once,
 * which finalizes (ncclCommFinalize, polled until done) and destroys every
 * communicator; one that does not finalize in time is aborted. The server's
 * destroy aborts whatever is left.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_nccl.h"
#include "backends/cuda/cuda_nccl_table.h"
#include "backends/cuda/cuda_stream.h"
#include "base/alloc.h"
#include "backends/cuda/nccl_errors.h"
#include "backends/cuda/nccl_loader.h"
#include "comm/comm_id.h"
#include "comm/rendezvous.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

bool ruda__nccl_dtype(ruda_elem_type_t t, ncclDataType_t *out) {
  /* Kinds that only move bytes pass RUDA_ELEM_U8; the reductions take
   * RUDA__REDUCE_TYPES_NCCL. */
  switch (t) {
    case RUDA_ELEM_F64: *out = ncclFloat64; return true;
    case RUDA_ELEM_F32: *out = ncclFloat32; return true;
    case RUDA_ELEM_F16: *out = ncclFloat16; return true;
    case RUDA_ELEM_BF16: *out = ncclBfloat16; return true;
    case RUDA_ELEM_I8: *out = ncclInt8; return true;
    case RUDA_ELEM_I32: *out = ncclInt32; return true;
    case RUDA_ELEM_I64: *out = ncclInt64; return true;
    case RUDA_ELEM_U8: *out = ncclUint8; return true;
    case RUDA_ELEM_U32: *out = ncclUint32; return true;
    case RUDA_ELEM_U64: *out = ncclUint64; return true;
    default: return false;
  }
}

/* ---- Settings ---- */

static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static bool g_blocking, g_grouped;

static bool env_flag(const char *name, bool fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  return strcmp(v, "0") != 0;
}

static void settings_read(void) {
  g_blocking = env_flag("RUDA_NCCL_BLOCKING", false);
  g_grouped = env_flag("RUDA_NCCL_GROUPED", true);
}

static ncclConfig_t comm_config(void) {
  pthread_once(&settings_once, settings_read);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = g_blocking ? 1 : 0;
  return cfg;
}

bool ruda__nccl_grouped(void) {
  pthread_once(&settings_once, settings_read);
  return g_grouped;
}

/* ---- Waiting for non-blocking communicators ---- */

static uint64_t now_ns(void) { return ruda__now_ns(); }

/* Waits of up to 20 ms poll with sched_yield (they mostly end within a
 * kernel's time, and a sleep's wake-up would cost more than it saves);
 * longer ones sleep 100 us between polls. */
static void poll_pause(uint64_t waited_ns) {
  if (waited_ns < 20000000ull) {
    sched_yield();
  } else {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
}

/* Polls ncclCommGetAsyncError on comms[0..n) until none is in progress.
 * Returns the first error (ncclSuccess when all are ready); *timed_out when
 * the deadline passed first. */
ncclResult_t ruda__nccl_wait_ready(const ruda__nccl_api_t *api, ncclComm_t const *comms, size_t n,
                               uint64_t deadline, bool *timed_out) {
  *timed_out = false;
  uint64_t t0 = now_ns();
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < n; i++) {
      if (!comms[i]) continue;
      ncclResult_t state = ncclSuccess;
      ncclResult_t r = api->ncclCommGetAsyncError(comms[i], &state);
      if (r != ncclSuccess) return r;
      if (state == ncclInProgress) pending = true;
      else if (state != ncclSuccess) return state;
    }
    if (!pending) return ncclSuccess;
    uint64_t t = now_ns();
    if (t >= deadline) {
      *timed_out = true;
      return ncclInProgress;
    }
    poll_pause(t - t0);
  }
}

/* ---- The server's communicators (worker thread only) ---- */

comm_entry_t *ruda__nccl_find_comm(struct ruda__cuda_comms *c, uint64_t id) {
  for (size_t i = 0; c && i < c->n; i++) {
    if (c->items[i].id == id) return &c->items[i];
  }
  return NULL;
}

static ruda_status_t comms_get(cuda_server_t *s, struct ruda__cuda_comms **out) {
  *out = s->comms;
  if (s->comms) return NULL;
  const ruda__nccl_api_t *api = NULL;
  ruda_status_t e = ruda__nccl_api_get(&api);
  if (e) return e;
  struct ruda__cuda_comms *c = calloc(1, sizeof *c);
  if (!c) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
  c->api = api;
  s->comms = c;
  *out = c;
  return NULL;
}

static ruda_status_t comm_add(struct ruda__cuda_comms *c, uint64_t id, ncclComm_t comm,
                              uint32_t rank, uint32_t size, bool in_process) {
  comm_entry_t *items = ruda__grow(c->items, &c->cap, c->n, sizeof *items, 4);
  if (!items) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
  c->items = items;
  c->items[c->n++] = (comm_entry_t){
      .id = id, .comm = comm, .rank = rank, .size = size, .in_process = in_process};
  return NULL;
}

/* Aborts the communicator (local: waits for no peer) and keeps why. */
void ruda__nccl_comm_abort(const ruda__nccl_api_t *api, comm_entry_t *e, const char *why) {
  if (e->aborted) return;
  if (e->comm) api->ncclCommAbort(e->comm);
  e->comm = NULL;
  e->aborted = true;
  snprintf(e->why, sizeof e->why, "%s", why);
}

void ruda__nccl_note_pending(struct ruda__cuda_comms *c, ruda_stream_id_t id) {
  for (size_t i = 0; i < c->npending; i++) {
    if (c->pending[i].id.value == id.value) return;
  }
  pending_stream_t *pending =
      ruda__grow(c->pending, &c->cappending, c->npending, sizeof *pending, 4);
  if (!pending) return; /* that stream's sync then waits without polling NCCL */
  c->pending = pending;
  c->pending[c->npending++].id = id;
}

/* ---- comm_init ---- */

/* One participant's part of an in-process comm_init. */
typedef struct init_part {
  const ruda__cuda_api_t *cu;
  const ruda__nccl_api_t *api;
  CUcontext ctx;
  const char *failed; /* this participant cannot take part: why */
  unsigned index;     /* cuda:index, for errors */
  ncclComm_t comm;    /* out */
} init_part_t;

/* The last participant to arrive creates every member in one group. */
static void init_all(ruda__round_t *round, void *ctx) {
  (void)ctx;
  for (uint32_t i = 0; i < round->size; i++) {
    init_part_t *p = round->parts[i];
    if (p->failed) {
      snprintf(round->error, sizeof round->error,
               "creating the NCCL communicator: cuda:%u failed: %s", p->index, p->failed);
      return;
    }
  }
  init_part_t *p0 = round->parts[0];
  const ruda__nccl_api_t *api = p0->api;
  ncclUniqueId uid;
  ncclResult_t r = api->ncclGetUniqueId(&uid);
  const char *call = "ncclGetUniqueId";
  ncclComm_t comms[RUDA__COMM_MAX_DEVICES] = {0};
  bool timed_out = false;
  if (r == ncclSuccess) {
    ncclConfig_t cfg = comm_config();
    call = "ncclCommInitRankConfig";
    api->ncclGroupStart();
    for (uint32_t i = 0; i < round->size && r == ncclSuccess; i++) {
      init_part_t *p = round->parts[i];
      p->cu->cuCtxSetCurrent(p->ctx);
      r = api->ncclCommInitRankConfig(&comms[i], (int)round->size, uid, (int)i, &cfg);
    }
    ncclResult_t g = api->ncclGroupEnd();
    if (r == ncclSuccess && g != ncclSuccess && g != ncclInProgress) {
      r = g;
      call = "ncclGroupEnd";
    }
    if (r == ncclSuccess) {
      r = ruda__nccl_wait_ready(api, comms, round->size, now_ns() + ruda__comm_timeout_ns(), &timed_out);
      call = "ncclCommInitRankConfig (waiting for every rank)";
    }
  }
  if (r != ncclSuccess || timed_out) {
    for (uint32_t i = 0; i < round->size; i++) {
      if (comms[i]) api->ncclCommAbort(comms[i]);
    }
    ruda_status_t e = timed_out ? NULL : ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, call, NULL);
    snprintf(round->error, sizeof round->error, "creating the NCCL communicator of %u devices: %s",
             round->size,
             timed_out ? "timed out (RUDA_COMM_TIMEOUT)"
                       : (ruda_status_reason(e) ? ruda_status_reason(e) : call));
    ruda_status_free(e);
    return;
  }
  for (uint32_t i = 0; i < round->size; i++) ((init_part_t *)round->parts[i])->comm = comms[i];
}

ruda_status_t ruda__cuda_comm_init(cuda_server_t *s, const ruda__comm_peers_t *peers,
                                   const void *token, size_t token_len) {
  s->api->cuCtxSetCurrent(s->ctx);
  struct ruda__cuda_comms *c = NULL;
  ruda_status_t e = comms_get(s, &c);
  if (e && peers->ids) {
    /* The peers are waiting at the rendezvous: fail the round there. */
    ruda__rendezvous_t *rv;
    init_part_t part = {.failed = ruda_status_reason(e) ? ruda_status_reason(e) : "no NCCL",
                        .index = s->base.device.index_id};
    ruda_status_t e2 = ruda__rendezvous_get(peers->id, peers->size, peers->ids, &rv);
    if (!e2) ruda_status_free(ruda__rendezvous_join(rv, peers->rank, &part, init_all, NULL,
                                                    NULL, "creating the NCCL communicator"));
    ruda_status_free(e2);
  }
  if (e) return e;
  comm_entry_t *known = ruda__nccl_find_comm(c, peers->id);
  if (known) {
    if (!known->aborted) return NULL;
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "the NCCL communicator was aborted: %s",
                              known->why);
  }
  if (peers->ids) {
    ruda__rendezvous_t *rv;
    e = ruda__rendezvous_get(peers->id, peers->size, peers->ids, &rv);
    if (e) return e;
    init_part_t part = {s->api, c->api, s->ctx, NULL, s->base.device.index_id, NULL};
    e = ruda__rendezvous_join(rv, peers->rank, &part, init_all, NULL, NULL,
                              "creating the NCCL communicator");
    s->api->cuCtxSetCurrent(s->ctx);
    if (e) return e;
    e = comm_add(c, peers->id, part.comm, peers->rank, peers->size, true);
    if (e) c->api->ncclCommAbort(part.comm);
    else c->items[c->n - 1].rv = rv;
    return e;
  }
  /* Across processes, from rank 0's token. */
  if (!token || token_len != sizeof(ncclUniqueId)) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                              "an NCCL communicator across processes needs a %zu-byte token, "
                              "got %zu bytes",
                              sizeof(ncclUniqueId), token_len);
  }
  ncclUniqueId uid;
  memcpy(&uid, token, sizeof uid);
  ncclConfig_t cfg = comm_config();
  ncclComm_t comm = NULL;
  ncclResult_t r = c->api->ncclCommInitRankConfig(&comm, (int)peers->size, uid,
                                                  (int)peers->rank, &cfg);
  bool timed_out = false;
  if (r == ncclSuccess || r == ncclInProgress) {
    r = ruda__nccl_wait_ready(c->api, &comm, 1, now_ns() + ruda__comm_timeout_ns(), &timed_out);
  }
  s->api->cuCtxSetCurrent(s->ctx);
  if (r != ncclSuccess) {
    if (comm) c->api->ncclCommAbort(comm);
    if (timed_out) {
      return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                "creating the NCCL communicator on cuda:%u (rank %u of %u) "
                                "timed out after %.1f s (RUDA_COMM_TIMEOUT): a peer never "
                                "joined",
                                s->base.device.index_id, peers->rank, peers->size,
                                (double)ruda__comm_timeout_ns() * 1e-9);
    }
    return ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "ncclCommInitRankConfig",
                            "cuda:%u as rank %u of %u", s->base.device.index_id, peers->rank,
                            peers->size);
  }
  e = comm_add(c, peers->id, comm, peers->rank, peers->size, false);
  if (e) c->api->ncclCommAbort(comm);
  return e;
}

ruda_status_t ruda__cuda_comm_token(void *out, size_t cap, size_t *out_len) {
  const ruda__nccl_api_t *api = NULL;
  ruda_status_t e = ruda__nccl_api_get(&api);
  if (e) return e;
  if (cap < sizeof(ncclUniqueId)) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "an NCCL token needs %zu bytes",
                              sizeof(ncclUniqueId));
  }
  ncclUniqueId uid;
  ncclResult_t r = api->ncclGetUniqueId(&uid);
  if (r != ncclSuccess) return ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "ncclGetUniqueId", NULL);
  memcpy(out, &uid, sizeof uid);
  *out_len = sizeof uid;
  return NULL;
}

/* ---- Settling: asynchronous errors and timeouts ---- */

/* Polls every used communicator once: an asynchronous error aborts it and
 * is pushed on `st`. */
static void poll_async_errors(cuda_server_t *s, cuda_stream_t *st) {
  struct ruda__cuda_comms *c = s->comms;
  for (size_t i = 0; i < c->n; i++) {
    comm_entry_t *e = &c->items[i];
    if (e->aborted || !e->used) continue;
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = c->api->ncclCommGetAsyncError(e->comm, &state);
    if (r == ncclSuccess && (state == ncclSuccess || state == ncclInProgress)) continue;
    ruda_status_t err = ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r != ncclSuccess ? r : state,
                                         "ncclCommGetAsyncError",
                                         "on cuda:%u, rank %u of %u; the communicator was "
                                         "aborted",
                                         s->base.device.index_id, e->rank, e->size);
    ruda__nccl_comm_abort(c->api, e, ruda_status_reason(err) ? ruda_status_reason(err) : "async error");
    ruda__stream_push_error(cuda_rs(st), err);
  }
}

void ruda__cuda_comms_settle_pending(cuda_server_t *s, ruda_stream_id_t stream, bool wait) {
  struct ruda__cuda_comms *c = s->comms;
  if (!c || c->npending == 0) return;
  size_t idx = c->npending;
  for (size_t i = 0; i < c->npending; i++) {
    if (c->pending[i].id.value == stream.value) idx = i;
  }
  if (idx == c->npending) return;
  cuda_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (!st) { /* reclaimed: idle, its work finished */
    c->pending[idx] = c->pending[--c->npending];
    return;
  }
  poll_async_errors(s, st);
  if (!wait) return;
  CUevent ev = NULL;
  if (ruda__cuda_event_get(s, &ev) != CUDA_SUCCESS || s->api->cuEventRecord(ev, st->cu) != CUDA_SUCCESS) {
    ruda__cuda_event_put(s, ev, ruda__cuda_generation(&s->fault));
    return; /* the sync itself reports what is wrong with the stream */
  }
  uint64_t t0 = now_ns(), deadline = t0 + ruda__comm_timeout_ns();
  for (;;) {
    CUresult r = s->api->cuEventQuery(ev);
    if (r != CUDA_ERROR_NOT_READY) break; /* done, or a fault the sync reports */
    poll_async_errors(s, st);
    uint64_t t = now_ns();
    if (t >= deadline) {
      /* A peer never arrived: abort what this stream waits on, which ends
       * the NCCL kernels, and say so. */
      char why[256];
      snprintf(why, sizeof why,
               "timed out after %.1f s waiting for an NCCL operation's peers "
               "(RUDA_COMM_TIMEOUT); the communicator was aborted",
               (double)ruda__comm_timeout_ns() * 1e-9);
      for (size_t i = 0; i < c->n; i++) {
        if (c->items[i].used && !c->items[i].aborted) ruda__nccl_comm_abort(c->api, &c->items[i], why);
      }
      ruda__stream_push_error(cuda_rs(st), ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                                              "cuda:%u: %s",
                                                              s->base.device.index_id, why));
      break;
    }
    poll_pause(t - t0);
  }
  ruda__cuda_event_put(s, ev, ruda__cuda_generation(&s->fault));
  c->pending[idx] = c->pending[--c->npending];
  if (c->npending == 0) {
    for (size_t i = 0; i < c->n; i++) c->items[i].used = false;
  }
}

/* ---- Teardown ---- */

/* Finalizes then destroys the entries [0, n) selected by `pick` (polled
 * together against one deadline; one that does not finish is aborted). */
static void finalize_entries(cuda_server_t *s, bool (*pick)(const comm_entry_t *e, uint64_t id),
                             uint64_t id) {
  struct ruda__cuda_comms *c = s->comms;
  const ruda__nccl_api_t *api = c->api;
  ncclComm_t comms[64];
  size_t idx[64], k = 0;
  for (size_t i = 0; i < c->n && k < 64; i++) {
    comm_entry_t *e = &c->items[i];
    if (e->aborted || !e->comm || !pick(e, id)) continue;
    ncclResult_t r = api->ncclCommFinalize(e->comm);
    if (r != ncclSuccess && r != ncclInProgress) {
      ruda__nccl_comm_abort(api, e, "ncclCommFinalize failed");
      continue;
    }
    comms[k] = e->comm;
    idx[k++] = i;
  }
  bool timed_out = false;
  ncclResult_t r = k ? ruda__nccl_wait_ready(api, comms, k, now_ns() + ruda__comm_timeout_ns(), &timed_out)
                     : ncclSuccess;
  for (size_t j = 0; j < k; j++) {
    comm_entry_t *e = &c->items[idx[j]];
    if (r != ncclSuccess || timed_out) {
      ruda__nccl_comm_abort(api, e, timed_out ? "ncclCommFinalize timed out" : "ncclCommFinalize failed");
    } else {
      api->ncclCommDestroy(e->comm);
      e->comm = NULL;
      e->aborted = true;
      e->destroyed = true;
      snprintf(e->why, sizeof e->why, "it was destroyed");
    }
  }
  s->api->cuCtxSetCurrent(s->ctx);
}

static bool pick_id(const comm_entry_t *e, uint64_t id) { return e->id == id; }
static bool pick_all(const comm_entry_t *e, uint64_t id) {
  (void)id;
  (void)e;
  return true;
}

static void remove_entry(struct ruda__cuda_comms *c, uint64_t id) {
  for (size_t i = 0; i < c->n; i++) {
    if (c->items[i].id == id) {
      c->items[i] = c->items[--c->n];
      return;
    }
  }
}

ruda_status_t ruda__cuda_comm_destroy(cuda_server_t *s, uint64_t id) {
  struct ruda__cuda_comms *c = s->comms;
  comm_entry_t *e = ruda__nccl_find_comm(c, id);
  if (!e) return NULL;
  finalize_entries(s, pick_id, id);
  e = ruda__nccl_find_comm(c, id);
  bool clean = e && e->destroyed;
  char why[384];
  snprintf(why, sizeof why, "%s", e ? e->why : "");
  remove_entry(c, id);
  if (clean) return NULL;
  return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                            "the NCCL communicator of cuda:%u was not finalized cleanly: %s",
                            s->base.device.index_id, why);
}

void ruda__cuda_comm_shutdown(cuda_server_t *s) {
  if (!s->comms) return;
  finalize_entries(s, pick_all, 0);
  s->comms->n = 0;
}

void ruda__cuda_comms_destroy(cuda_server_t *s, bool alive) {
  (void)alive;
  struct ruda__cuda_comms *c = s->comms;
  if (!c) return;
  /* Whatever comm_shutdown did not finalize is aborted: abort waits for no
   * peer. */
  for (size_t i = 0; i < c->n; i++) ruda__nccl_comm_abort(c->api, &c->items[i], "the server was destroyed");
  ruda__free(c->items);
  ruda__free(c->pending);
  free(c);
  s->comms = NULL;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
