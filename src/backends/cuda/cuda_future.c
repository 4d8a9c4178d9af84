/* Futures of the CUDA server: event-fenced completion of reads and syncs,
 * waited on any thread (the wait polls the event for RUDA_CUDA_WAIT_SPIN_US
 * first, then blocks), the staged parts copied out once the event has
 * completed, the pools the future objects, events and blocks go back to,
 * and the settling of live futures when the server is destroyed first. See
 * cuda_server.c for the design. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_future.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

RUDA__HOT
static ruda_status_t future_finish(cuda_future_t *f, CUresult r, const char *call) {
  cuda_server_t *s = f->server;
  ruda_status_t st = f->early;
  f->early = NULL;
  if (r != CUDA_SUCCESS && st == NULL) {
    char kernels[300];
    ruda__recent_kernels_format(&f->recent, kernels, sizeof kernels);
    if (ruda__cu_result_is_sticky(r) && f->generation == ruda__cuda_generation(&s->fault)) {
      char text[400];
      snprintf(text, sizeof text, "kernels: %s", kernels);
      ruda__cuda_poison(&s->fault, r, text, true);
    }
    st = ruda__cuda_fault_error(r, call, kernels);
  }
  for (size_t i = 0; i < f->nparts; i++) {
    read_part_t *p = &f->parts[i];
    if (st == NULL && p->staged != NULL && p->size > 0) {
      ruda__copy_parallel(p->size >= PARALLEL_READ_OUT ? s->copies : NULL, p->dst, p->staged,
                          (size_t)p->size, STAGE_CHUNK);
    }
    if (p->stage) ruda__memory_release_handle(p->stage);
    p->stage = NULL;
  }
  f->nparts = 0;
  return st;
}

RUDA__HOT
void ruda__cuda_future_covers(cuda_stream_t *st, cuda_future_t *f, uint64_t cursor) {
  if (st->synced == NULL || f->synced != NULL) return;
  atomic_fetch_add_explicit(&st->synced->refs, 1, memory_order_relaxed);
  f->synced = st->synced;
  f->cursor = cursor;
}

/* The future completed (`r`): a success notes how far its stream is done;
 * the reference goes either way. */
static void covers_done(cuda_future_t *f, CUresult r) {
  if (f->synced == NULL) return;
  if (r == CUDA_SUCCESS && f->early == NULL) ruda__cuda_synced_note(f->synced, f->cursor);
  ruda__cuda_synced_release(f->synced);
  f->synced = NULL;
}

/* Waits for `ev`: polls it for up to `spin_ns` first (a short kernel is done
 * before a blocking wait would even start), then blocks. */
static CUresult event_wait(const ruda__cuda_api_t *api, CUevent ev, uint64_t spin_ns) {
  if (spin_ns > 0) {
    /* The clock is read only once the first query found the work running. */
    CUresult r = api->cuEventQuery(ev);
    if (r != CUDA_ERROR_NOT_READY) return r;
    uint64_t start = ruda__now_ns();
    do {
      r = api->cuEventQuery(ev);
      if (r != CUDA_ERROR_NOT_READY) return r;
    } while (ruda__now_ns() - start < spin_ns);
  }
  return api->cuEventSynchronize(ev);
}

/* The waiting thread may never have used the context. */
static void make_current(const ruda__cuda_api_t *api, CUcontext ctx) {
  CUcontext cur = NULL;
  if (api->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != ctx) api->cuCtxSetCurrent(ctx);
}

RUDA__HOT
static ruda_status_t cuda_future_wait(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  pthread_mutex_lock(&f->lock);
  ruda_status_t st;
  if (atomic_load_explicit(&f->done, memory_order_relaxed)) {
    st = f->early;
    f->early = NULL;
  } else {
    /* Not done: not settled, so the server is alive until we unlock. */
    const ruda__cuda_api_t *api = f->server->api;
    CUresult r = CUDA_SUCCESS;
    if (f->event != NULL) {
      make_current(api, f->server->ctx);
      r = event_wait(api, f->event, f->server->wait_spin_ns);
    }
    covers_done(f, r);
    st = future_finish(f, r, "cuEventSynchronize");
    atomic_store_explicit(&f->done, true, memory_order_release);
  }
  pthread_mutex_unlock(&f->lock);
  return st;
}

static bool cuda_future_poll(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  pthread_mutex_lock(&f->lock);
  bool ready = atomic_load_explicit(&f->done, memory_order_relaxed) || f->event == NULL;
  if (!ready) {
    make_current(f->server->api, f->server->ctx);
    ready = f->server->api->cuEventQuery(f->event) != CUDA_ERROR_NOT_READY;
  }
  pthread_mutex_unlock(&f->lock);
  return ready;
}

static void future_unlink(future_home_t *h, cuda_future_t *f) {
  if (f->prev != NULL) f->prev->next = f->next;
  else h->live = f->next;
  if (f->next != NULL) f->next->prev = f->prev;
  f->prev = f->next = NULL;
}

void ruda__cuda_future_free(cuda_future_t *f) {
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

/* Drops one reference to `h` (its lock held; released here). */
void ruda__cuda_home_release_locked(future_home_t *h) {
  bool last = --h->refs == 0;
  pthread_mutex_unlock(&h->lock);
  if (last) {
    pthread_mutex_destroy(&h->lock);
    ruda__free(h);
  }
}

/* Gives the future's event, block and the future itself back to the
 * server's pools (one lock); what does not fit, or belongs to a context
 * that was reset, is freed. A future the server settled holds none of them
 * and only leaves its home. */
RUDA__HOT
static void cuda_future_destroy(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  if (atomic_load_explicit(&f->done, memory_order_acquire)) {
    /* Waited for, or settled by the server (which kept its result). */
    ruda_status_free(f->early);
    f->early = NULL;
  } else {
    /* Never waited: wait so the staging is not released under a copy. */
    ruda_status_free(cuda_future_wait(base));
  }
  if (f->parts != &f->one) ruda__free(f->parts);
  f->parts = NULL;
  future_home_t *h = f->home;
  pthread_mutex_lock(&h->lock);
  cuda_server_t *s = f->server; /* written under this lock */
  CUevent ev = f->event;
  void *block = f->block;
  bool current = false;
  if (s != NULL) {
    future_unlink(h, f);
    current = f->generation == ruda__cuda_generation(&s->fault);
    if (ev != NULL && current && s->nevents < EVENT_POOL) {
      s->events[s->nevents++] = ev;
      ev = NULL;
    }
    if (block != NULL && current && s->nblocks < READ_BLOCKS) {
      s->blocks[s->nblocks++] = block;
      block = NULL;
    }
    if (s->nfutures < FUTURE_POOL) {
      s->futures[s->nfutures++] = f;
      f = NULL;
    }
    /* Leftovers are freed under the lock: once it is released the server
     * may be destroyed (this future is no longer on its list), and with it
     * the context they belong to. */
    if (ev != NULL) s->api->cuEventDestroy(ev);
    /* A block from before a context reset went with that context. */
    if (block != NULL && current) s->api->cuMemFreeHost(block);
  }
  if (f != NULL) ruda__cuda_future_free(f);
  ruda__cuda_home_release_locked(h);
}

static const ruda__future_vtable_t cuda_future_vt = {cuda_future_wait, cuda_future_poll,
                                                     cuda_future_destroy};

/* Puts `f` on the live list (home->lock held). Only the worker, or a
 * caller holding the device's running lock, links and settles, so the
 * fields set after linking are complete before anyone else reads them;
 * other threads only unlink their neighbours, through prev and next. */
static void future_link_locked(future_home_t *h, cuda_future_t *f) {
  f->home = h;
  f->prev = NULL;
  f->next = h->live;
  if (h->live != NULL) h->live->prev = f;
  h->live = f;
  h->refs++;
}

RUDA__HOT
cuda_future_t *ruda__cuda_future_new(cuda_server_t *s, cuda_stream_t *st, size_t nparts) {
  future_home_t *h = s->home;
  /* Allocated first, so that nothing linked has to be undone when it fails. */
  read_part_t *parts = NULL;
  if (nparts > 1 && (parts = ruda__calloc(nparts, sizeof *parts)) == NULL) return NULL;
  cuda_future_t *f = NULL;
  CUevent ev = NULL;
  /* A pooled future is taken and linked under one lock. */
  pthread_mutex_lock(&h->lock);
  if (s->nfutures > 0) {
    f = s->futures[--s->nfutures];
    future_link_locked(h, f);
  }
  if (s->nevents > 0) ev = s->events[--s->nevents];
  pthread_mutex_unlock(&h->lock);
  if (f == NULL) {
    f = ruda__malloc(sizeof *f);
    if (f == NULL) {
      if (ev != NULL) ruda__cuda_event_put(s, ev, ruda__cuda_generation(&s->fault));
      ruda__free(parts);
      return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_lock(&h->lock);
    future_link_locked(h, f);
    pthread_mutex_unlock(&h->lock);
  }
  memset(f, 0, offsetof(cuda_future_t, recent));
  f->base.vt = &cuda_future_vt;
  f->server = s;
  f->event = ev;
  f->parts = parts != NULL ? parts : &f->one;
  f->recent.n = st != NULL ? st->recent.n : 0;
  f->recent.total = st != NULL ? st->recent.total : 0;
  for (uint32_t i = 0; i < f->recent.n && i < RUDA__RECENT_KERNELS; i++)
    memcpy(f->recent.names[i], st->recent.names[i], sizeof f->recent.names[i]);
  f->generation = ruda__cuda_generation(&s->fault);
  atomic_store_explicit(&f->done, false, memory_order_relaxed);
  return f;
}

RUDA__HOT
ruda_status_t ruda__cuda_future_record(cuda_server_t *s, cuda_stream_t *st, cuda_future_t *f) {
  CUresult r = f->event != NULL ? CUDA_SUCCESS
                                : s->api->cuEventCreate(&f->event, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(f->event, st->cu);
  if (r != CUDA_SUCCESS) {
    if (f->event) s->api->cuEventDestroy(f->event);
    f->event = NULL;
    CUresult r2 = s->api->cuStreamSynchronize(st->cu);
    if (r2 != CUDA_SUCCESS) {
      char kernels[300];
      ruda__recent_kernels_format(&f->recent, kernels, sizeof kernels);
      return ruda__cuda_stream_fault(&s->fault, r2, "cuStreamSynchronize", kernels);
    }
  }
  return NULL;
}

/* The server is being destroyed: completes every live future now, while
 * its context, staging and copy pool still exist. With `alive` the streams
 * have been synchronised, so each future gets its data (a read's staged
 * parts are copied out; the caller promised `dst` stays valid until the
 * future completes); otherwise RUDA_ERR_UNAVAILABLE. Their events and
 * blocks are freed, and they forget the server. A future being waited on
 * another thread finishes that wait first (its lock). Worker only. */
void ruda__cuda_futures_settle(cuda_server_t *s, bool alive) {
  future_home_t *h = s->home;
  pthread_mutex_lock(&h->lock);
  uint64_t gen = ruda__cuda_generation(&s->fault);
  for (cuda_future_t *f = h->live, *next; f != NULL; f = next) {
    next = f->next;
    pthread_mutex_lock(&f->lock);
    /* A future from before a context reset holds objects of that context,
     * which went with it. */
    bool current = f->generation == gen;
    if (!atomic_load_explicit(&f->done, memory_order_relaxed)) {
      CUresult r = CUDA_SUCCESS;
      if (!current) {
        r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
      } else if (!alive && f->early == NULL) {
        f->early = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                      "cuda:%u was shut down after a device fault before this "
                                      "operation completed",
                                      s->base.device.index_id);
      } else if (alive && f->event != NULL) {
        r = s->api->cuEventSynchronize(f->event);
      }
      covers_done(f, r);
      f->early = future_finish(f, r, "cuEventSynchronize");
      atomic_store_explicit(&f->done, true, memory_order_release);
    }
    if (f->event != NULL && current) s->api->cuEventDestroy(f->event);
    if (f->block != NULL && current) s->api->cuMemFreeHost(f->block);
    f->event = NULL;
    f->block = NULL;
    f->server = NULL;
    f->prev = f->next = NULL;
    pthread_mutex_unlock(&f->lock);
  }
  h->live = NULL;
  pthread_mutex_unlock(&h->lock);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
