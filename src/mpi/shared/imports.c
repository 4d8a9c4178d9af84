/* The internal functions of libruda that the MPI transport calls, for the
 * shared libruda_mpi.so only: each forwards through the table libruda.so
 * hands out (ruda_transport_table, src/client/transport_table.h), so that
 * the transport and the program share libruda.so's one copy of ruda. The
 * static libruda_mpi.a does without this file and links them from
 * libruda.a. Hidden: nothing here is exported. */
#include <stdio.h>
#include <stdlib.h>

#include "client/transport_table.h"
#include "base/alloc.h"
#include "ruda/transport.h"
#include "ruda/version.h"

static const ruda__transport_table_t *table;

/* Asked for when the library is loaded: libruda.so, which it needs, is
 * loaded and initialised first. */
__attribute__((constructor)) static void imports_init(void) {
  table = ruda_transport_table(RUDA_VERSION_NUMBER, sizeof(ruda__transport_table_t));
}

/* A libruda.so of another version than this libruda_mpi.so: nothing of the
 * transport can work, and no call can report it, so say so and stop. */
static const ruda__transport_table_t *t(void) {
  if (!table) {
    fprintf(stderr,
            "ruda: libruda_mpi.so %s cannot work with the libruda.so %s it was loaded with"
            " (install both from one build of ruda)\n",
            RUDA_VERSION_STRING, ruda_version_string());
    abort();
  }
  return table;
}

void *ruda__malloc(size_t size) { return t()->malloc_(size); }
void *ruda__calloc(size_t count, size_t size) { return t()->calloc_(count, size); }
void ruda__free(void *ptr) { t()->free_(ptr); }
uint64_t ruda__now_ns(void) { return t()->now_ns(); }
uint64_t ruda__comm_timeout_ns(void) { return t()->comm_timeout_ns(); }
const char *ruda__coll_kind_name(ruda__coll_kind_t kind) { return t()->coll_kind_name(kind); }
size_t ruda__elem_types_format(uint64_t types, char *buf, size_t cap) {
  return t()->elem_types_format(types, buf, cap);
}
ruda_status_t ruda__handle_check(const ruda_handle_t *h, ruda_device_id_t device,
                                 const char *who) {
  return t()->handle_check(h, device, who);
}
void ruda__cpu_reduce(ruda_elem_type_t dtype, ruda_reduce_op_t op, const void *const *src,
                      size_t nsrc, void *const *dst, size_t ndst, size_t count) {
  t()->cpu_reduce(dtype, op, src, nsrc, dst, ndst, count);
}
void ruda__cpu_divide(ruda_elem_type_t dtype, void *data, size_t count, uint64_t n) {
  t()->cpu_divide(dtype, data, count, n);
}
bool ruda__cpu_view_extent(const ruda__copy_desc_t *d, uint64_t *out) {
  return t()->cpu_view_extent(d, out);
}
void ruda__cpu_gather_view(const uint8_t *base, const ruda__copy_desc_t *d, uint8_t *out) {
  t()->cpu_gather_view(base, d, out);
}
ruda_status_t ruda__client_comm_caps(ruda_client_t *c, ruda__comm_caps_t *out) {
  return t()->client_comm_caps(c, out);
}
ruda_status_t ruda__client_comm_token(ruda_client_t *c, void *out, size_t cap, size_t *out_len) {
  return t()->client_comm_token(c, out, cap, out_len);
}
ruda_status_t ruda__client_comm_init(ruda_client_t *c, const ruda__comm_peers_t *peers,
                                     const void *token, size_t token_len) {
  return t()->client_comm_init(c, peers, token, token_len);
}
ruda_status_t ruda__client_comm_destroy(ruda_client_t *c, uint64_t id) {
  return t()->client_comm_destroy(c, id);
}
ruda_status_t ruda__client_collective_queue(ruda_client_t *c, const ruda__coll_t *coll) {
  return t()->client_collective_queue(c, coll);
}
ruda_status_t ruda__client_host_call(ruda_client_t *c, const ruda_handle_t *src,
                                     const ruda_handle_t *dst, const char *name,
                                     ruda__host_fn fn, void *ctx, void (*ctx_free)(void *ctx)) {
  return t()->client_host_call(c, src, dst, name, fn, ctx, ctx_free);
}
ruda_status_t ruda__client_run_if_idle(ruda_client_t *c, void (*fn)(void *ctx), void *ctx,
                                       bool *out_ran) {
  return t()->client_run_if_idle(c, fn, ctx, out_ran);
}
