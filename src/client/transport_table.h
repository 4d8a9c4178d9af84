/* The table of internal entry points that the shared MPI transport
 * (libruda_mpi.so, src/mpi/shared/imports.c) calls through, handed out by
 * ruda_transport_table() (ruda/transport.h). One field per internal
 * function libruda_mpi uses; a new use adds a field here, its address in
 * transport_table.c and a forwarder in imports.c. */
#ifndef RUDA_CLIENT_TRANSPORT_TABLE_H
#define RUDA_CLIENT_TRANSPORT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/collective.h"
#include "comm/cpu_collective.h"
#include "memory/memory_handle.h"
#include "server/server.h"

typedef struct ruda__transport_table {
  uint32_t version; /* RUDA_VERSION_NUMBER */
  uint32_t size;    /* sizeof(ruda__transport_table_t) */
  void *(*malloc_)(size_t size);
  void *(*calloc_)(size_t count, size_t size);
  void (*free_)(void *ptr);
  uint64_t (*now_ns)(void);
  uint64_t (*comm_timeout_ns)(void);
  const char *(*coll_kind_name)(ruda__coll_kind_t kind);
  size_t (*elem_types_format)(uint64_t types, char *buf, size_t cap);
  ruda_status_t (*handle_check)(const ruda_handle_t *h, ruda_device_id_t device, const char *who);
  void (*cpu_reduce)(ruda_elem_type_t dtype, ruda_reduce_op_t op, const void *const *src,
                     size_t nsrc, void *const *dst, size_t ndst, size_t count);
  void (*cpu_divide)(ruda_elem_type_t dtype, void *data, size_t count, uint64_t n);
  bool (*cpu_view_extent)(const ruda__copy_desc_t *d, uint64_t *out);
  void (*cpu_gather_view)(const uint8_t *base, const ruda__copy_desc_t *d, uint8_t *out);
  ruda_status_t (*client_comm_caps)(ruda_client_t *c, ruda__comm_caps_t *out);
  ruda_status_t (*client_comm_token)(ruda_client_t *c, void *out, size_t cap, size_t *out_len);
  ruda_status_t (*client_comm_init)(ruda_client_t *c, const ruda__comm_peers_t *peers,
                                    const void *token, size_t token_len);
  ruda_status_t (*client_comm_destroy)(ruda_client_t *c, uint64_t id);
  ruda_status_t (*client_collective_queue)(ruda_client_t *c, const ruda__coll_t *coll);
  ruda_status_t (*client_host_call)(ruda_client_t *c, const ruda_handle_t *src,
                                    const ruda_handle_t *dst, const char *name,
                                    ruda__host_fn fn, void *ctx, void (*ctx_free)(void *ctx));
  ruda_status_t (*client_run_if_idle)(ruda_client_t *c, void (*fn)(void *ctx), void *ctx,
                                      bool *out_ran);
} ruda__transport_table_t;

#endif
