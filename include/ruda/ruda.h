/* ruda: memory, kernels and collectives on CPUs and GPUs.
 *
 * The umbrella header. Each header below compiles on its own:
 *   status.h  errors (kinds, families, causes) and their rendering
 *   types.h   element types, shapes, ids, properties, dispatch, kernel ids
 *   memory.h  handles, bindings, memory usage
 *   kernel.h  kernels, dispatch counts, launch arguments
 *   client.h  devices, clients, allocation, reads/writes, launches, streams
 *   config.h  ruda.toml and RUDA_* configuration
 *   comm.h    collectives and send/recv across devices
 *   log.h     log channels
 *   profiling.h the profiling summary table and the timeline trace
 *   tune.h    the autotuner: tunable operations, the tune cache, tuned matmul/sum/triad
 *   version.h the version of the headers and of the library
 */
#ifndef RUDA_RUDA_H
#define RUDA_RUDA_H

#include "ruda/client.h"
#include "ruda/comm.h"
#include "ruda/config.h"
#include "ruda/kernel.h"
#include "ruda/log.h"
#include "ruda/memory.h"
#include "ruda/profiling.h"
#include "ruda/status.h"
#include "ruda/tune.h"
#include "ruda/types.h"
#include "ruda/version.h"

#endif
