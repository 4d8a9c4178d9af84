/* Recorded graphs, as the server layer sees them: the launches and writes a
 * stream recorded (ruda_client_graph_begin/end), in order, each owning what
 * it needs to run again (a kernel reference, bindings, info words, the
 * bytes of a write).
 *
 * A backend may turn a recording into a graph of its own (graph_build in
 * the vtable: CUDA instantiates a CUDA graph); otherwise
 * ruda__server_graph_replay runs the recorded list on the worker, each
 * launch through the backend's launch and each write through its
 * write (both validated when they were recorded), exactly as if they had been submitted one by one (the CPU and
 * OpenCL backends). Everything here runs on the device's worker thread,
 * except building the list (ruda__graph_add_*), which the recording client
 * does under its own lock.
 */
#ifndef RUDA_SERVER_GRAPH_H
#define RUDA_SERVER_GRAPH_H

#include <stddef.h>

#include "server/server.h"

typedef enum ruda__graph_node_kind {
  RUDA__GRAPH_LAUNCH = 0,
  RUDA__GRAPH_WRITE = 1,
} ruda__graph_node_kind_t;

typedef struct ruda__graph_launch {
  ruda_kernel_t *kernel; /* a reference */
  ruda__count_t count;   /* static: the recorder refuses dynamic counts */
  ruda_execution_mode_t mode;
  ruda__launch_args_t args; /* arrays owned by the node */
} ruda__graph_launch_t;

typedef struct ruda__graph_write {
  ruda__copy_desc_t desc; /* binding owned by the node */
  void *data;             /* the bytes to write, owned by the node */
  uint64_t size;
} ruda__graph_write_t;

typedef struct ruda__graph_node {
  ruda__graph_node_kind_t kind;
  union {
    ruda__graph_launch_t launch;
    ruda__graph_write_t write;
  } u;
} ruda__graph_node_t;

typedef struct ruda__graph {
  ruda__graph_node_t *nodes;
  size_t num_nodes, cap;
  size_t num_launches, num_writes;
  /* Every binding the nodes use, once per node (launch buffers, tensor-map
   * buffers, write destinations), for backends that order a replay
   * against the bindings' producers as a whole. */
  size_t num_bindings;
  /* Called with `owner` when a replayed write's bytes are no longer needed
   * (the backend's write may finish after the worker returns): the client
   * keeps the graph alive until then. */
  void (*hold)(void *owner);
  void (*unhold)(void *owner);
  void *owner;
} ruda__graph_t;

/* Appends a launch: clones every binding, takes a kernel reference, copies
 * the info words and tensor-map metas. Errors: RUDA_ERR_IO_OUT_OF_MEMORY
 * (nothing appended). */
ruda_status_t ruda__graph_add_launch(ruda__graph_t *g, ruda_kernel_t *kernel,
                                     const ruda__count_t *count, const ruda__launch_args_t *args,
                                     ruda_execution_mode_t mode);
/* Appends a write of `size` bytes of `data` (copied) into desc's view
 * (binding cloned). Errors: RUDA_ERR_IO_OUT_OF_MEMORY (nothing appended). */
ruda_status_t ruda__graph_add_write(ruda__graph_t *g, const ruda__copy_desc_t *desc,
                                    const void *data, uint64_t size);
/* Releases everything the nodes hold and the node array. */
void ruda__graph_free(ruda__graph_t *g);

/* Turns the recording into the backend's own graph (vt->graph_build) and
 * sets *out_native, or leaves it NULL when the backend has none (the list
 * is replayed as it is). Errors of the build (a kernel that does not
 * compile, a limit) are returned, naming the node. Worker thread. */
ruda_status_t ruda__server_graph_build(ruda__server_t *s, const ruda__graph_t *g,
                                       ruda_stream_id_t stream, void **out_native);
/* Runs the graph once on `stream`, after the work queued before it there:
 * the backend's graph (vt->graph_launch) or the recorded list. Errors are
 * queued on the stream like those of any launch. Worker thread. */
void ruda__server_graph_replay(ruda__server_t *s, const ruda__graph_t *g, void *native,
                               ruda_stream_id_t stream);
/* Frees the backend's graph (vt->graph_destroy); NULL is a no-op. */
void ruda__server_graph_destroy(ruda__server_t *s, void *native);

#endif /* RUDA_SERVER_GRAPH_H */
