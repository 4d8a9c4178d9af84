/* Group operations (include/ruda/mpi.h): validation on this rank, then one
 * of three transports, picked from what the client's device offers:
 *
 *   host_call (CPU)  an MPI job queued on the device's stream; the worker
 *                    runs it over the buffers' host addresses;
 *   tokens (NCCL)    the group's NCCL communicator on this device (made on
 *                    first use: rank 0 makes the id, MPI broadcasts it) and
 *                    the operation queued like an in-process one;
 *   neither          the caller runs the MPI job itself, on device pointers
 *                    when MPI is CUDA-aware and the device is CUDA, else on
 *                    host copies of the buffers (blocking).
 *
 * An MPI job takes part even when its own buffers failed (a scratch buffer
 * of the right size stands in), so its peers are not left waiting; the
 * failure is its stream's error. Counts above INT_MAX go in chunks where
 * MPI allows (all-reduce, broadcast, send/recv).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/collective.h"
#include "comm/cpu_collective.h"
#include "mpi/mpi_internal.h"
#include "ruda/log.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#define CHUNK_ELEMS (1ull << 30)
#define TAG 0x7275

MPI_Datatype ruda__mpi_type(ruda_elem_type_t t) {
  switch (t) {
    case RUDA_ELEM_F64: return MPI_DOUBLE;
    case RUDA_ELEM_F32: return MPI_FLOAT;
    case RUDA_ELEM_F16: case RUDA_ELEM_BF16: return MPI_UINT16_T;
    case RUDA_ELEM_I8: return MPI_INT8_T;
    case RUDA_ELEM_I16: return MPI_INT16_T;
    case RUDA_ELEM_I32: return MPI_INT32_T;
    case RUDA_ELEM_I64: return MPI_INT64_T;
    case RUDA_ELEM_U8: return MPI_UINT8_T;
    case RUDA_ELEM_U16: return MPI_UINT16_T;
    case RUDA_ELEM_U32: return MPI_UINT32_T;
    case RUDA_ELEM_U64: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

static MPI_Op mpi_op(ruda_elem_type_t t, ruda_reduce_op_t op) {
  if (t == RUDA_ELEM_F16 || t == RUDA_ELEM_BF16) return ruda__mpi_half_op(t, op);
  switch (op) {
    case RUDA_REDUCE_MIN: return MPI_MIN;
    case RUDA_REDUCE_MAX: return MPI_MAX;
    default: return MPI_SUM; /* a mean divides afterwards */
  }
}

/* ---- MPI jobs ---- */

typedef struct mpi_job {
  ruda_group_t *g; /* one reference */
  ruda__coll_kind_t kind;
  uint64_t count; /* elements, as in ruda__coll_t */
  ruda_elem_type_t dtype;
  ruda_reduce_op_t op;
  uint32_t root, peer;
  uint64_t src_need, dst_need;
  /* A send of a strided view: packed from src (view.shape, view.strides,
   * view.elem_size) into count bytes before MPI_Send. */
  bool pack;
  ruda__copy_desc_t view;
} mpi_job_t;

static void job_free(void *ctx) {
  mpi_job_t *j = ctx;
  ruda_group_release(j->g);
  ruda__free(j);
}

static ruda_status_t mpi_failed(int rc, const char *call, const mpi_job_t *j) {
  return ruda__mpi_error(RUDA_ERR_SERVER_GENERIC, rc, call, "%s of %llu elements, rank %u of %u",
                         ruda__coll_kind_name(j->kind), (unsigned long long)j->count,
                         j->g->rank, j->g->size);
}

/* Runs one job over host (or CUDA-aware device) addresses. */
static ruda_status_t run_job(void *ctx, void *src, uint64_t src_bytes, void *dst,
                             uint64_t dst_bytes) {
  mpi_job_t *j = ctx;
  ruda_group_t *g = j->g;
  ruda_status_t own = NULL;
  void *scratch = NULL;
  if (g->dead) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s: the world was finalized before it ran",
                              ruda__coll_kind_name(j->kind));
  }
  if ((j->src_need && (!src || src_bytes < j->src_need)) ||
      (j->dst_need && (!dst || dst_bytes < j->dst_need))) {
    own = ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                             "%s: rank %u's buffers could not be used (%llu bytes in src and %llu "
                             "in dst for %llu and %llu); it took part with scratch memory",
                             ruda__coll_kind_name(j->kind), g->rank,
                             (unsigned long long)src_bytes, (unsigned long long)dst_bytes,
                             (unsigned long long)j->src_need, (unsigned long long)j->dst_need);
    uint64_t need = j->src_need + j->dst_need;
    scratch = ruda__calloc(1, need ? (size_t)need : 1);
    if (!scratch) return own; /* cannot take part: the peers time out */
    src = scratch;
    dst = (uint8_t *)scratch + j->src_need;
  }
  size_t esize = ruda_elem_type_size(j->dtype);
  MPI_Datatype type = ruda__mpi_type(j->dtype);
  MPI_Op op = mpi_op(j->dtype, j->op);
  int rc = MPI_SUCCESS;
  const char *call = "";
  ruda__mpi_watch_begin(ruda__coll_kind_name(j->kind), ruda_elem_type_name(j->dtype), j->count,
                        g->size);
  switch (j->kind) {
    case RUDA__COLL_ALL_REDUCE:
      call = "MPI_Allreduce";
      for (uint64_t at = 0; at < j->count && rc == MPI_SUCCESS; at += CHUNK_ELEMS) {
        uint64_t n = j->count - at < CHUNK_ELEMS ? j->count - at : CHUNK_ELEMS;
        uint8_t *d = (uint8_t *)dst + at * esize;
        const uint8_t *s = (const uint8_t *)src + at * esize;
        rc = MPI_Allreduce(s == d ? MPI_IN_PLACE : s, d, (int)n, type, op, g->comm);
      }
      break;
    case RUDA__COLL_BROADCAST:
      call = "MPI_Bcast";
      for (uint64_t at = 0; at < j->count && rc == MPI_SUCCESS; at += CHUNK_ELEMS) {
        uint64_t n = j->count - at < CHUNK_ELEMS ? j->count - at : CHUNK_ELEMS;
        rc = MPI_Bcast((uint8_t *)dst + at * esize, (int)n, type, (int)j->root, g->comm);
      }
      break;
    case RUDA__COLL_ALL_GATHER: {
      call = "MPI_Allgather";
      uint64_t bytes = j->count * esize;
      bool in_place = (uint8_t *)src == (uint8_t *)dst + (size_t)g->rank * bytes;
      rc = MPI_Allgather(in_place ? MPI_IN_PLACE : src, (int)bytes, MPI_BYTE, dst, (int)bytes,
                         MPI_BYTE, g->comm);
      break;
    }
    case RUDA__COLL_REDUCE_SCATTER:
      call = "MPI_Reduce_scatter_block";
      rc = MPI_Reduce_scatter_block(src, dst, (int)j->count, type, op, g->comm);
      break;
    case RUDA__COLL_SEND: {
      call = "MPI_Send";
      const uint8_t *data = src;
      uint64_t count = j->count;
      uint8_t *packed = NULL;
      if (j->pack && count) {
        packed = ruda__malloc((size_t)count);
        if (packed) {
          ruda__cpu_gather_view(src, &j->view, packed);
        } else if (!own) {
          /* Nothing to send: an empty message, so the receiver fails on
           * the size instead of waiting. */
          own = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, count);
          count = 0;
        }
        data = packed;
      }
      for (uint64_t at = 0; at < count && rc == MPI_SUCCESS; at += CHUNK_ELEMS) {
        uint64_t n = count - at < CHUNK_ELEMS ? count - at : CHUNK_ELEMS;
        rc = MPI_Send(data + at * esize, (int)n, type, (int)j->peer, TAG, g->comm);
      }
      if (count == 0) rc = MPI_Send(data, 0, type, (int)j->peer, TAG, g->comm);
      ruda__free(packed);
      break;
    }
    case RUDA__COLL_RECV:
      call = "MPI_Recv";
      for (uint64_t at = 0; (at < j->count || (at == 0 && j->count == 0)) && rc == MPI_SUCCESS;
           at += CHUNK_ELEMS) {
        uint64_t n = j->count - at < CHUNK_ELEMS ? j->count - at : CHUNK_ELEMS;
        MPI_Status st;
        rc = MPI_Recv((uint8_t *)dst + at * esize, (int)n, type, (int)j->peer, TAG, g->comm, &st);
        int got = 0;
        if (rc == MPI_SUCCESS && MPI_Get_count(&st, type, &got) == MPI_SUCCESS &&
            (uint64_t)got != n) {
          ruda__mpi_watch_end();
          ruda__free(scratch);
          ruda_status_free(own);
          return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                    "recv: rank %u sent %d bytes where rank %u expected %llu",
                                    j->peer, got, g->rank, (unsigned long long)n);
        }
        if (j->count == 0) break;
      }
      break;
  }
  ruda__mpi_watch_end();
  ruda_status_t err = NULL;
  if (rc != MPI_SUCCESS) {
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_TRUNCATE && j->kind == RUDA__COLL_RECV) {
      err = ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                               "recv: rank %u sent more than the %llu bytes rank %u expected "
                               "(MPI_ERR_TRUNCATE)",
                               j->peer, (unsigned long long)(j->count * esize), g->rank);
    } else {
      err = mpi_failed(rc, call, j);
    }
  } else if (j->op == RUDA_REDUCE_MEAN &&
             (j->kind == RUDA__COLL_ALL_REDUCE || j->kind == RUDA__COLL_REDUCE_SCATTER)) {
    ruda__cpu_divide(j->dtype, dst, (size_t)j->count, g->size);
  }
  ruda__free(scratch);
  if (own) {
    ruda_status_free(err);
    return own;
  }
  return err;
}

/* ---- Validation and dispatch ---- */

typedef struct op_args {
  const char *fn;
  ruda__coll_kind_t kind;
  const ruda_handle_t *src, *dst;
  ruda_elem_type_t dtype;
  ruda_reduce_op_t op;
  uint32_t root, peer;
  uint64_t recv_bytes;
  ruda_handle_t *out; /* recv */
  const ruda_shape_t *shape; /* a send's view (with strides, elements of dtype); NULL: bytes */
  const ruda_strides_t *strides;
} op_args_t;

static bool handle_empty(const ruda_handle_t *h) { return !h || ruda_handle_is_empty(h); }

static ruda_status_t invalid(const char *fn, const char *what) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s", fn, what);
}

static bool cuda_aware_mpi(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

/* The group's NCCL communicator on device slot `idx`, created on first
 * use: a collective step of every rank (each calls the same operation).
 * When rank 0 cannot load NCCL every rank learns it from the broadcast and
 * the group takes the host path on this device from then on (*out_host). */
static ruda_status_t ensure_nccl(ruda_group_t *g, ruda_client_t *c, size_t idx, bool *out_host) {
  *out_host = false;
  pthread_mutex_lock(&g->lock);
  if (g->nccl[idx] || g->no_nccl[idx]) {
    *out_host = g->no_nccl[idx];
    pthread_mutex_unlock(&g->lock);
    return NULL;
  }
  struct {
    int32_t ok; /* 1: token made; 0: failed; -1: no NCCL on rank 0 */
    uint32_t len;
    uint8_t token[256];
  } msg;
  memset(&msg, 0, sizeof msg);
  ruda_status_t s = NULL;
  if (g->rank == 0) {
    size_t len = 0;
    s = ruda__client_comm_token(c, msg.token, sizeof msg.token, &len);
    msg.ok = !s ? 1 : ruda_status_kind(s) == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION ? -1 : 0;
    msg.len = (uint32_t)len;
  }
  ruda__mpi_watch_begin("MPI_Bcast of the group's NCCL id", NULL, 0, g->size);
  int rc = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, g->ctl);
  ruda__mpi_watch_end();
  if (rc != MPI_SUCCESS) {
    ruda_status_free(s);
    pthread_mutex_unlock(&g->lock);
    return ruda__mpi_error(RUDA_ERR_SERVER_GENERIC, rc, "MPI_Bcast", "the NCCL id");
  }
  if (msg.ok == -1) {
    ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_MINIMAL,
             "group of %u ranks: NCCL is unavailable on rank 0; GPU buffers go through the host",
             g->size);
    ruda_status_free(s);
    g->no_nccl[idx] = true;
    *out_host = true;
    pthread_mutex_unlock(&g->lock);
    return NULL;
  }
  if (!msg.ok) {
    pthread_mutex_unlock(&g->lock);
    if (s) return s;
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                              "rank 0 could not make the group's NCCL id (see its error)");
  }
  ruda__comm_peers_t peers = {g->id, g->rank, g->size, NULL};
  s = ruda__client_comm_init(c, &peers, msg.token, msg.len);
  if (!s) g->nccl[idx] = true;
  pthread_mutex_unlock(&g->lock);
  return s;
}

/* The blocking path: MPI on host copies (or on CUDA-aware device
 * pointers) on the caller's thread. */
static ruda_status_t run_on_caller(ruda_client_t *c, const ruda_handle_t *src,
                                   const ruda_handle_t *dst, mpi_job_t *j, const char *backend) {
  ruda_status_t s = NULL;
  if (strcmp(backend, "cuda") == 0 && cuda_aware_mpi()) {
    ruda_resource_t rs = {0}, rd = {0};
    if (src) s = ruda_client_get_resource(c, src, &rs);
    if (!s && dst) s = ruda_client_get_resource(c, dst, &rd);
    if (!s) s = ruda_client_sync(c);
    if (!s) {
      s = run_job(j, (void *)(uintptr_t)rs.address, rs.size, (void *)(uintptr_t)rd.address,
                  rd.size);
    }
    ruda_resource_release(&rs);
    ruda_resource_release(&rd);
    return s;
  }
  uint64_t sn = src ? ruda_handle_size_in_used(src) : 0;
  uint64_t dn = dst ? ruda_handle_size_in_used(dst) : 0;
  if (sn > SIZE_MAX / 2 || dn > SIZE_MAX / 2) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sn + dn);
  uint8_t *host = ruda__malloc((size_t)(sn + dn) + 1);
  if (!host) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sn + dn);
  /* Separate host copies: an in-place operation reads src and writes dst
   * back over it. Broadcast's root sends what dst holds. */
  if (src) s = ruda_client_read(c, src, host, sn);
  if (!s && dst && j->kind == RUDA__COLL_BROADCAST) s = ruda_client_read(c, dst, host + sn, dn);
  if (!s) s = run_job(j, src ? host : NULL, sn, dst ? host + sn : NULL, dn);
  if (!s && dst) s = ruda_client_write(c, dst, host + sn, dn);
  ruda__free(host);
  return s;
}

/* ---- On the caller's thread ----
 *
 * A queued job costs a hand-off to the worker and back per operation,
 * which for small messages is a good part of MPI's own latency; and on the
 * 2-core machines queued jobs of 256 KiB to 64 MiB also ran 12-20% slower
 * than the same MPI call made directly (64 MiB all-reduce at np 2:
 * 0.81-0.84x), while jobs on the caller's thread (up to 1 MiB then) ran as
 * the direct call. MPI polls for its peers on whichever thread calls it,
 * and a job on the worker has the caller's thread waking, spinning and
 * yielding next to it on the rank's cores (the likely cost; no CPU time in
 * ruda's own code explains it). So when the device has nothing queued or
 * running (ruda__client_run_if_idle) and the buffers are at most
 * RUDA_MPI_INLINE_BYTES (no limit when unset; 0: always queue), the caller
 * runs the job itself, over the host addresses the group remembers per
 * view (host-backed buffers go to MPI as they are, no copy); it then
 * returns when MPI has finished (MPI's blocking semantics). Its error, if
 * any, is queued on the stream as a queued job's would be. */

#define INLINE_BYTES_DEFAULT UINT64_MAX

static uint64_t inline_bytes(void) {
  static _Atomic int64_t cached = -1;
  int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v >= 0) return (uint64_t)v;
  const char *e = getenv("RUDA_MPI_INLINE_BYTES");
  char *end = NULL;
  unsigned long long n = e && *e ? strtoull(e, &end, 10) : (unsigned long long)INLINE_BYTES_DEFAULT;
  if (e && *e && (!end || *end)) n = INLINE_BYTES_DEFAULT; /* not a number: the default */
  v = n > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)n;
  atomic_store_explicit(&cached, v, memory_order_relaxed);
  return (uint64_t)v;
}

static bool same_view(const ruda_handle_t *a, const ruda_handle_t *b) {
  return a->id == b->id && a->offset_start == b->offset_start && a->offset_end == b->offset_end &&
         a->size == b->size && a->stream.value == b->stream.value &&
         a->device.type_id == b->device.type_id && a->device.index_id == b->device.index_id;
}

/* The host address of a live view of c's device: remembered, or asked of
 * the device once (a blocking call). False when it cannot be had. */
static bool view_address(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *h,
                         uint8_t **out, uint64_t *out_size) {
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i < RUDA__GROUP_ADDRS; i++) {
    if (g->addrs[i].view.id && same_view(&g->addrs[i].view, h)) {
      *out = (uint8_t *)(uintptr_t)g->addrs[i].address;
      *out_size = g->addrs[i].size;
      pthread_mutex_unlock(&g->lock);
      return true;
    }
  }
  pthread_mutex_unlock(&g->lock);
  ruda_resource_t r;
  ruda_status_t s = ruda_client_get_resource(c, h, &r);
  if (s) {
    ruda_status_free(s); /* the queued path reports what is wrong */
    return false;
  }
  *out = (uint8_t *)(uintptr_t)r.address;
  *out_size = r.size;
  pthread_mutex_lock(&g->lock);
  ruda__group_addr_t *slot = &g->addrs[g->addr_next++ % RUDA__GROUP_ADDRS];
  slot->view = *h;
  slot->address = r.address;
  slot->size = r.size;
  pthread_mutex_unlock(&g->lock);
  /* The caller's live handle keeps the memory; the binding is not needed. */
  ruda_resource_release(&r);
  return true;
}

typedef struct inline_call {
  ruda_client_t *c;
  mpi_job_t *job;
  const ruda_handle_t *src, *dst;
  bool ran;
  ruda_status_t status;
} inline_call_t;

/* On the caller's thread, with the device idle: the views' addresses
 * (remembered, or asked of the idle device), then the job. */
static void inline_run(void *ctx) {
  inline_call_t *ic = ctx;
  mpi_job_t *j = ic->job;
  uint8_t *sp = NULL, *dp = NULL;
  uint64_t sn = 0, dn = 0;
  if ((ic->src && !view_address(j->g, ic->c, ic->src, &sp, &sn)) ||
      (ic->dst && !view_address(j->g, ic->c, ic->dst, &dp, &dn)) || sn < j->src_need ||
      dn < j->dst_need) {
    return; /* the queued path, which reports what is wrong */
  }
  ic->ran = true;
  ic->status = run_job(j, sp, sn, dp, dn);
}

/* A queued host call whose only work is to put an error on the stream:
 * the stream takes the status from report_error; a call cancelled by
 * ruda_shutdown frees it in report_free. */
typedef struct report {
  ruda_status_t status;
} report_t;

static ruda_status_t report_error(void *ctx, void *src, uint64_t sn, void *dst, uint64_t dn) {
  (void)src, (void)sn, (void)dst, (void)dn;
  report_t *r = ctx;
  ruda_status_t s = r->status;
  r->status = NULL;
  return s;
}

static void report_free(void *ctx) {
  report_t *r = ctx;
  ruda_status_free(r->status);
  ruda__free(r);
}

ruda_status_t ruda__mpi_queue_error(ruda_client_t *c, ruda_status_t err) {
  report_t *r = ruda__calloc(1, sizeof *r);
  if (r) r->status = err;
  ruda_status_t s = r ? ruda__client_host_call(c, NULL, NULL, "error report", report_error, r,
                                                    report_free)
                      : ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *r);
  if (s) { /* not queued: r and err are still ours */
    ruda_status_free(s);
    ruda__free(r);
    return err;
  }
  return NULL;
}

static _Atomic uint64_t inline_runs;

uint64_t ruda__mpi_inline_runs(void) {
  return atomic_load_explicit(&inline_runs, memory_order_relaxed);
}

/* Runs `job` on the caller's thread when it is small, its buffers'
 * addresses are known and the device is idle; *out_ran says whether it
 * did (otherwise nothing happened and the caller queues it). */
static ruda_status_t run_inline(ruda_client_t *c, mpi_job_t *job, const ruda_handle_t *src,
                                const ruda_handle_t *dst, bool *out_ran) {
  *out_ran = false;
  uint64_t limit = inline_bytes();
  if (job->src_need > limit || job->dst_need > limit) return NULL;
  inline_call_t ic = {c, job, src, dst, false, NULL};
  bool idle = false;
  ruda_status_t s = ruda__client_run_if_idle(c, inline_run, &ic, &idle);
  if (s || !ic.ran) return s;
  *out_ran = true;
  atomic_fetch_add_explicit(&inline_runs, 1, memory_order_relaxed);
  return ic.status ? ruda__mpi_queue_error(c, ic.status) : NULL;
}

/* A send's view (shape and strides in elements of a->dtype, as
 * ruda_client_send_recv takes them) against its handle: *view described,
 * *extent the bytes it spans, *packs when it is not contiguous. Its packed
 * size (elements x element size) fits in 64 bits when this succeeds. */
static ruda_status_t check_view(const char *fn, const op_args_t *a, ruda__copy_desc_t *view,
                                uint64_t *extent, bool *packs) {
  const ruda_shape_t *shape = a->shape;
  const ruda_strides_t *strides = a->strides;
  if (!strides) return invalid(fn, "give both shape and strides, or neither");
  if (shape->rank > RUDA_MAX_RANK) return invalid(fn, "shape rank above RUDA_MAX_RANK");
  if (strides->rank != shape->rank) return invalid(fn, "the strides' rank differs from the shape's");
  size_t esize = (unsigned)a->dtype < RUDA_ELEM_COUNT_ ? ruda_elem_type_size(a->dtype) : 0;
  if (!esize) return invalid(fn, "unknown element type");
  view->shape = *shape;
  view->strides = *strides;
  view->elem_size = esize;
  uint64_t elems = 1, bytes;
  for (uint32_t i = 0; i < shape->rank; i++) {
    if (__builtin_mul_overflow(elems, shape->dims[i], &elems)) elems = UINT64_MAX;
  }
  if (elems == UINT64_MAX || __builtin_mul_overflow(elems, (uint64_t)esize, &bytes) ||
      !ruda__cpu_view_extent(view, extent)) {
    return invalid(fn, "the view's size overflows");
  }
  uint64_t have = ruda_handle_size_in_used(a->src);
  if (*extent > have) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: the view spans %llu bytes, the handle has %llu", fn,
                              (unsigned long long)*extent, (unsigned long long)have);
  }
  *packs = bytes && shape->rank > 0 && !ruda_strides_is_contiguous(shape, strides);
  return NULL;
}

static ruda_status_t group_op(ruda_group_t *g, ruda_client_t *c, const op_args_t *a) {
  const char *fn = a->fn;
  ruda_status_t s = ruda__group_check(g, fn);
  if (s) return s;
  if (!c) return invalid(fn, "NULL client");
  bool needs_src = a->kind != RUDA__COLL_BROADCAST && a->kind != RUDA__COLL_RECV;
  bool needs_dst = a->kind != RUDA__COLL_SEND && a->kind != RUDA__COLL_RECV;
  if ((needs_src && handle_empty(a->src)) || (needs_dst && handle_empty(a->dst))) {
    return invalid(fn, "NULL or empty handle");
  }
  if (a->kind == RUDA__COLL_RECV && !a->out) return invalid(fn, "NULL out");
  /* Live handles of this client's device (InvalidHandle otherwise). */
  ruda_device_id_t dev = ruda_client_device(c);
  if (needs_src && (s = ruda__handle_check(a->src, dev, fn))) return s;
  if (needs_dst && (s = ruda__handle_check(a->dst, dev, fn))) return s;
  /* The device's slot in the group, and what it offers (asked once). */
  size_t idx = 0;
  ruda__comm_caps_t caps;
  s = ruda__group_use(g, c, &idx, &caps);
  if (s) return s;
  bool nccl = !caps.host_call && caps.tokens;
  bool reduces = a->kind == RUDA__COLL_ALL_REDUCE || a->kind == RUDA__COLL_REDUCE_SCATTER;
  ruda_elem_type_t dtype = reduces ? a->dtype : RUDA_ELEM_U8;
  if (reduces) {
    if ((unsigned)a->op > RUDA_REDUCE_MAX) return invalid(fn, "unknown reduce op");
    uint64_t types = nccl ? caps.reduce_types : RUDA__REDUCE_TYPES_MPI;
    if ((unsigned)dtype >= RUDA_ELEM_COUNT_ || !(types >> dtype & 1u)) {
      const char *name = (unsigned)dtype < RUDA_ELEM_COUNT_ ? ruda_elem_type_name(dtype) : NULL;
      char list[256];
      ruda__elem_types_format(types, list, sizeof list);
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s cannot reduce %s (it reduces %s)",
                                fn, nccl ? "NCCL" : "MPI", name ? name : "(unknown element type)",
                                list);
    }
  }
  if ((a->kind == RUDA__COLL_BROADCAST && a->root >= g->size) ||
      ((a->kind == RUDA__COLL_SEND || a->kind == RUDA__COLL_RECV) &&
       (a->peer >= g->size || a->peer == g->rank))) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: rank %u is outside the group of %u ranks, or this rank", fn,
                              a->kind == RUDA__COLL_BROADCAST ? a->root : a->peer, g->size);
  }
  /* A send of a view: `in` becomes the bytes it packs to, `extent` what it
   * spans of src. */
  ruda__copy_desc_t view;
  memset(&view, 0, sizeof view);
  uint64_t extent = 0;
  bool packs = false;
  if (a->kind == RUDA__COLL_SEND && a->shape) {
    s = check_view(fn, a, &view, &extent, &packs);
    if (s) return s;
  }
  size_t esize = ruda_elem_type_size(dtype);
  uint64_t in = a->src ? ruda_handle_size_in_used(a->src) : 0;
  if (a->kind == RUDA__COLL_SEND && a->shape) in = ruda_shape_num_elems(&view.shape) * view.elem_size;
  uint64_t out = a->dst ? ruda_handle_size_in_used(a->dst) : 0;
  if (a->kind == RUDA__COLL_RECV) out = a->recv_bytes;
  uint64_t unit = a->kind == RUDA__COLL_REDUCE_SCATTER || !needs_src ? out : in, times;
  bool overflow = __builtin_mul_overflow(unit, (uint64_t)g->size, &times);
  uint64_t want_in = needs_src ? unit : 0, want_out = needs_dst || a->kind == RUDA__COLL_RECV ? unit : 0;
  if (a->kind == RUDA__COLL_ALL_GATHER) want_out = times;
  if (a->kind == RUDA__COLL_REDUCE_SCATTER) want_in = times;
  if (overflow || in != want_in || (needs_dst && out != want_out) || unit % esize) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: %llu bytes in src and %llu in dst on rank %u; with %llu-byte "
                              "blocks it needs %llu and %llu, blocks a multiple of %zu (%s)",
                              fn, (unsigned long long)in, (unsigned long long)out, g->rank,
                              (unsigned long long)unit, (unsigned long long)want_in,
                              (unsigned long long)want_out, esize, ruda_elem_type_name(dtype));
  }
  uint64_t count = unit / esize;
  if (!nccl && (a->kind == RUDA__COLL_ALL_GATHER || a->kind == RUDA__COLL_REDUCE_SCATTER) &&
      (count > INT_MAX || unit > INT_MAX)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: blocks of %llu bytes are more than MPI counts (INT_MAX)", fn,
                              (unsigned long long)unit);
  }
  if (a->kind == RUDA__COLL_RECV) {
    s = ruda_client_empty(c, a->recv_bytes, a->out);
    if (s) return s;
  }
  const ruda_handle_t *dst = a->kind == RUDA__COLL_RECV ? a->out : a->dst;

  bool host = false;
  if (nccl) {
    s = ensure_nccl(g, c, idx, &host);
    if (host) {
      nccl = false;
      if (reduces && !(RUDA__REDUCE_TYPES_MPI >> dtype & 1u)) {
        s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: MPI cannot reduce %s", fn,
                               ruda_elem_type_name(dtype));
      }
    }
  }
  if (!s && nccl && packs) {
    s = ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                           "%s: a strided view of a %s buffer (NCCL sends contiguous views only)",
                           fn, caps.backend);
  }
  if (nccl || s) {
    if (!s) {
      ruda__coll_t coll;
      memset(&coll, 0, sizeof coll);
      coll.kind = a->kind;
      coll.peers = (ruda__comm_peers_t){g->id, g->rank, g->size, NULL};
      if (needs_src) {
        coll.src.binding = ruda_handle_binding(a->src);
        coll.src.shape.rank = coll.src.strides.rank = 1;
        coll.src.shape.dims[0] = in / esize;
        coll.src.strides.values[0] = 1;
        coll.src.elem_size = esize;
      }
      if (dst) coll.dst = ruda_handle_binding(dst);
      coll.count = count;
      coll.dtype = dtype;
      coll.op = a->op;
      coll.root = a->root;
      coll.peer = a->peer;
      s = ruda__client_collective_queue(c, &coll);
      ruda_binding_release(&coll.src.binding);
      ruda_binding_release(&coll.dst);
    }
    if (s && a->kind == RUDA__COLL_RECV) ruda_handle_release(a->out);
    return s;
  }

  mpi_job_t job = {g, a->kind, count, dtype, a->op, a->root, a->peer,
                   a->shape ? extent : want_in, needs_dst || a->kind == RUDA__COLL_RECV ? want_out : 0,
                   packs, view};
  if (caps.host_call && a->kind != RUDA__COLL_RECV) {
    bool ran = false;
    s = run_inline(c, &job, needs_src ? a->src : NULL, needs_dst ? dst : NULL, &ran);
    if (ran || s) return s;
  }
  mpi_job_t *j = ruda__calloc(1, sizeof *j);
  if (!j) {
    if (a->kind == RUDA__COLL_RECV) ruda_handle_release(a->out);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *j);
  }
  *j = job;
  ruda_group_retain(g);
  if (caps.host_call) {
    s = ruda__client_host_call(c, needs_src ? a->src : NULL, dst, ruda__coll_kind_name(a->kind),
                               run_job, j, job_free);
    if (s) job_free(j);
  } else {
    s = run_on_caller(c, needs_src ? a->src : NULL, dst, j, caps.backend);
    job_free(j);
  }
  if (s && a->kind == RUDA__COLL_RECV) ruda_handle_release(a->out);
  return s;
}

ruda_status_t ruda_group_all_reduce(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                    const ruda_handle_t *dst, ruda_elem_type_t dtype,
                                    ruda_reduce_op_t op) {
  op_args_t a = {"ruda_group_all_reduce", RUDA__COLL_ALL_REDUCE, src, dst, dtype, op, 0, 0, 0, NULL,
                 NULL, NULL};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_broadcast(ruda_group_t *g, ruda_client_t *c, uint32_t root,
                                   const ruda_handle_t *buf) {
  op_args_t a = {"ruda_group_broadcast", RUDA__COLL_BROADCAST, NULL, buf, RUDA_ELEM_U8,
                 RUDA_REDUCE_SUM, root, 0, 0, NULL, NULL, NULL};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_all_gather(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                    const ruda_handle_t *dst) {
  op_args_t a = {"ruda_group_all_gather", RUDA__COLL_ALL_GATHER, src, dst, RUDA_ELEM_U8,
                 RUDA_REDUCE_SUM, 0, 0, 0, NULL, NULL, NULL};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_reduce_scatter(ruda_group_t *g, ruda_client_t *c,
                                        const ruda_handle_t *src, const ruda_handle_t *dst,
                                        ruda_elem_type_t dtype, ruda_reduce_op_t op) {
  op_args_t a = {"ruda_group_reduce_scatter", RUDA__COLL_REDUCE_SCATTER, src, dst, dtype, op, 0, 0,
                 0, NULL, NULL, NULL};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_send(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                              uint32_t peer) {
  op_args_t a = {"ruda_group_send", RUDA__COLL_SEND, src, NULL, RUDA_ELEM_U8, RUDA_REDUCE_SUM, 0,
                 peer, 0, NULL, NULL, NULL};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_send_view(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                   const ruda_shape_t *shape, const ruda_strides_t *strides,
                                   ruda_elem_type_t dtype, uint32_t peer) {
  const char *fn = "ruda_group_send_view";
  if (!shape != !strides) return invalid(fn, "give both shape and strides, or neither");
  op_args_t a = {fn, RUDA__COLL_SEND, src, NULL, dtype, RUDA_REDUCE_SUM, 0, peer, 0, NULL, shape,
                 strides};
  return group_op(g, c, &a);
}

ruda_status_t ruda_group_recv(ruda_group_t *g, ruda_client_t *c, uint64_t bytes, uint32_t peer,
                              ruda_handle_t *out) {
  if (out) memset(out, 0, sizeof *out);
  op_args_t a = {"ruda_group_recv", RUDA__COLL_RECV, NULL, NULL, RUDA_ELEM_U8, RUDA_REDUCE_SUM, 0,
                 peer, bytes, out, NULL, NULL};
  return group_op(g, c, &a);
}
