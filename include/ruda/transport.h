/* ruda/transport.h: the door through which the shared MPI transport
 * (libruda_mpi.so) reaches libruda.so's internals. Not for programs: its
 * table's layout is private to one version of ruda, and a program that
 * calls this gets nothing it could use.
 *
 * libruda_mpi drives the core through internal entry points (queueing a
 * collective's part, a host call, a communicator across processes) that
 * libruda.so does not export. The static libruda_mpi.a links them from
 * libruda.a; the shared libruda_mpi.so asks libruda.so for this table once,
 * when it is loaded, so that a program linked with `-lruda_mpi -lruda`
 * runs one copy of ruda.
 */
#ifndef RUDA_TRANSPORT_H
#define RUDA_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* The table of internal entry points for a transport built from the same
 * ruda: `version` must be RUDA_VERSION_NUMBER (ruda/version.h) of this
 * library and `size` the size of the table the caller was built with;
 * otherwise NULL (a libruda_mpi of another version of ruda). Static
 * storage, never freed; thread-safe. */
const void *ruda_transport_table(uint32_t version, size_t size);

RUDA_END_DECLS

#endif /* RUDA_TRANSPORT_H */
