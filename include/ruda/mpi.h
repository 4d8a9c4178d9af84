/* ruda/mpi.h: process groups across processes and machines (the ruda_mpi
 * library). Link with MPI's compiler wrapper:
 *   mpicc prog.c -lruda_mpi -lruda
 *   mpicc prog.c $(pkg-config --cflags --libs ruda_mpi)
 * (libruda_mpi.so uses libruda.so), or in CMake find_package(ruda
 * COMPONENTS MPI) and ruda::ruda_mpi (static: libruda_mpi.a with libruda.a).
 *
 * The world is every process an MPI launcher started (mpirun, mpiexec,
 * srun); a group is the world or a part of it split off by color and key.
 * Each process takes part through one device (ruda_group_device picks it
 * from the local rank unless the user names one), and the operations of
 * ruda/comm.h run across the group's ranks:
 *   CPU buffers     through MPI itself, queued on the device's stream;
 *   GPU buffers     through an NCCL communicator of the group, created on
 *                   the first GPU operation (rank 0 makes the NCCL id, MPI
 *                   broadcasts it);
 *   anything else   (no NCCL) through the host: device pointers go to MPI
 *                   only when MPIX_Query_cuda_support() says MPI is
 *                   CUDA-aware, otherwise each rank copies its buffers to
 *                   the host, runs MPI, and copies back (blocking).
 * The core library (libruda) has no MPI dependency: a program that does
 * not use this header needs neither MPI nor NCCL.
 *
 * Semantics follow MPI: every rank of a group calls the same collectives in
 * the same order with the same sizes, and every send has a matching recv.
 * Operations are non-blocking like a launch: they are queued on the
 * client's stream, run after the work queued before, and report errors on
 * the stream (next flush, sync or read). One exception: an operation on CPU
 * buffers (of at most RUDA_MPI_INLINE_BYTES bytes when that variable is set;
 * 0 turns this off) issued while the device has nothing queued or running runs on
 * the calling thread and returns when MPI has finished it (in the same
 * order, with its errors still on the stream): it then blocks as the MPI
 * call does, until the peers take part. So issue the operations of
 * different groups in one order on every rank, as MPI requires of blocking
 * collectives. Recvs are always queued. Rules for sizes are those of
 * ruda/comm.h, per rank. Only one device of a process may use a group (split
 * the group to give each device of a process its own).
 *
 * Timeouts: a rank that waits for its peers longer than the communication
 * timeout (RUDA_COMM_TIMEOUT seconds, default 300) does not hang: an NCCL
 * operation fails on its stream and aborts the communicator; an MPI call,
 * which cannot be interrupted, prints what it waited for on stderr and
 * aborts the whole job (MPI_Abort with exit code 124). A rank that exits
 * early thus ends its peers with an error within the timeout.
 *
 * Element types reduced through MPI: f64, f32, f16 and bf16 (ruda's own
 * MPI reduction, accumulated in f32), i8, i16, i32, i64, u8, u16, u32, u64;
 * sums wrap in the element type before a mean divides them. Through NCCL:
 * those of ruda/comm.h. Others are refused with RUDA_ERR_INVALID_ARGUMENT
 * naming the type.
 *
 * Thread-safety: ruda_world_init and ruda_world_finalize once each, from
 * the thread that owns MPI. The other functions may be called from any
 * thread, but the collectives of one group must be issued in one order on
 * every rank (MPI's rule); ruda needs MPI_THREAD_MULTIPLE.
 */
#ifndef RUDA_MPI_H
#define RUDA_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/client.h"
#include "ruda/comm.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

RUDA_BEGIN_DECLS

typedef struct ruda_group ruda_group_t;

/* The launcher that started this process, from its environment: "Open MPI"
 * (OMPI_COMM_WORLD_SIZE), "PMIx" (PMIX_RANK), "PMI" (PMI_SIZE: MPICH,
 * Intel MPI), "MVAPICH" (MV2_COMM_WORLD_SIZE), "Slurm" (srun:
 * SLURM_STEP_ID with SLURM_PROCID), "PALS" (PALS_RANKID); NULL when none.
 * Does not initialize MPI. Thread-safe. */
const char *ruda_world_launcher(void);

/* Initializes MPI with MPI_THREAD_MULTIPLE unless the program already did
 * (then it must have asked for that level), and returns the world group
 * (one reference owned by the caller; release it with ruda_group_release).
 * Without a launcher the world is this process alone. Calling it again
 * returns the same world with another reference. argc/argv may be NULL.
 * Errors: RUDA_ERR_UNAVAILABLE (MPI failed to start, or gives less than
 * MPI_THREAD_MULTIPLE), RUDA_ERR_INVALID_ARGUMENT (NULL out, or after
 * ruda_world_finalize). */
ruda_status_t ruda_world_init(int *argc, char ***argv, ruda_group_t **out);

/* Waits for every queued group operation, destroys the groups' NCCL
 * communicators and, when ruda_world_init started MPI, finalizes it.
 * Groups still referenced become unusable (their operations answer
 * RUDA_ERR_UNAVAILABLE). Collective over the world. Called at exit when
 * the program did not. Returns the first error met. */
ruda_status_t ruda_world_finalize(void);

/* This process's rank in the group, the number of ranks, and the rank and
 * count among the group's ranks on this machine. Thread-safe. */
uint32_t ruda_group_rank(const ruda_group_t *g);
uint32_t ruda_group_size(const ruda_group_t *g);
uint32_t ruda_group_local_rank(const ruda_group_t *g);
uint32_t ruda_group_local_size(const ruda_group_t *g);

/* No color: ruda_group_split gives this rank no group. */
#define RUDA_GROUP_NO_COLOR (-1)

/* Splits g (MPI_Comm_split): the ranks with one color form a group,
 * ordered by key, then by their rank in g. Collective over g. A rank whose
 * color is RUDA_GROUP_NO_COLOR gets *out == NULL. Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL, color < -1), RUDA_ERR_UNAVAILABLE (after
 * finalize), MPI's error. */
ruda_status_t ruda_group_split(ruda_group_t *g, int color, int key, ruda_group_t **out);

ruda_group_t *ruda_group_retain(ruda_group_t *g);
/* Drops a reference; the last one waits for the group's queued operations
 * and frees its NCCL communicators and MPI communicators, which is
 * collective over the group: every rank releases its last reference at the
 * same point. NULL is a no-op. */
void ruda_group_release(ruda_group_t *g);

/* Blocks until every rank of the group has called it. */
ruda_status_t ruda_group_barrier(ruda_group_t *g);

/* The device this rank should use. `name` is "cpu", "cuda", "cpu:2"...
 * or NULL for the RUDA_DEVICE environment variable, and when that is unset
 * too "cuda" if CUDA has a device here, else "cpu". A name without an
 * index gets index local_rank % (devices of that type). Errors:
 * RUDA_ERR_INVALID_ARGUMENT (a malformed name), RUDA_ERR_UNAVAILABLE (no
 * device of that type). Thread-safe. */
ruda_status_t ruda_group_device(const ruda_group_t *g, const char *name, ruda_device_id_t *out);

/* The operations of ruda/comm.h across the group: `c` is this rank's
 * device, the buffers live on it. See ruda/comm.h for the meaning and the
 * size rules (per rank: all-gather's dst holds size x src, reduce-scatter's
 * src holds size x dst). Non-blocking except on the host path and for
 * small operations on an idle CPU device (see the top of this file). Errors at once: RUDA_ERR_INVALID_ARGUMENT (NULL or empty
 * arguments, sizes that break the rules on this rank, a type the transport
 * cannot reduce, an unknown op, a root or peer outside the group, a call
 * from a device worker), RUDA_ERR_UNAVAILABLE (finalized, or the device was
 * shut down), RUDA_ERR_IO_OUT_OF_MEMORY, and the transport's error when the
 * group's NCCL communicator cannot be created. */
ruda_status_t ruda_group_all_reduce(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                    const ruda_handle_t *dst, ruda_elem_type_t dtype,
                                    ruda_reduce_op_t op);
ruda_status_t ruda_group_broadcast(ruda_group_t *g, ruda_client_t *c, uint32_t root,
                                   const ruda_handle_t *buf);
ruda_status_t ruda_group_all_gather(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                    const ruda_handle_t *dst);
ruda_status_t ruda_group_reduce_scatter(ruda_group_t *g, ruda_client_t *c,
                                        const ruda_handle_t *src, const ruda_handle_t *dst,
                                        ruda_elem_type_t dtype, ruda_reduce_op_t op);

/* Point to point: rank `peer` of the group receives what this rank sends.
 * ruda_group_send sends the whole view of src as bytes;
 * ruda_group_send_view sends the view that `shape` and `strides` describe
 * (in elements of `dtype`, from the start of src's view, as
 * ruda_client_send_recv takes them; both NULL: the whole view as bytes),
 * packed row-major on this rank into shape-product x element-size bytes.
 * The receiver reserves the destination on its own stream: *out (owned by
 * the caller, usable at once) holds `bytes`, contiguous. A message of
 * another size is an error on the receiver's stream naming both sizes.
 * Sends block the device's stream until the receiver takes the message
 * (for large messages): order sends and receives so that each has its
 * match, as with MPI_Send/MPI_Recv. Errors of send_view at once, besides
 * those above: RUDA_ERR_INVALID_ARGUMENT (only one of shape and strides,
 * ranks that differ or exceed RUDA_MAX_RANK, an unknown dtype, a view that
 * spans more than src or overflows), RUDA_ERR_IO_UNSUPPORTED_STRIDES (a
 * strided view of a GPU buffer that goes through NCCL). */
ruda_status_t ruda_group_send(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                              uint32_t peer);
ruda_status_t ruda_group_send_view(ruda_group_t *g, ruda_client_t *c, const ruda_handle_t *src,
                                   const ruda_shape_t *shape, const ruda_strides_t *strides,
                                   ruda_elem_type_t dtype, uint32_t peer);
ruda_status_t ruda_group_recv(ruda_group_t *g, ruda_client_t *c, uint64_t bytes, uint32_t peer,
                              ruda_handle_t *out);

RUDA_END_DECLS

#endif /* RUDA_MPI_H */
