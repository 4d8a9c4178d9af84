/* Recorded graphs: building the node list, replaying it (see graph.h). */
#include <string.h>

#include "base/alloc.h"
#include "server/graph.h"

static ruda__graph_node_t *graph_push(ruda__graph_t *g) {
  ruda__graph_node_t *grown = ruda__grow(g->nodes, &g->cap, g->num_nodes, sizeof *grown, 16);
  if (!grown) return NULL;
  g->nodes = grown;
  ruda__graph_node_t *node = &g->nodes[g->num_nodes];
  memset(node, 0, sizeof *node);
  return node;
}

static void launch_free(ruda__graph_launch_t *l) {
  for (size_t i = 0; i < l->args.num_buffers; i++) {
    ruda_binding_release((ruda_binding_t *)&l->args.buffers[i]);
  }
  for (size_t i = 0; i < l->args.num_tensor_maps; i++) {
    ruda_binding_release((ruda_binding_t *)&l->args.tensor_map_buffers[i]);
  }
  ruda__free((void *)l->args.buffers);
  ruda__free((void *)l->args.tensor_map_buffers);
  ruda__free((void *)l->args.tensor_maps);
  ruda__free((void *)l->args.info.data);
  ruda_kernel_release(l->kernel);
}

ruda_status_t ruda__graph_add_launch(ruda__graph_t *g, ruda_kernel_t *kernel,
                                     const ruda__count_t *count, const ruda__launch_args_t *args,
                                     ruda_execution_mode_t mode) {
  if (count->dynamic) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "a launch with a dynamic count cannot be recorded in a graph "
                              "(kernel '%s')", ruda_kernel_desc(kernel)->name);
  }
  ruda__graph_node_t *node = graph_push(g);
  if (!node) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *node);
  ruda__graph_launch_t *l = &node->u.launch;
  size_t nb = args->num_buffers, nt = args->num_tensor_maps, ni = args->info.len;
  ruda_binding_t *buffers = nb ? ruda__calloc(nb, sizeof *buffers) : NULL;
  ruda_binding_t *tm_buffers = nt ? ruda__calloc(nt, sizeof *tm_buffers) : NULL;
  ruda_tensor_map_meta_t *tms = nt ? ruda__calloc(nt, sizeof *tms) : NULL;
  uint64_t *info = ni ? ruda__calloc(ni, sizeof *info) : NULL;
  if ((nb && !buffers) || (nt && (!tm_buffers || !tms)) || (ni && !info)) {
    ruda__free(buffers);
    ruda__free(tm_buffers);
    ruda__free(tms);
    ruda__free(info);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY,
                            (uint64_t)(nb + nt) * sizeof *buffers + ni * sizeof *info);
  }
  for (size_t i = 0; i < nb; i++) buffers[i] = ruda_binding_clone(&args->buffers[i]);
  for (size_t i = 0; i < nt; i++) {
    tm_buffers[i] = ruda_binding_clone(&args->tensor_map_buffers[i]);
    tms[i] = args->tensor_maps[i];
  }
  if (ni) memcpy(info, args->info.data, ni * sizeof *info);
  node->kind = RUDA__GRAPH_LAUNCH;
  l->kernel = ruda_kernel_retain(kernel);
  l->count = *count;
  l->count.buffer = (ruda_binding_t){0};
  l->mode = mode;
  l->args = *args;
  l->args.buffers = buffers;
  l->args.tensor_map_buffers = tm_buffers;
  l->args.tensor_maps = tms;
  l->args.info.data = info;
  g->num_nodes++;
  g->num_launches++;
  g->num_bindings += nb + nt;
  return NULL;
}

ruda_status_t ruda__graph_add_write(ruda__graph_t *g, const ruda__copy_desc_t *desc,
                                    const void *data, uint64_t size) {
  if (size > SIZE_MAX) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda__graph_node_t *node = graph_push(g);
  if (!node) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *node);
  void *copy = ruda__malloc(size ? (size_t)size : 1);
  if (!copy) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  if (size) memcpy(copy, data, (size_t)size);
  node->kind = RUDA__GRAPH_WRITE;
  node->u.write.desc = *desc;
  node->u.write.desc.binding = ruda_binding_clone(&desc->binding);
  node->u.write.data = copy;
  node->u.write.size = size;
  g->num_nodes++;
  g->num_writes++;
  g->num_bindings++;
  return NULL;
}

void ruda__graph_free(ruda__graph_t *g) {
  for (size_t i = 0; i < g->num_nodes; i++) {
    ruda__graph_node_t *n = &g->nodes[i];
    if (n->kind == RUDA__GRAPH_LAUNCH) {
      launch_free(&n->u.launch);
    } else {
      ruda_binding_release(&n->u.write.desc.binding);
      ruda__free(n->u.write.data);
    }
  }
  ruda__free(g->nodes);
  memset(g, 0, sizeof *g);
}

ruda_status_t ruda__server_graph_build(ruda__server_t *s, const ruda__graph_t *g,
                                       ruda_stream_id_t stream, void **out_native) {
  *out_native = NULL;
  if (!s->vt->graph_build) return NULL;
  return s->vt->graph_build(s, g, stream, out_native);
}

/* A replayed write's bytes: the graph's copy, borrowed; releasing them lets
 * go of the hold on the graph taken for this write. */
typedef struct replay_bytes {
  void (*unhold)(void *owner);
  void *owner;
} replay_bytes_t;

static void replay_bytes_release(ruda_bytes_t *b) {
  replay_bytes_t *r = b->owner;
  r->unhold(r->owner);
  ruda__free(r);
}

static void replay_write(ruda__server_t *s, const ruda__graph_t *g, const ruda__graph_write_t *w,
                         ruda_stream_id_t stream) {
  ruda_bytes_t bytes = {.data = w->data, .size = w->size, .property = RUDA_BYTES_NATIVE};
  replay_bytes_t *r = ruda__malloc(sizeof *r);
  if (r && g->hold) {
    g->hold(g->owner);
    *r = (replay_bytes_t){g->unhold, g->owner};
    bytes.release = replay_bytes_release;
    bytes.owner = r;
  } else if (r) {
    ruda__free(r);
    r = NULL;
  }
  if (!r) {
    /* No host memory for the hold: the graph's bytes are copied instead. */
    ruda_status_t st = ruda_bytes_from_copy(w->data, w->size, &bytes);
    if (st) {
      ruda__stream_t *rs = ruda__stream_get(&s->streams, stream);
      if (rs) ruda__stream_push_error(rs, ruda_status_into_server(st));
      else ruda_status_free(st);
      return;
    }
  }
  s->vt->write(s, &w->desc, &bytes, 1, stream);
}

void ruda__server_graph_replay(ruda__server_t *s, const ruda__graph_t *g, void *native,
                               ruda_stream_id_t stream) {
  if (native && s->vt->graph_launch) {
    s->vt->graph_launch(s, g, native, stream);
    return;
  }
  for (size_t i = 0; i < g->num_nodes; i++) {
    const ruda__graph_node_t *n = &g->nodes[i];
    if (n->kind == RUDA__GRAPH_LAUNCH) {
      const ruda__graph_launch_t *l = &n->u.launch;
      s->vt->launch(s, l->kernel, &l->count, &l->args, l->mode, stream);
    } else {
      replay_write(s, g, &n->u.write, stream);
    }
  }
}

void ruda__server_graph_destroy(ruda__server_t *s, void *native) {
  if (native && s->vt->graph_destroy) s->vt->graph_destroy(s, native);
}
