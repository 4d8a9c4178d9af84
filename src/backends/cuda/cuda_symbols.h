/* The CUDA driver and NVRTC entry points ruda uses, as X-macro tables.
 *
 * Each row is X(T, name, required), T the table's struct type (passed
 * through; base/dynlib.h's RUDA__DYNLIB_FIELD declares the row's field of
 * the table, RUDA__DYNLIB_SYMBOL its entry of the symbol table). The
 * loader (cuda_loader.c) fills one
 * function pointer per row with dlsym(); `name` goes through cuda.h's
 * version macros first, so cuMemAlloc is looked up as "cuMemAlloc_v2" and
 * the pointer gets the prototype cuda.h declares for it. A missing required
 * symbol makes the whole library unavailable; a missing optional one leaves
 * its pointer NULL and the feature that needs it reports "unsupported".
 *
 * Adding an entry point: append a row here; nothing else changes.
 */
#ifndef RUDA_CUDA_SYMBOLS_H
#define RUDA_CUDA_SYMBOLS_H

#define RUDA__CU_SYMBOLS(X, T)              \
  X(T, cuInit, 1)                           \
  X(T, cuDriverGetVersion, 1)               \
  X(T, cuGetErrorName, 1)                   \
  X(T, cuGetErrorString, 1)                 \
  X(T, cuDeviceGetCount, 1)                 \
  X(T, cuDeviceGet, 1)                      \
  X(T, cuDeviceGetName, 1)                  \
  X(T, cuDeviceGetAttribute, 1)             \
  X(T, cuDeviceTotalMem, 1)                 \
  X(T, cuDevicePrimaryCtxRetain, 1)         \
  X(T, cuDevicePrimaryCtxRelease, 1)        \
  X(T, cuDevicePrimaryCtxReset, 1)          \
  X(T, cuCtxSetCurrent, 1)                  \
  X(T, cuCtxGetCurrent, 1)                  \
  X(T, cuCtxSynchronize, 1)                 \
  X(T, cuCtxGetStreamPriorityRange, 1)      \
  X(T, cuStreamCreateWithPriority, 1)       \
  X(T, cuStreamDestroy, 1)                  \
  X(T, cuStreamSynchronize, 1)              \
  X(T, cuStreamQuery, 1)                    \
  X(T, cuStreamWaitEvent, 1)                \
  X(T, cuEventCreate, 1)                    \
  X(T, cuEventDestroy, 1)                   \
  X(T, cuEventRecord, 1)                    \
  X(T, cuEventQuery, 1)                     \
  X(T, cuEventSynchronize, 1)               \
  X(T, cuEventElapsedTime, 1)               \
  X(T, cuMemAlloc, 1)                       \
  X(T, cuMemFree, 1)                        \
  X(T, cuMemAllocAsync, 0)                  \
  X(T, cuMemFreeAsync, 0)                   \
  X(T, cuMemAllocHost, 1)                   \
  X(T, cuMemFreeHost, 1)                    \
  X(T, cuMemGetInfo, 1)                     \
  X(T, cuMemcpyHtoD, 1)                     \
  X(T, cuMemcpyDtoH, 1)                     \
  X(T, cuMemcpyHtoDAsync, 1)                \
  X(T, cuMemcpyDtoHAsync, 1)                \
  X(T, cuMemcpyDtoDAsync, 1)                \
  X(T, cuMemcpy2DAsync, 1)                  \
  X(T, cuMemsetD8Async, 1)                  \
  X(T, cuPointerGetAttribute, 1)            \
  X(T, cuModuleLoadData, 1)                 \
  X(T, cuModuleUnload, 1)                   \
  X(T, cuModuleGetFunction, 1)              \
  X(T, cuFuncSetAttribute, 1)               \
  X(T, cuFuncGetAttribute, 1)               \
  X(T, cuLaunchKernel, 1)                   \
  X(T, cuLaunchKernelEx, 0)                 \
  X(T, cuTensorMapEncodeTiled, 0)           \
  X(T, cuTensorMapEncodeIm2col, 0)          \
  X(T, cuTensorMapEncodeIm2colWide, 0)      \
  X(T, cuStreamBeginCapture, 0)             \
  X(T, cuStreamEndCapture, 0)               \
  X(T, cuGraphInstantiate, 0)               \
  X(T, cuGraphLaunch, 0)                    \
  X(T, cuGraphExecDestroy, 0)               \
  X(T, cuGraphDestroy, 0)

#define RUDA__NVRTC_SYMBOLS(X, T)           \
  X(T, nvrtcVersion, 1)                     \
  X(T, nvrtcGetErrorString, 1)              \
  X(T, nvrtcCreateProgram, 1)               \
  X(T, nvrtcDestroyProgram, 1)              \
  X(T, nvrtcCompileProgram, 1)              \
  X(T, nvrtcGetProgramLogSize, 1)           \
  X(T, nvrtcGetProgramLog, 1)               \
  X(T, nvrtcGetPTXSize, 1)                  \
  X(T, nvrtcGetPTX, 1)                      \
  X(T, nvrtcGetCUBINSize, 0)                \
  X(T, nvrtcGetCUBIN, 0)

/* NCCL (libnccl.so.2), loaded on the first collective (cuda_nccl.c). */
#define RUDA__NCCL_SYMBOLS(X, T)            \
  X(T, ncclGetVersion, 1)                   \
  X(T, ncclGetErrorString, 1)               \
  X(T, ncclGetLastError, 0)                 \
  X(T, ncclGetUniqueId, 1)                  \
  X(T, ncclCommInitRank, 1)                 \
  X(T, ncclCommInitRankConfig, 1)           \
  X(T, ncclCommInitAll, 1)                  \
  X(T, ncclCommFinalize, 1)                 \
  X(T, ncclCommDestroy, 1)                  \
  X(T, ncclCommAbort, 1)                    \
  X(T, ncclCommGetAsyncError, 1)            \
  X(T, ncclGroupStart, 1)                   \
  X(T, ncclGroupEnd, 1)                     \
  X(T, ncclAllReduce, 1)                    \
  X(T, ncclBroadcast, 1)                    \
  X(T, ncclAllGather, 1)                    \
  X(T, ncclReduceScatter, 1)                \
  X(T, ncclSend, 1)                         \
  X(T, ncclRecv, 1)

#endif /* RUDA_CUDA_SYMBOLS_H */
