/* Graphs of the CUDA server (cuda_graph.c): a recording (server/graph.h)
 * captured into a CUDA graph and instantiated once, replayed with one
 * cuGraphLaunch. The vtable entries (cuda_server.c) settle faults before
 * calling them. Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_GRAPH_H
#define RUDA_CUDA_GRAPH_H

#include "backends/cuda/cuda_types.h"
#include "server/graph.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* Compiles every kernel of `g`, uploads its info words and the bytes of
 * its writes once, captures its nodes in order on a private stream and
 * instantiates the result into *out (NULL with no error when the driver
 * has no graphs: the recording is then replayed node by node). Errors are
 * returned, naming the node's kernel. */
ruda_status_t ruda__cuda_graph_build(cuda_server_t *s, const ruda__graph_t *g,
                                     ruda_stream_id_t stream, void **out);
/* One cuGraphLaunch on `stream`, ordered after the producers of the
 * graph's bindings; the graph's device buffers stay alive until that work
 * has completed. Errors queued on the stream. */
void ruda__cuda_graph_launch(cuda_server_t *s, const ruda__graph_t *g, void *native,
                             ruda_stream_id_t stream);
/* Drops the server's reference to a built graph (in-flight replays keep
 * theirs). */
void ruda__cuda_graph_destroy(cuda_server_t *s, void *native);
/* After a device reset: every graph's CUDA objects went with the old
 * context; a later replay reports that the graph must be recorded again. */
void ruda__cuda_graphs_forget(cuda_server_t *s);
/* Frees every graph left (destroy; `alive`: the context is usable). */
void ruda__cuda_graphs_free(cuda_server_t *s, bool alive);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_GRAPH_H */
