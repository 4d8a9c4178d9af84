/* Futures of the OpenCL server (opencl_future.h): the future object, its
 * wait, poll and destroy, and making one for a read or a sync. See
 * opencl_server.c for the design. */
#include <pthread.h>
#include <string.h>

#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_future.h"
#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* A read or a sync: completes when `event` (the newest command) has, on
 * whichever thread waits; or, where the newest command has no event, when
 * the stream's queue is finished (clFinish of `mark`'s queue on the
 * waiting thread, which then publishes `seq` in `mark`; a poll enqueues a
 * marker to ask). Reads land in their destinations directly and the
 * future keeps its own references (the event, the mark, which holds the
 * queue), so it holds nothing of the server's and may outlive it. */
typedef struct ocl_future {
  ruda__future_t base;
  const ruda__opencl_api_t *api;
  cl_event event;      /* NULL once waited */
  bool finish_pending; /* finish-fenced and not waited yet */
  ocl_finish_mark_t *mark;
  uint64_t seq;
  ruda_status_t early; /* error found while enqueueing; the result once done */
  ruda__recent_kernels_t recent;
  ruda__device_loss_t *loss; /* the device's: outlives the server */
  bool done;
  pthread_mutex_t lock;
} ocl_future_t;

/* Keeps the first error of a future: `e` (taken) unless one is there. */
static void keep_first(ruda_status_t *into, ruda_status_t e) {
  if (*into == NULL)
    *into = e;
  else
    ruda_status_free(e);
}

/* Finishes a finish-fenced future's queue: NULL, or the fault error. */
static ruda_status_t finish_queue(ocl_future_t *f) {
  cl_int r = f->api->clFinish(f->mark->queue);
  f->finish_pending = false;
  if (r == CL_SUCCESS) {
    uint64_t seen = atomic_load_explicit(&f->mark->finished, memory_order_relaxed);
    while (seen < f->seq && !atomic_compare_exchange_weak_explicit(&f->mark->finished, &seen,
                                                                   f->seq, memory_order_release,
                                                                   memory_order_relaxed)) {
    }
    return NULL;
  }
  char kernels[300];
  ruda__recent_kernels_format(&f->recent, kernels, sizeof kernels);
  ruda__ocl_fault_note(f->loss, r, kernels);
  return ruda__ocl_fault_error(r, "clFinish", kernels);
}

RUDA__HOT
static ruda_status_t ocl_future_wait(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  pthread_mutex_lock(&f->lock);
  if (!f->done) {
    if (f->finish_pending) keep_first(&f->early, finish_queue(f));
    if (f->event != NULL) {
      keep_first(&f->early, ruda__ocl_event_error(f->api, f->event, &f->recent, f->loss));
      f->api->clReleaseEvent(f->event);
      f->event = NULL;
    }
    f->done = true;
  }
  ruda_status_t st = f->early;
  f->early = NULL;
  pthread_mutex_unlock(&f->lock);
  return st;
}

static bool ocl_future_poll(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  pthread_mutex_lock(&f->lock);
  bool ready = f->done || (f->event == NULL && !f->finish_pending);
  if (!ready && f->event == NULL) {
    /* Finish-fenced: a marker on the queue tells when it is done (the
     * queue is in order; OpenCL calls may come from any thread). */
    cl_event ev = NULL;
    if (f->api->clEnqueueMarkerWithWaitList(f->mark->queue, 0, NULL, &ev) == CL_SUCCESS) {
      f->api->clFlush(f->mark->queue);
      f->event = ev;
    }
  }
  if (!ready && f->event != NULL) {
    cl_int status = CL_COMPLETE;
    if (f->api->clGetEventInfo(f->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                               &status, NULL) != CL_SUCCESS)
      status = CL_COMPLETE;
    ready = status <= CL_COMPLETE;
  }
  pthread_mutex_unlock(&f->lock);
  return ready;
}

RUDA__HOT
static void ocl_future_destroy(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  /* Never waited: wait, so no copy into a destination outlives the
   * future. */
  ruda_status_free(ocl_future_wait(base));
  ruda__ocl_finish_mark_release(f->mark);
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

static const ruda__future_vtable_t ocl_future_vt = {ocl_future_wait, ocl_future_poll,
                                                    ocl_future_destroy};

/* A future of `st` with `early` as its first error, fenced by nothing yet
 * (the caller sets `event`, or `mark`, `seq` and finish_pending); NULL
 * without memory. */
static ocl_future_t *future_new(const ocl_server_t *s, const ocl_stream_t *st,
                                ruda_status_t early) {
  ocl_future_t *f = ruda__calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->base.vt = &ocl_future_vt;
  f->api = s->api;
  f->loss = s->base.loss;
  f->early = early;
  f->recent = st->recent;
  pthread_mutex_init(&f->lock, NULL);
  return f;
}

static void future_free_unused(ocl_future_t *f) {
  if (f == NULL) return;
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

RUDA__HOT
ruda_status_t ruda__ocl_future_make(ocl_server_t *s, ocl_stream_t *st, ruda_status_t early,
                                    ruda__future_t **out) {
  const ruda__opencl_api_t *api = s->api;
  *out = NULL;
  /* The fence is the stream's newest command (in order: its completion is
   * that of everything before it); a marker only when that command has no
   * event. A newest command that completed leaves nothing to wait for. */
  cl_event ev = NULL;
  cl_int r = CL_SUCCESS;
  ruda__ocl_settle_unknown(st);
  if (st->last_unknown && !s->kernel_events) {
    /* Where events are dear (GPU drivers), finish the queue instead. */
    ruda__ocl_submit(s, st);
    ocl_future_t *f = future_new(s, st, early);
    ocl_finish_mark_t *m = f ? ruda__ocl_finish_mark(st) : NULL;
    if (m != NULL) {
      f->finish_pending = true;
      f->mark = m;
      f->seq = st->unknown_seq;
      *out = &f->base;
      return NULL;
    }
    future_free_unused(f);
    /* No memory: a marker below, or a wait here. */
  }
  if (st->last_unknown) {
    r = api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &ev);
    if (r == CL_SUCCESS) {
      st->dirty = true;
      ruda__ocl_note_event(s, st, ev);
      st->last_fenced = true;
    }
  } else {
    cl_int status = CL_COMPLETE;
    ev = ruda__ocl_last_event(s, st, &status);
    if (ev != NULL && api->clRetainEvent(ev) != CL_SUCCESS) {
      ev = NULL;
      r = CL_OUT_OF_RESOURCES;
    }
    st->last_fenced = ev != NULL; /* a failure is reported by one fence */
  }
  ruda__ocl_submit(s, st);
  if (ev == NULL && r == CL_SUCCESS) return early; /* nothing in flight */
  ocl_future_t *f = r == CL_SUCCESS ? future_new(s, st, early) : NULL;
  if (f == NULL) {
    /* Wait here instead. */
    cl_int fr = api->clFinish(st->queue);
    st->dirty = false;
    ruda_status_t e = early;
    if (e == NULL && r != CL_SUCCESS && fr != CL_SUCCESS) {
      char kernels[300];
      ruda__recent_kernels_format(&st->recent, kernels, sizeof kernels);
      ruda__ocl_fault_note(s->base.loss, fr, kernels);
      e = ruda__ocl_fault_error(fr, "clFinish", kernels);
    }
    if (ev != NULL) {
      ruda_status_t fe = ruda__ocl_event_error(api, ev, &st->recent, s->base.loss);
      if (e == NULL) e = fe;
      else ruda_status_free(fe);
      api->clReleaseEvent(ev);
    }
    *out = NULL;
    return e;
  }
  f->event = ev;
  *out = &f->base;
  return NULL;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
