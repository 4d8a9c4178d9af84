/* ruda_transport_table(): the internal entry points the shared MPI
 * transport calls (transport_table.h, ruda/transport.h). */
#include "client/transport_table.h"

#include "base/alloc.h"
#include "ruda/transport.h"
#include "ruda/version.h"

static const ruda__transport_table_t table = {
    .version = RUDA_VERSION_NUMBER,
    .size = (uint32_t)sizeof(ruda__transport_table_t),
    .malloc_ = ruda__malloc,
    .calloc_ = ruda__calloc,
    .free_ = ruda__free,
    .now_ns = ruda__now_ns,
    .comm_timeout_ns = ruda__comm_timeout_ns,
    .coll_kind_name = ruda__coll_kind_name,
    .elem_types_format = ruda__elem_types_format,
    .handle_check = ruda__handle_check,
    .cpu_reduce = ruda__cpu_reduce,
    .cpu_divide = ruda__cpu_divide,
    .cpu_view_extent = ruda__cpu_view_extent,
    .cpu_gather_view = ruda__cpu_gather_view,
    .client_comm_caps = ruda__client_comm_caps,
    .client_comm_token = ruda__client_comm_token,
    .client_comm_init = ruda__client_comm_init,
    .client_comm_destroy = ruda__client_comm_destroy,
    .client_collective_queue = ruda__client_collective_queue,
    .client_host_call = ruda__client_host_call,
    .client_run_if_idle = ruda__client_run_if_idle,
};

const void *ruda_transport_table(uint32_t version, size_t size) {
  if (version != RUDA_VERSION_NUMBER || size != sizeof table) return NULL;
  return &table;
}
