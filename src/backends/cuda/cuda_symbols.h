/* The CUDA driver and NVRTC entry points ruda uses, as X-macro tables.
 *
 * Each row is X(name, required). The loader (cuda_loader.c) fills one
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

#define RUDA__CU_SYMBOLS(X)                 \
  X(cuInit, 1)                              \
  X(cuDriverGetVersion, 1)                  \
  X(cuGetErrorName, 1)                      \
  X(cuGetErrorString, 1)                    \
  X(cuDeviceGetCount, 1)                    \
  X(cuDeviceGet, 1)                         \
  X(cuDeviceGetName, 1)                     \
  X(cuDeviceGetAttribute, 1)                \
  X(cuDeviceTotalMem, 1)                    \
  X(cuDevicePrimaryCtxRetain, 1)            \
  X(cuDevicePrimaryCtxRelease, 1)           \
  X(cuDevicePrimaryCtxReset, 1)             \
  X(cuCtxSetCurrent, 1)                     \
  X(cuCtxGetCurrent, 1)                     \
  X(cuCtxSynchronize, 1)                    \
  X(cuCtxGetStreamPriorityRange, 1)         \
  X(cuStreamCreateWithPriority, 1)          \
  X(cuStreamDestroy, 1)                     \
  X(cuStreamSynchronize, 1)                 \
  X(cuStreamQuery, 1)                       \
  X(cuStreamWaitEvent, 1)                   \
  X(cuEventCreate, 1)                       \
  X(cuEventDestroy, 1)                      \
  X(cuEventRecord, 1)                       \
  X(cuEventQuery, 1)                        \
  X(cuEventSynchronize, 1)                  \
  X(cuEventElapsedTime, 1)                  \
  X(cuMemAlloc, 1)                          \
  X(cuMemFree, 1)                           \
  X(cuMemAllocAsync, 0)                     \
  X(cuMemFreeAsync, 0)                      \
  X(cuMemAllocHost, 1)                      \
  X(cuMemFreeHost, 1)                       \
  X(cuMemGetInfo, 1)                        \
  X(cuMemcpyHtoD, 1)                        \
  X(cuMemcpyDtoH, 1)                        \
  X(cuMemcpyHtoDAsync, 1)                   \
  X(cuMemcpyDtoHAsync, 1)                   \
  X(cuMemcpyDtoDAsync, 1)                   \
  X(cuMemcpy2DAsync, 1)                     \
  X(cuMemsetD8Async, 1)                     \
  X(cuPointerGetAttribute, 1)               \
  X(cuModuleLoadData, 1)                    \
  X(cuModuleUnload, 1)                      \
  X(cuModuleGetFunction, 1)                 \
  X(cuFuncSetAttribute, 1)                  \
  X(cuFuncGetAttribute, 1)                  \
  X(cuLaunchKernel, 1)                      \
  X(cuLaunchKernelEx, 0)                    \
  X(cuTensorMapEncodeTiled, 0)              \
  X(cuTensorMapEncodeIm2col, 0)             \
  X(cuTensorMapEncodeIm2colWide, 0)         \
  X(cuStreamBeginCapture, 0)                \
  X(cuStreamEndCapture, 0)                  \
  X(cuGraphInstantiate, 0)                  \
  X(cuGraphLaunch, 0)                       \
  X(cuGraphExecDestroy, 0)                  \
  X(cuGraphDestroy, 0)

#define RUDA__NVRTC_SYMBOLS(X)              \
  X(nvrtcVersion, 1)                        \
  X(nvrtcGetErrorString, 1)                 \
  X(nvrtcCreateProgram, 1)                  \
  X(nvrtcDestroyProgram, 1)                 \
  X(nvrtcCompileProgram, 1)                 \
  X(nvrtcGetProgramLogSize, 1)              \
  X(nvrtcGetProgramLog, 1)                  \
  X(nvrtcGetPTXSize, 1)                     \
  X(nvrtcGetPTX, 1)                         \
  X(nvrtcGetCUBINSize, 0)                   \
  X(nvrtcGetCUBIN, 0)

/* NCCL (libnccl.so.2), loaded on the first collective (cuda_nccl.c). */
#define RUDA__NCCL_SYMBOLS(X)               \
  X(ncclGetVersion, 1)                      \
  X(ncclGetErrorString, 1)                  \
  X(ncclGetLastError, 0)                    \
  X(ncclGetUniqueId, 1)                     \
  X(ncclCommInitRank, 1)                    \
  X(ncclCommInitRankConfig, 1)              \
  X(ncclCommInitAll, 1)                     \
  X(ncclCommFinalize, 1)                    \
  X(ncclCommDestroy, 1)                     \
  X(ncclCommAbort, 1)                       \
  X(ncclCommGetAsyncError, 1)               \
  X(ncclGroupStart, 1)                      \
  X(ncclGroupEnd, 1)                        \
  X(ncclAllReduce, 1)                       \
  X(ncclBroadcast, 1)                       \
  X(ncclAllGather, 1)                       \
  X(ncclReduceScatter, 1)                   \
  X(ncclSend, 1)                            \
  X(ncclRecv, 1)

#endif /* RUDA_CUDA_SYMBOLS_H */
