/* The one door from bench/ into ruda's internals.
 *
 * `ruda bench` measures ruda against a raw baseline in the same process,
 * on the same device: the baseline must call the very vendor library and
 * device ruda loaded (the CUDA driver table, the OpenCL platform and
 * device), and a few cases time one internal piece alone (a fresh module
 * cache's load from disk, the memory manager's pools, the server's parts
 * of a launch, NCCL's all-reduce under ruda's communicator). Those need
 * internal headers; everything else in bench/ uses the public API
 * (include/ruda/) only. A bench file that needs an internal declaration
 * includes this header, never an internal one directly, so what bench/
 * depends on inside src/ is listed here and nowhere else
 * (scripts/check_structure.py keeps it so).
 *
 * The backend parts follow the build: each is there only when its headers
 * were found (RUDA_HAVE_CUDA_HEADERS, RUDA_HAVE_OPENCL_HEADERS). */
#ifndef RUDA_BENCH_INTERNAL_H
#define RUDA_BENCH_INTERNAL_H

/* The JSON string escape of the result lines (harness.c). */
#include "base/json.h"
/* The pools timed alone (bench_memory.c). */
#include "memory/memory_manager.h"
#include "memory/storage.h"
/* The server-side parts of a launch (parts_server.c). */
#include "client/client_internal.h"
#include "server/server.h"

/* The CPU backend's run-time compile and its disk cache, timed alone
 * (bench_compile.c), and the allocator of the payloads it hands out. */
#include "backends/cpu/cpu_compile.h"
#include "base/alloc.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)
/* The driver table, NVRTC, the module cache, NCCL (bench_cuda.c,
 * bench_comm.c). */
#include "backends/cuda/cuda_internal.h"
#include "backends/cuda/cuda_nccl.h"
#endif

#if defined(RUDA_HAVE_OPENCL_HEADERS)
/* The OpenCL table, the devices ruda found, the program cache
 * (bench_opencl.c). */
#include "backends/opencl/opencl_internal.h"
#endif

#endif
