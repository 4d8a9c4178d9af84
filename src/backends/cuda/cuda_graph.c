/* Graphs on CUDA: a recording (server/graph.h) becomes one CUDA graph.
 *
 * Build (ruda_client_graph_end, on the worker): every kernel is compiled or
 * loaded first (a compilation error is returned, naming it, before anything
 * is captured); the info words of all launches go into one device buffer
 * and the bytes of all writes into one pinned buffer, both owned by the
 * graph and filled once; then the nodes are captured in order on a private
 * non-blocking stream (relaxed capture mode, so other streams keep
 * working) and the graph is instantiated. Buffers are resolved to device
 * addresses at build time: the recording holds their bindings, so the
 * addresses stay valid for the graph's life.
 *
 * Replay: the replaying stream waits for the producers of the graph's
 * bindings (the same cross-stream ordering as a launch), then one
 * cuGraphLaunch. Each replay holds a reference to the graph's device
 * resources, dropped through the stream's drop queue once its work has
 * completed, so that freeing a graph never frees memory a replay still
 * reads.
 */
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_copy.h"
#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_launch.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

typedef struct cuda_graph {
  cuda_server_t *server;
  CUgraphExec exec;
  CUdeviceptr info;     /* every launch's info words */
  void *pinned;         /* every write's bytes */
  size_t refs;          /* the server's, plus one per replay in flight */
  bool lost;            /* built before a device reset: its objects are gone */
  char first_kernel[64];
  struct cuda_graph *prev, *next; /* the server's list */
} cuda_graph_t;

static void graph_unlink(cuda_graph_t *cg) {
  cuda_server_t *s = cg->server;
  if (cg->prev) cg->prev->next = cg->next;
  else s->graphs = cg->next;
  if (cg->next) cg->next->prev = cg->prev;
}

static void graph_free(cuda_graph_t *cg, bool alive) {
  const ruda__cuda_api_t *api = cg->server->api;
  if (alive && !cg->lost) {
    if (cg->exec) api->cuGraphExecDestroy(cg->exec);
    if (cg->info) api->cuMemFree(cg->info);
    if (cg->pinned) api->cuMemFreeHost(cg->pinned);
  }
  ruda__free(cg);
}

static void graph_unref(cuda_graph_t *cg) {
  if (--cg->refs) return;
  graph_unlink(cg);
  graph_free(cg, true);
}

/* The drop queue's function for a replay's reference. */
static void drop_replay(void *item) { graph_unref(item); }

/* Info words are placed 16-byte aligned, one block per launch. */
static size_t info_span(const ruda__graph_launch_t *l) {
  return (l->args.info.len * sizeof(uint64_t) + 15u) & ~(size_t)15u;
}

/* An error of node `i`, the way a launch names its kernel. */
static ruda_status_t node_error(const ruda__graph_node_t *n, ruda_status_t e,
                                ruda_stream_id_t stream) {
  const char *name = n->kind == RUDA__GRAPH_LAUNCH ? ruda_kernel_desc(n->u.launch.kernel)->name
                                                   : "a recorded write";
  return ruda_status_set_launch(ruda_status_into_server(e), name, stream.value);
}

static ruda_status_t cu_fail(CUresult r, const char *call, const char *what) {
  return ruda_status_into_server(ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call, "%s", what));
}

/* Captures launch node `l` on `cap`: its buffers and tensor maps resolved
 * (the memory they name now), then the driver call. */
static ruda_status_t launch_node(cuda_server_t *s, CUstream cap, ruda__cuda_function_t *fn,
                                 const ruda__graph_launch_t *l, CUdeviceptr info) {
  size_t nb = l->args.num_buffers, nt = l->args.num_tensor_maps;
  ruda__storage_handle_t *h = ruda__calloc(nb + nt + 1, sizeof *h);
  if (h == NULL) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, (nb + nt + 1) * sizeof *h);
  ruda_status_t e = NULL;
  for (size_t i = 0; i < nb && !e; i++)
    e = ruda__stream_resolve(&s->pipeline, NULL, &l->args.buffers[i], &h[i]);
  for (size_t i = 0; i < nt && !e; i++)
    e = ruda__stream_resolve(&s->pipeline, NULL, &l->args.tensor_map_buffers[i], &h[nb + i]);
  if (!e)
    e = ruda__cuda_launch_on(s, cap, fn, ruda_kernel_desc(l->kernel), l->count.fixed, &l->args,
                             h, info);
  ruda__free(h);
  return e;
}

ruda_status_t ruda__cuda_graph_build(cuda_server_t *s, const ruda__graph_t *g,
                                     ruda_stream_id_t stream, void **out) {
  const ruda__cuda_api_t *api = s->api;
  *out = NULL;
  if (!api->cuStreamBeginCapture || !api->cuStreamEndCapture || !api->cuGraphInstantiate ||
      !api->cuGraphLaunch || !api->cuGraphExecDestroy || !api->cuGraphDestroy) {
    return NULL; /* an old driver: the recorded list is replayed */
  }
  ruda__cuda_function_t **fns = ruda__calloc(g->num_nodes ? g->num_nodes : 1, sizeof *fns);
  cuda_graph_t *cg = ruda__calloc(1, sizeof *cg);
  void *host_info = NULL;
  CUstream cap = NULL;
  CUgraph graph = NULL;
  ruda_status_t e = NULL;
  if (!fns || !cg) {
    e = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, g->num_nodes * sizeof *fns);
    goto fail;
  }
  cg->server = s;
  /* Compile and check everything before capturing anything. */
  size_t info_bytes = 0, write_bytes = 0;
  for (size_t i = 0; i < g->num_nodes && !e; i++) {
    const ruda__graph_node_t *n = &g->nodes[i];
    if (n->kind == RUDA__GRAPH_LAUNCH) {
      const ruda__graph_launch_t *l = &n->u.launch;
      /* Validated when it was recorded (ruda__launch_validate). */
      e = ruda__cuda_module_cache_get(s->modules, l->kernel, &fns[i]);
      info_bytes += info_span(l);
      if (!cg->first_kernel[0]) {
        snprintf(cg->first_kernel, sizeof cg->first_kernel, "%s", ruda_kernel_desc(l->kernel)->name);
      }
    } else {
      write_bytes += (n->u.write.size + 15u) & ~(uint64_t)15u;
    }
    if (e) e = node_error(n, e, stream);
  }
  if (e) goto fail;
  CUresult r = CUDA_SUCCESS;
  if (info_bytes) {
    host_info = ruda__calloc(1, info_bytes);
    if (!host_info) {
      e = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, info_bytes);
      goto fail;
    }
    size_t off = 0;
    for (size_t i = 0; i < g->num_nodes; i++) {
      const ruda__graph_node_t *n = &g->nodes[i];
      if (n->kind != RUDA__GRAPH_LAUNCH) continue;
      const ruda_info_t *info = &n->u.launch.args.info;
      memcpy((char *)host_info + off, info->data, info->len * sizeof(uint64_t));
      off += info_span(&n->u.launch);
    }
    r = api->cuMemAlloc(&cg->info, info_bytes);
    if (r == CUDA_SUCCESS) r = api->cuMemcpyHtoD(cg->info, host_info, info_bytes);
    if (r != CUDA_SUCCESS) {
      e = cu_fail(r, "cuMemAlloc/cuMemcpyHtoD", "uploading the info words of a graph");
      goto fail;
    }
  }
  if (write_bytes) {
    r = api->cuMemAllocHost(&cg->pinned, write_bytes);
    if (r != CUDA_SUCCESS) {
      e = cu_fail(r, "cuMemAllocHost", "pinned memory for the writes of a graph");
      goto fail;
    }
    size_t off = 0;
    for (size_t i = 0; i < g->num_nodes; i++) {
      const ruda__graph_node_t *n = &g->nodes[i];
      if (n->kind != RUDA__GRAPH_WRITE) continue;
      memcpy((char *)cg->pinned + off, n->u.write.data, (size_t)n->u.write.size);
      off += (n->u.write.size + 15u) & ~(uint64_t)15u;
    }
  }
  r = api->cuStreamCreateWithPriority(&cap, CU_STREAM_NON_BLOCKING, 0);
  if (r == CUDA_SUCCESS) r = api->cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (r != CUDA_SUCCESS) {
    e = cu_fail(r, "cuStreamBeginCapture", "capturing a graph");
    goto fail;
  }
  size_t info_off = 0, write_off = 0;
  for (size_t i = 0; i < g->num_nodes && !e; i++) {
    const ruda__graph_node_t *n = &g->nodes[i];
    if (n->kind == RUDA__GRAPH_LAUNCH) {
      const ruda__graph_launch_t *l = &n->u.launch;
      CUdeviceptr info = l->args.info.len ? cg->info + info_off : 0;
      info_off += info_span(l);
      if (ruda_count3_is_empty(l->count.fixed)) continue;
      e = launch_node(s, cap, fns[i], l, info);
    } else {
      e = ruda__cuda_copy_in_on(s, cap, &n->u.write.desc, (char *)cg->pinned + write_off);
      write_off += (n->u.write.size + 15u) & ~(uint64_t)15u;
    }
    if (e) e = node_error(n, e, stream);
  }
  /* The capture ends whatever happened: a stream left capturing is broken. */
  r = api->cuStreamEndCapture(cap, &graph);
  if (!e && r != CUDA_SUCCESS) e = cu_fail(r, "cuStreamEndCapture", "capturing a graph");
  if (e) goto fail;
  r = api->cuGraphInstantiate(&cg->exec, graph, 0);
  if (r != CUDA_SUCCESS) {
    e = cu_fail(r, "cuGraphInstantiate", "instantiating a graph");
    goto fail;
  }
  api->cuGraphDestroy(graph);
  api->cuStreamDestroy(cap);
  ruda__free(host_info);
  ruda__free(fns);
  cg->refs = 1;
  cg->next = s->graphs;
  if (s->graphs) s->graphs->prev = cg;
  s->graphs = cg;
  *out = cg;
  return NULL;
fail:
  if (graph) api->cuGraphDestroy(graph);
  if (cap) api->cuStreamDestroy(cap);
  if (cg) graph_free(cg, true);
  ruda__free(host_info);
  ruda__free(fns);
  return e;
}

void ruda__cuda_graph_launch(cuda_server_t *s, const ruda__graph_t *g, void *native,
                             ruda_stream_id_t stream) {
  cuda_graph_t *cg = native;
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return;
  if (st->pipe.nkept || st->pipe.nspans) ruda__stream_pipe_poll(&s->pipeline, st, false);
  ruda__keep_list_t keep = {0};
  for (size_t i = 0; i < g->num_nodes; i++) {
    const ruda__graph_node_t *n = &g->nodes[i];
    if (n->kind == RUDA__GRAPH_LAUNCH) {
      const ruda__launch_args_t *a = &n->u.launch.args;
      for (size_t k = 0; k < a->num_buffers; k++) ruda__stream_order(&s->pipeline, st, &a->buffers[k], &keep);
      for (size_t k = 0; k < a->num_tensor_maps; k++)
        ruda__stream_order(&s->pipeline, st, &a->tensor_map_buffers[k], &keep);
    } else {
      ruda__stream_order(&s->pipeline, st, &n->u.write.desc.binding, &keep);
    }
  }
  if (cg->lost) {
    ruda__stream_push_launch_error(
        cuda_rs(st),
        ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                           "the graph was built before the device was reset after a fault; "
                           "record it again"),
        cg->first_kernel);
    ruda__stream_op_end(&s->pipeline, st, &keep);
    return;
  }
  long tr = ruda__stream_trace_begin(&s->pipeline, st, "kernel", "graph replay", 0);
  CUresult r = s->api->cuGraphLaunch(cg->exec, st->cu);
  ruda__stream_trace_end(&s->pipeline, st, tr);
  if (r != CUDA_SUCCESS) {
    if (ruda__cu_result_is_sticky(r)) ruda__cuda_poison(&s->fault, r, cg->first_kernel, true);
    ruda__stream_push_launch_error(
        cuda_rs(st),
        ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuGraphLaunch", "a graph of %zu launches",
                       g->num_launches),
        cg->first_kernel);
  } else {
    if (cg->first_kernel[0]) ruda__recent_kernels_note(&st->recent, cg->first_kernel);
    cg->refs++;
    ruda__cuda_drop_when_done(s, st, cg, 0, drop_replay);
  }
  ruda__stream_op_end(&s->pipeline, st, &keep);
}

void ruda__cuda_graph_destroy(cuda_server_t *s, void *native) {
  (void)s;
  if (native) graph_unref(native);
}

void ruda__cuda_graphs_forget(cuda_server_t *s) {
  for (cuda_graph_t *cg = s->graphs; cg; cg = cg->next) {
    cg->lost = true;
    cg->exec = NULL;
    cg->info = 0;
    cg->pinned = NULL;
  }
}

void ruda__cuda_graphs_free(cuda_server_t *s, bool alive) {
  while (s->graphs) {
    cuda_graph_t *cg = s->graphs;
    graph_unlink(cg);
    graph_free(cg, alive);
  }
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
