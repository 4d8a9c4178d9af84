/* The OpenCL entry points ruda uses, as an X-macro table.
 *
 * Each row is X(T, name, required), T the table's struct type (passed
 * through; base/dynlib.h's RUDA__DYNLIB_FIELD declares the row's field of
 * the table, RUDA__DYNLIB_SYMBOL its entry of the symbol table). The
 * loader (opencl_loader.c) fills one
 * function pointer per row with dlsym() on the ICD loader (libOpenCL.so.1),
 * typed with the prototype CL/cl.h declares. A missing required symbol makes
 * OpenCL unavailable; a missing optional one leaves its pointer NULL and the
 * code that needs it takes its fallback (clCreateCommandQueueWithProperties,
 * from OpenCL 2.0, falls back to clCreateCommandQueue).
 *
 * Adding an entry point: append a row here; nothing else changes.
 */
#ifndef RUDA_OPENCL_SYMBOLS_H
#define RUDA_OPENCL_SYMBOLS_H

#define RUDA__CL_SYMBOLS(X, T)                \
  X(T, clGetPlatformIDs, 1)                   \
  X(T, clGetPlatformInfo, 1)                  \
  X(T, clGetDeviceIDs, 1)                     \
  X(T, clGetDeviceInfo, 1)                    \
  X(T, clCreateContext, 1)                    \
  X(T, clReleaseContext, 1)                   \
  X(T, clCreateCommandQueueWithProperties, 0) \
  X(T, clCreateCommandQueue, 0)               \
  X(T, clRetainCommandQueue, 1)               \
  X(T, clReleaseCommandQueue, 1)              \
  X(T, clFlush, 1)                            \
  X(T, clFinish, 1)                           \
  X(T, clCreateBuffer, 1)                     \
  X(T, clCreateSubBuffer, 1)                  \
  X(T, clReleaseMemObject, 1)                 \
  X(T, clEnqueueReadBuffer, 1)                \
  X(T, clEnqueueWriteBuffer, 1)               \
  X(T, clEnqueueReadBufferRect, 1)            \
  X(T, clEnqueueWriteBufferRect, 1)           \
  X(T, clEnqueueCopyBuffer, 1)                \
  X(T, clEnqueueFillBuffer, 1)                \
  X(T, clEnqueueMapBuffer, 1)                 \
  X(T, clEnqueueUnmapMemObject, 1)            \
  X(T, clCreateProgramWithSource, 1)          \
  X(T, clCreateProgramWithBinary, 1)          \
  X(T, clBuildProgram, 1)                     \
  X(T, clGetProgramInfo, 1)                   \
  X(T, clGetProgramBuildInfo, 1)              \
  X(T, clReleaseProgram, 1)                   \
  X(T, clCreateKernel, 1)                     \
  X(T, clReleaseKernel, 1)                    \
  X(T, clSetKernelArg, 1)                     \
  X(T, clGetKernelInfo, 1)                    \
  X(T, clGetKernelWorkGroupInfo, 1)           \
  X(T, clEnqueueNDRangeKernel, 1)             \
  X(T, clEnqueueMarkerWithWaitList, 1)        \
  X(T, clEnqueueBarrierWithWaitList, 1)       \
  X(T, clWaitForEvents, 1)                    \
  X(T, clGetEventInfo, 1)                     \
  X(T, clGetEventProfilingInfo, 1)            \
  X(T, clRetainEvent, 1)                      \
  X(T, clReleaseEvent, 1)                     \
  X(T, clSetEventCallback, 1)                 \
  X(T, clCreateUserEvent, 1)                  \
  X(T, clSetUserEventStatus, 1)

#endif /* RUDA_OPENCL_SYMBOLS_H */
