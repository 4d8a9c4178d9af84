/* Graphs: recording a stream's launches and writes, building the
 * backend's graph, replays and the graphs' lifetime (ruda/client.h,
 * server/graph.h). The file map of the client is in client_internal.h.
 *
 * A recording is the graph itself, listed on its device while open; the
 * launch and write paths look for it only while the device's
 * num_recordings is non-zero (one relaxed load otherwise). */
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "server/graph.h"

struct ruda_graph {
  atomic_uint refs;
  ruda__device_t *dev;
  ruda_stream_id_t stream; /* the recording stream */
  bool open;               /* still recording (listed on the device) */
  struct ruda_graph *next; /* the device's list of recordings */
  ruda__graph_t rec;
  void *native; /* the backend's graph, NULL when the list is replayed */
};

/* ---- Lifetime ---- */

typedef struct graph_free_op {
  ruda__op_t base;
  ruda_graph_t *g;
} graph_free_op_t;

static void graph_free_now(ruda_graph_t *g) {
  ruda__graph_free(&g->rec);
  ruda__free(g);
}

static void run_graph_free(ruda__device_t *d, ruda__op_t *op) {
  graph_free_op_t *f = (graph_free_op_t *)op;
  /* After ruda_shutdown the server freed its graphs when it was destroyed. */
  if (d->server) ruda__server_graph_destroy(d->server, f->g->native);
  graph_free_now(f->g);
  ruda__free(f);
}

ruda_graph_t *ruda_graph_retain(ruda_graph_t *g) {
  if (g) atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
  return g;
}

void ruda_graph_release(ruda_graph_t *g) {
  if (!g || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1) return;
  if (!g->native) {
    graph_free_now(g);
    return;
  }
  /* The backend's graph belongs to the worker's context. */
  graph_free_op_t *f = ruda__calloc(1, sizeof *f);
  if (!f) {
    /* No memory for the hand-off: the backend frees it at destroy. */
    graph_free_now(g);
    return;
  }
  f->base.run = run_graph_free;
  f->base.stream = g->stream;
  f->g = g;
  ruda__device_submit(g->dev, &f->base);
}

static void graph_hold(void *g) { ruda_graph_retain(g); }
static void graph_unhold(void *g) { ruda_graph_release(g); }

size_t ruda_graph_num_launches(const ruda_graph_t *g) { return g ? g->rec.num_launches : 0; }
size_t ruda_graph_num_writes(const ruda_graph_t *g) { return g ? g->rec.num_writes : 0; }

/* ---- Recording ---- */

/* The open recording of `stream` on `d`, or NULL. Under recording_lock. */
static ruda_graph_t *recording_of(ruda__device_t *d, ruda_stream_id_t stream) {
  for (ruda_graph_t *g = d->recordings; g; g = g->next) {
    if (g->stream.value == stream.value) return g;
  }
  return NULL;
}

bool ruda__client_recording(ruda_client_t *c) {
  if (!atomic_load_explicit(&c->dev->num_recordings, memory_order_acquire)) return false;
  pthread_mutex_lock(&c->dev->recording_lock);
  bool on = recording_of(c->dev, ruda__client_stream(c)) != NULL;
  pthread_mutex_unlock(&c->dev->recording_lock);
  return on;
}

ruda_status_t ruda__client_record_launch_any(ruda_client_t *c, ruda_kernel_t *kernel,
                                             const ruda__count_t *count,
                                             const ruda__launch_args_t *args,
                                             ruda_execution_mode_t mode, bool *recorded) {
  *recorded = false;
  ruda_status_t s = NULL;
  pthread_mutex_lock(&c->dev->recording_lock);
  ruda_graph_t *g = recording_of(c->dev, ruda__client_stream(c));
  if (g) {
    *recorded = true;
    s = ruda__graph_add_launch(&g->rec, kernel, count, args, mode);
  }
  pthread_mutex_unlock(&c->dev->recording_lock);
  return s;
}

ruda_status_t ruda__client_record_write(ruda_client_t *c, const ruda__copy_desc_t *desc,
                                        const void *data, uint64_t size, bool *recorded) {
  *recorded = false;
  if (!atomic_load_explicit(&c->dev->num_recordings, memory_order_acquire)) return NULL;
  ruda_status_t s = NULL;
  pthread_mutex_lock(&c->dev->recording_lock);
  ruda_graph_t *g = recording_of(c->dev, ruda__client_stream(c));
  if (g) {
    *recorded = true;
    s = ruda__graph_add_write(&g->rec, desc, data, size);
  }
  pthread_mutex_unlock(&c->dev->recording_lock);
  return s;
}

ruda_status_t ruda_client_graph_begin(ruda_client_t *c) {
  if (!c) return ruda__client_invalid("ruda_client_graph_begin: NULL client");
  ruda_status_t s = ruda__device_begin(c->dev, "ruda_client_graph_begin");
  if (s) return s;
  ruda_stream_id_t stream = ruda__client_stream(c);
  ruda_graph_t *g = ruda__calloc(1, sizeof *g);
  if (!g) {
    ruda__device_end(c->dev);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *g);
  }
  atomic_init(&g->refs, 1);
  g->dev = c->dev;
  g->stream = stream;
  g->open = true;
  g->rec.hold = graph_hold;
  g->rec.unhold = graph_unhold;
  g->rec.owner = g;
  pthread_mutex_lock(&c->dev->recording_lock);
  bool busy = recording_of(c->dev, stream) != NULL;
  if (!busy) {
    g->next = c->dev->recordings;
    c->dev->recordings = g;
    atomic_fetch_add_explicit(&c->dev->num_recordings, 1, memory_order_release);
  }
  pthread_mutex_unlock(&c->dev->recording_lock);
  ruda__device_end(c->dev);
  if (busy) {
    ruda__free(g);
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_client_graph_begin: stream %llu already records a graph",
                              (unsigned long long)stream.value);
  }
  return NULL;
}

/* Takes the stream's recording off the device's list; NULL when none. */
static ruda_graph_t *recording_take(ruda__device_t *d, ruda_stream_id_t stream) {
  pthread_mutex_lock(&d->recording_lock);
  ruda_graph_t **p = &d->recordings;
  while (*p && (*p)->stream.value != stream.value) p = &(*p)->next;
  ruda_graph_t *g = *p;
  if (g) {
    *p = g->next;
    g->next = NULL;
    g->open = false;
    atomic_fetch_sub_explicit(&d->num_recordings, 1, memory_order_release);
  }
  pthread_mutex_unlock(&d->recording_lock);
  return g;
}

static ruda_status_t do_graph_build(ruda__server_t *s, ruda_stream_id_t st, void *graph) {
  ruda_graph_t *g = graph;
  return ruda__server_graph_build(s, &g->rec, st, &g->native);
}

ruda_status_t ruda_client_graph_end(ruda_client_t *c, ruda_graph_t **out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_graph_end: NULL argument");
  *out = NULL;
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_graph_end");
  if (s) return s;
  ruda_stream_id_t stream = ruda__client_stream(c);
  ruda_graph_t *g = recording_take(c->dev, stream);
  if (!g) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_client_graph_end: stream %llu does not record a graph "
                              "(ruda_client_graph_begin)",
                              (unsigned long long)stream.value);
  }
  s = ruda__client_call(c, "ruda_client_graph_end", RUDA__CALL_QUEUED, do_graph_build, g);
  if (s) {
    ruda_graph_release(g);
    return s;
  }
  *out = g;
  return NULL;
}

/* ---- Replays ---- */

typedef struct replay_op {
  ruda__op_t base;
  ruda_graph_t *g; /* a reference */
} replay_op_t;

static void run_replay(ruda__device_t *d, ruda__op_t *op) {
  replay_op_t *r = (replay_op_t *)op;
  if (d->server && !op->cancelled) {
    ruda__server_graph_replay(d->server, &r->g->rec, r->g->native, op->stream);
  }
  ruda_graph_release(r->g);
  ruda__device_op_free(d, r, sizeof *r);
}

ruda_status_t ruda_client_graph_replay(ruda_client_t *c, ruda_graph_t *g) {
  if (!c || !g) return ruda__client_invalid("ruda_client_graph_replay: NULL argument");
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_graph_replay");
  if (s) return s;
  if (g->dev != c->dev) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_client_graph_replay: the graph was recorded on %s:%u, the "
                              "client is on %s:%u",
                              g->dev->backend->name, g->dev->id.index_id, c->dev->backend->name,
                              c->dev->id.index_id);
  }
  if (g->open) return ruda__client_invalid("ruda_client_graph_replay: the graph is still recording");
  if (ruda__client_recording(c)) {
    return ruda__client_invalid("ruda_client_graph_replay: the client's stream records a graph (a replay "
                   "cannot be recorded)");
  }
  replay_op_t *r = ruda__device_op_alloc(c->dev, sizeof *r);
  if (!r) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *r);
  memset(r, 0, sizeof *r);
  r->base.run = run_replay;
  r->base.cancellable = true;
  r->base.stream = ruda__client_stream(c);
  r->g = ruda_graph_retain(g);
  ruda__device_submit(c->dev, &r->base);
  return NULL;
}
