/* The CPU server's types, shared by its server (cpu_server.c: memory,
 * copies, sync, profiles, collectives, lifetime) and its launches
 * (cpu_launch.c). The design is at the top of cpu_server.c.
 */
#ifndef RUDA_CPU_SERVER_H
#define RUDA_CPU_SERVER_H

#include <stdint.h>

#include "backends/cpu/thread_pool.h"
#include "server/server.h"

/* The CPU part of a stream's state: its memory manager, created on the
 * stream's first use. */
typedef struct cpu_stream {
  ruda__memory_manager_t *mm;
} cpu_stream_t;

typedef struct cpu_server {
  ruda__server_t base;
  ruda__thread_pool_t *pool;
  void **shared;          /* one shared-memory block per participant */
  uint64_t shared_cap;
  uint64_t memory_limit;
  ruda__memory_group_t memory_group; /* every stream's manager (OOM reports) */
} cpu_server_t;

static inline cpu_server_t *cpu(ruda__server_t *s) { return (cpu_server_t *)s; }

static inline cpu_stream_t *ext(ruda__stream_t *rs) { return ruda__stream_ext(rs); }

/* Resolves a binding to a host pointer (*out_size: the bytes held from
 * there on) through the pool of the stream that owns the memory (never
 * creating that stream's state: memory can only be bound in a state that
 * exists). IoError::NotFound when it is not bound here. */
ruda_status_t ruda__cpu_resolve(cpu_server_t *s, const ruda_binding_t *b, uint8_t **out_ptr,
                                uint64_t *out_size);

/* The vtable's launch (cpu_launch.c): runs the kernel on the thread pool
 * and returns when it is done; errors are queued on the stream. */
void ruda__cpu_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                      const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                      ruda_stream_id_t stream);

#endif /* RUDA_CPU_SERVER_H */
