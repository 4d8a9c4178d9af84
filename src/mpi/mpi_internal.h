/* Internal interface of the ruda_mpi library (src/mpi/): process groups
 * (mpi_group.c), their operations (mpi_ops.c), the watchdog that bounds
 * every MPI call (mpi_watchdog.c) and the translation of MPI error codes
 * (mpi_errors.c, the only file that reads them). Built only when CMake finds
 * MPI; the core library never includes this. */
#ifndef RUDA_MPI_INTERNAL_H
#define RUDA_MPI_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/collective.h"
#include "ruda/mpi.h"

/* Devices of this process that used a group (one is the rule; a few are
 * tolerated, each on its own NCCL communicator). */
#define RUDA__GROUP_MAX_CLIENTS 8
/* Views whose host address a group remembers (mpi_ops.c). */
#define RUDA__GROUP_ADDRS 8

/* The host address of a view, found once through ruda_client_get_resource.
 * A handle names one descriptor of one generation, bound once and never
 * moved, so while the caller's handle is live (ruda__handle_check) the
 * address stays right; a released handle's successor has another id. */
typedef struct ruda__group_addr {
  ruda_handle_t view; /* id 0: unused */
  uint64_t address, size;
} ruda__group_addr_t;

struct ruda_group {
  atomic_uint refs;
  MPI_Comm comm; /* the operations' communicator (used on device workers) */
  MPI_Comm ctl;  /* set-up and barriers (used on callers' threads) */
  uint32_t rank, size, local_rank, local_size;
  uint64_t id; /* the same on every rank; names its NCCL communicators */
  pthread_mutex_t lock;
  ruda_client_t *clients[RUDA__GROUP_MAX_CLIENTS]; /* retained */
  bool nccl[RUDA__GROUP_MAX_CLIENTS];              /* its NCCL communicator exists */
  bool no_nccl[RUDA__GROUP_MAX_CLIENTS]; /* rank 0 found no NCCL: the host path */
  ruda__comm_caps_t caps[RUDA__GROUP_MAX_CLIENTS]; /* what each device offers */
  size_t nclients;
  ruda__group_addr_t addrs[RUDA__GROUP_ADDRS]; /* under lock */
  unsigned addr_next;                          /* the next one replaced */
  bool dead; /* after ruda_world_finalize */
  struct ruda_group *next, *prev; /* the registry of live groups */
};

/* ---- mpi_group.c ---- */

/* RUDA_ERR_UNAVAILABLE when the world is finalized or g is dead; NULL when
 * g may run operations. */
ruda_status_t ruda__group_check(const ruda_group_t *g, const char *fn);
/* Records that client c uses g (retained until the group goes); *out_index
 * is its slot, *out_caps what its device offers (asked once per slot).
 * Errors: RUDA_ERR_INVALID_ARGUMENT (too many devices), those of
 * ruda__client_comm_caps. */
ruda_status_t ruda__group_use(ruda_group_t *g, ruda_client_t *c, size_t *out_index,
                              ruda__comm_caps_t *out_caps);
/* The MPI reductions of f16 and bf16 (MPI_OP_NULL until the world
 * exists). */
MPI_Op ruda__mpi_half_op(ruda_elem_type_t t, ruda_reduce_op_t op);

/* ---- mpi_watchdog.c ---- */

/* Marks the calling thread as inside an MPI call: `what` (a string that
 * outlives the call), `count` elements of `type` (may be NULL), in a group
 * of `size` ranks, until ruda__mpi_watch_end. When the call lasts longer
 * than the communication timeout, the watchdog prints the description and
 * aborts the job (MPI_Abort, exit code 124). Cheap: a few stores, no
 * clock read (the watchdog times the call from when it first sees it, to
 * within one of its periods); the text is made only when it fires. A
 * thread's slot is freed when the thread exits. */
void ruda__mpi_watch_begin(const char *what, const char *type, uint64_t count, uint32_t size);
void ruda__mpi_watch_end(void);
/* Starts and stops the watchdog thread (world init and finalize). */
ruda_status_t ruda__mpi_watchdog_start(uint32_t world_rank, uint32_t world_size);
void ruda__mpi_watchdog_stop(void);

/* ---- mpi_errors.c ---- */

/* An error of `kind` for the MPI return code `code` of `call`, with MPI's
 * error class, its name and MPI's text; `fmt` (printf, may be NULL) says
 * what was being done. */
ruda_status_t ruda__mpi_error(ruda_error_kind_t kind, int code, const char *call,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- mpi_ops.c ---- */

/* The MPI datatype of an element type (MPI_DATATYPE_NULL when none). */
MPI_Datatype ruda__mpi_type(ruda_elem_type_t t);
/* Element types reduced through MPI (bits 1 << t). */
#define RUDA__REDUCE_TYPES_MPI                                                            \
  ((1ull << RUDA_ELEM_F64) | (1ull << RUDA_ELEM_F32) | (1ull << RUDA_ELEM_F16) |           \
   (1ull << RUDA_ELEM_BF16) | (1ull << RUDA_ELEM_I8) | (1ull << RUDA_ELEM_I16) |           \
   (1ull << RUDA_ELEM_I32) | (1ull << RUDA_ELEM_I64) | (1ull << RUDA_ELEM_U8) |            \
   (1ull << RUDA_ELEM_U16) | (1ull << RUDA_ELEM_U32) | (1ull << RUDA_ELEM_U64))

/* Puts `err` on the client's stream (taken) for its next flush, sync or
 * read, as a queued job's error would be; when that cannot be queued
 * (shut down, out of memory) returns it instead. */
ruda_status_t ruda__mpi_queue_error(ruda_client_t *c, ruda_status_t err);
/* How many jobs ran on their caller's thread (the device idle, the
 * buffers small) since the process started; for tests. */
uint64_t ruda__mpi_inline_runs(void);

#endif
