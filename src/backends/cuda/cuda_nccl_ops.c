/* NCCL collectives and send/recv of the CUDA server: each participant's
 * call, issued by the last to arrive at the rendezvous in one NCCL group
 * (in one process) or by each rank (across processes). The design is at
 * the top of cuda_nccl.c, which keeps the communicators.
 */
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_nccl_table.h"
#include "backends/cuda/cuda_stream.h"
#include "comm/comm_id.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

static ncclRedOp_t nccl_op(ruda_reduce_op_t op) {
  switch (op) {
    case RUDA_REDUCE_MEAN: return ncclAvg;
    case RUDA_REDUCE_MIN: return ncclMin;
    case RUDA_REDUCE_MAX: return ncclMax;
    default: return ncclSum;
  }
}

/* One participant's call, as the issuing thread needs it. */
typedef struct op_part {
  const ruda__nccl_api_t *api;
  ncclComm_t comm;
  CUstream stream;
  ruda__coll_kind_t kind;
  CUdeviceptr send, recv;
  size_t count; /* as NCCL counts it (see issue_one) */
  ncclDataType_t type;
  ncclRedOp_t op;
  int root, peer;
  const char *failed; /* this participant's failure, or NULL */
  ncclResult_t result;   /* out: the call's result */
  char device[32];
} op_part_t;

static ncclResult_t issue_one(op_part_t *p) {
  const ruda__nccl_api_t *api = p->api;
  const void *sb = (const void *)(uintptr_t)p->send;
  void *rb = (void *)(uintptr_t)p->recv;
  cudaStream_t st = (cudaStream_t)p->stream;
  switch (p->kind) {
    case RUDA__COLL_ALL_REDUCE:
      return api->ncclAllReduce(sb, rb, p->count, p->type, p->op, p->comm, st);
    case RUDA__COLL_BROADCAST:
      return api->ncclBroadcast(rb, rb, p->count, p->type, p->root, p->comm, st);
    case RUDA__COLL_ALL_GATHER:
      return api->ncclAllGather(sb, rb, p->count, p->type, p->comm, st);
    case RUDA__COLL_REDUCE_SCATTER:
      return api->ncclReduceScatter(sb, rb, p->count, p->type, p->op, p->comm, st);
    case RUDA__COLL_SEND:
      return api->ncclSend(sb, p->count, p->type, p->peer, p->comm, st);
    case RUDA__COLL_RECV:
      return api->ncclRecv(rb, p->count, p->type, p->peer, p->comm, st);
  }
  return ncclInvalidArgument;
}

/* The last participant to arrive issues every call in one group. */
static void issue_all(ruda__round_t *round, void *ctx) {
  (void)ctx;
  for (uint32_t i = 0; i < round->size; i++) {
    op_part_t *p = round->parts[i];
    if (p->failed) {
      snprintf(round->error, sizeof round->error, "%s: %s failed: %s",
               ruda__coll_kind_name(p->kind), p->device, p->failed);
      return;
    }
  }
  if (!ruda__nccl_grouped()) return; /* each issues its own after the rendezvous */
  op_part_t *p0 = round->parts[0];
  const ruda__nccl_api_t *api = p0->api;
  ncclResult_t r = api->ncclGroupStart();
  for (uint32_t i = 0; i < round->size && r == ncclSuccess; i++) {
    op_part_t *p = round->parts[i];
    p->result = issue_one(p);
    if (p->result != ncclSuccess && p->result != ncclInProgress) r = p->result;
  }
  ncclResult_t g = api->ncclGroupEnd();
  if (r == ncclSuccess && g != ncclSuccess && g != ncclInProgress) r = g;
  if (r == ncclSuccess && g == ncclInProgress) {
    ncclComm_t comms[RUDA__COMM_MAX_DEVICES];
    for (uint32_t i = 0; i < round->size; i++) comms[i] = ((op_part_t *)round->parts[i])->comm;
    bool timed_out = false;
    r = ruda__nccl_wait_ready(api, comms, round->size, ruda__now_ns() + ruda__comm_timeout_ns(), &timed_out);
    if (timed_out) {
      snprintf(round->error, sizeof round->error,
               "%s: NCCL did not take the group of calls within %.1f s (RUDA_COMM_TIMEOUT)",
               ruda__coll_kind_name(p0->kind), (double)ruda__comm_timeout_ns() * 1e-9);
      return;
    }
  }
  if (r != ncclSuccess) {
    ruda_status_t e = ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "ncclGroupEnd", "%s of %u devices",
                                       ruda__coll_kind_name(p0->kind), round->size);
    snprintf(round->error, sizeof round->error, "%s", ruda_status_reason(e) ? ruda_status_reason(e) : "NCCL failed");
    ruda_status_free(e);
  }
}


void ruda__cuda_collective(cuda_server_t *s, const ruda__coll_t *c, ruda_stream_id_t stream) {
  const ruda__cuda_api_t *cu = s->api;
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  struct ruda__cuda_comms *comms = s->comms;
  comm_entry_t *entry = ruda__nccl_find_comm(comms, c->peers.id);
  ruda__keep_list_t keep = {0};
  ruda_status_t own = NULL;
  CUdeviceptr scratch = 0;
  op_part_t part;
  memset(&part, 0, sizeof part);
  snprintf(part.device, sizeof part.device, "cuda:%u", s->base.device.index_id);
  uint64_t src_need = 0, dst_need = 0;
  ruda__coll_bytes(c, &src_need, &dst_need);

  if (!st) own = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
  else if (!entry) own = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "no NCCL communicator");
  else if (entry->aborted) {
    own = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "the NCCL communicator was aborted: %s",
                             entry->why);
  }
  if (!own && !ruda__nccl_dtype(c->dtype, &part.type)) {
    own = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "NCCL has no type for %s",
                             ruda_elem_type_name(c->dtype));
  }
  if (!own && ruda__coll_is_reduction(c->kind) &&
      !(RUDA__REDUCE_TYPES_NCCL & (1ull << c->dtype))) {
    own = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "NCCL cannot reduce %s",
                             ruda_elem_type_name(c->dtype));
  }
  if (!own) {
    bool has_src = !ruda_binding_is_empty(&c->src.binding);
    bool has_dst = !ruda_binding_is_empty(&c->dst);
    if (has_src) ruda__stream_order(&s->pipeline, st, &c->src.binding, &keep);
    if (has_dst) ruda__stream_order(&s->pipeline, st, &c->dst, &keep);
    if (has_src) own = ruda__cuda_resolve(s, st, &c->src.binding, &part.send, NULL);
    if (!own && has_dst) own = ruda__cuda_resolve(s, st, &c->dst, &part.recv, NULL);
  }
  part.api = comms ? comms->api : NULL;
  part.comm = entry && !entry->aborted ? entry->comm : NULL;
  part.stream = st ? st->cu : NULL;
  part.kind = c->kind;
  part.count = (size_t)c->count;
  part.op = nccl_op(c->op);
  part.root = (int)c->root;
  part.peer = (int)c->peer;
  if (c->kind == RUDA__COLL_BROADCAST) part.send = part.recv;
  const char *own_reason = own ? (ruda_status_reason(own) ? ruda_status_reason(own) : "error") : NULL;

  long tr = st ? ruda__stream_trace_begin(&s->pipeline, st, "collective",
                                          ruda__coll_kind_name(c->kind),
                                          c->count * ruda_elem_type_size(c->dtype))
               : -1;
  ruda_status_t err = NULL;
  if (c->peers.ids) {
    /* In one process: meet the peers; the last to arrive issues the group
     * or fails the round for everyone. */
    part.failed = own_reason;
    ruda__rendezvous_t *rv = entry ? entry->rv : NULL;
    if (!rv) err = ruda__rendezvous_get(c->peers.id, c->peers.size, c->peers.ids, &rv);
    if (!err) {
      err = ruda__rendezvous_join(rv, c->peers.rank, &part, issue_all, NULL, NULL,
                                  ruda__coll_kind_name(c->kind));
    }
    if (c->peers.size > 1) cu->cuCtxSetCurrent(s->ctx); /* the group switched devices */
    if (!err && !ruda__nccl_grouped()) {
      ncclResult_t r = issue_one(&part);
      if (r != ncclSuccess && r != ncclInProgress) {
        err = ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "NCCL", "%s on cuda:%u",
                               ruda__coll_kind_name(c->kind), s->base.device.index_id);
      }
    }
  } else if (part.api && part.comm && part.stream) {
    /* Across processes: take part even when this rank's buffers failed,
     * with scratch memory, so the peers are not left waiting. */
    if (own) {
      uint64_t need = src_need > dst_need ? src_need : dst_need;
      if (need && cu->cuMemAlloc(&scratch, need) != CUDA_SUCCESS) scratch = 0;
      part.send = part.recv = scratch;
    }
    if (!own || scratch || (src_need == 0 && dst_need == 0)) {
      ncclResult_t r = issue_one(&part);
      if (r == ncclInProgress) {
        bool timed_out = false;
        r = ruda__nccl_wait_ready(part.api, &part.comm, 1, ruda__now_ns() + ruda__comm_timeout_ns(), &timed_out);
      }
      if (r != ncclSuccess) {
        err = ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "NCCL", "%s on cuda:%u (rank %u of %u)",
                               ruda__coll_kind_name(c->kind), s->base.device.index_id,
                               c->peers.rank, c->peers.size);
        ruda__nccl_comm_abort(part.api, entry, ruda_status_reason(err) ? ruda_status_reason(err) : "NCCL error");
      }
    }
    if (scratch) {
      cu->cuStreamSynchronize(part.stream);
      cu->cuMemFree(scratch);
    }
  }
  if (st) ruda__stream_trace_end(&s->pipeline, st, tr);
  if (entry && st) {
    entry->used = true;
    ruda__nccl_note_pending(comms, stream);
    comms->has_last = true;
    comms->last_id = stream;
  }
  if (own) {
    ruda_status_free(err);
    err = own;
  }
  if (st) {
    if (err) ruda__stream_push_error(cuda_rs(st), err);
    ruda__stream_op_end(&s->pipeline, st, &keep);
  } else {
    ruda_status_free(err);
  }
}

ruda_status_t ruda__cuda_sync_collective(cuda_server_t *s, ruda_stream_id_t stream) {
  struct ruda__cuda_comms *c = s->comms;
  if (!c || !c->has_last || c->last_id.value == stream.value) return NULL;
  /* A stream reclaimed since (idle) has nothing left to wait for. */
  cuda_stream_t *last = ruda__stream_pipe_find(&s->pipeline, c->last_id);
  if (!last) return NULL;
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (!st) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
  CUevent ev = NULL;
  CUresult r = ruda__cuda_event_get(s, &ev);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(ev, last->cu);
  if (r == CUDA_SUCCESS) r = s->api->cuStreamWaitEvent(st->cu, ev, 0);
  ruda__cuda_event_put(s, ev, ruda__cuda_generation(&s->fault));
  if (r != CUDA_SUCCESS) {
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamWaitEvent",
                          "sync_collective on cuda:%u", s->base.device.index_id);
  }
  return NULL;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
