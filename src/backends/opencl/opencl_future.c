/* Futures of the OpenCL server (opencl_future.h): the future object, its
 * wait, poll and destroy, and making one for a read or a sync. See
 * opencl_server.c for the design. */
#include <pthread.h>
#include <string.h>

#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_future.h"
#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* A read or a sync: completes when `event` (the newest command) has,
 * on whichever thread waits. Reads land in their destinations directly, so
 * a future holds nothing of the server's and may outlive it. */
typedef struct ocl_future {
  ruda__future_t base;
  const ruda__opencl_api_t *api;
  cl_event event;      /* NULL once waited */
  ruda_status_t early; /* error found while enqueueing; the result once done */
  ruda__recent_kernels_t recent;
  bool done;
  pthread_mutex_t lock;
} ocl_future_t;

static ruda_status_t ocl_future_wait(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  pthread_mutex_lock(&f->lock);
  if (!f->done) {
    if (f->event != NULL) {
      ruda_status_t e = ruda__ocl_event_error(f->api, f->event, &f->recent);
      if (f->early == NULL)
        f->early = e;
      else
        ruda_status_free(e);
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
  bool ready = f->done || f->event == NULL;
  if (!ready) {
    cl_int status = CL_COMPLETE;
    if (f->api->clGetEventInfo(f->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                               &status, NULL) != CL_SUCCESS)
      status = CL_COMPLETE;
    ready = status <= CL_COMPLETE;
  }
  pthread_mutex_unlock(&f->lock);
  return ready;
}

static void ocl_future_destroy(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  /* Never waited: wait, so no copy into a destination outlives the
   * future. */
  ruda_status_free(ocl_future_wait(base));
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

static const ruda__future_vtable_t ocl_future_vt = {ocl_future_wait, ocl_future_poll,
                                                    ocl_future_destroy};

ruda_status_t ruda__ocl_future_make(ocl_server_t *s, ocl_stream_t *st, ruda_status_t early,
                                    ruda__future_t **out) {
  const ruda__opencl_api_t *api = s->api;
  *out = NULL;
  /* The fence is the stream's newest command (in order: its completion is
   * that of everything before it); a marker only when that command has no
   * event. A newest command that completed leaves nothing to wait for. */
  cl_event ev = NULL;
  cl_int r = CL_SUCCESS;
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
  ocl_future_t *f = ruda__calloc(1, sizeof *f);
  if (f == NULL || r != CL_SUCCESS) {
    /* Wait here instead. */
    cl_int fr = api->clFinish(st->queue);
    st->dirty = false;
    ruda_status_t e = early;
    if (e == NULL && r != CL_SUCCESS && fr != CL_SUCCESS) {
      char kernels[300];
      ruda__recent_kernels_format(&st->recent, kernels, sizeof kernels);
      e = ruda__ocl_fault_error(fr, "clFinish", kernels);
    }
    if (ev != NULL) {
      ruda_status_t fe = ruda__ocl_event_error(api, ev, &st->recent);
      if (e == NULL) e = fe;
      else ruda_status_free(fe);
      api->clReleaseEvent(ev);
    }
    ruda__free(f);
    *out = NULL;
    return e;
  }
  f->base.vt = &ocl_future_vt;
  f->api = api;
  f->event = ev;
  f->early = early;
  f->recent = st->recent;
  pthread_mutex_init(&f->lock, NULL);
  *out = &f->base;
  return NULL;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
