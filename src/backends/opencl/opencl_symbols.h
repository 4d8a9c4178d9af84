/* The OpenCL entry points ruda uses, as an X-macro table.
 *
 * Each row is X(name, required). The loader (opencl_loader.c) fills one
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

#define RUDA__CL_SYMBOLS(X)                   \
  X(clGetPlatformIDs, 1)                      \
  X(clGetPlatformInfo, 1)                     \
  X(clGetDeviceIDs, 1)                        \
  X(clGetDeviceInfo, 1)                       \
  X(clCreateContext, 1)                       \
  X(clReleaseContext, 1)                      \
  X(clCreateCommandQueueWithProperties, 0)    \
  X(clCreateCommandQueue, 0)                  \
  X(clRetainCommandQueue, 1)                  \
  X(clReleaseCommandQueue, 1)                 \
  X(clFlush, 1)                               \
  X(clFinish, 1)                              \
  X(clCreateBuffer, 1)                        \
  X(clCreateSubBuffer, 1)                     \
  X(clReleaseMemObject, 1)                    \
  X(clEnqueueReadBuffer, 1)                   \
  X(clEnqueueWriteBuffer, 1)                  \
  X(clEnqueueReadBufferRect, 1)               \
  X(clEnqueueWriteBufferRect, 1)              \
  X(clEnqueueCopyBuffer, 1)                   \
  X(clEnqueueFillBuffer, 1)                   \
  X(clEnqueueMapBuffer, 1)                    \
  X(clEnqueueUnmapMemObject, 1)               \
  X(clCreateProgramWithSource, 1)             \
  X(clCreateProgramWithBinary, 1)             \
  X(clBuildProgram, 1)                        \
  X(clGetProgramInfo, 1)                      \
  X(clGetProgramBuildInfo, 1)                 \
  X(clReleaseProgram, 1)                      \
  X(clCreateKernel, 1)                        \
  X(clReleaseKernel, 1)                       \
  X(clSetKernelArg, 1)                        \
  X(clGetKernelInfo, 1)                       \
  X(clGetKernelWorkGroupInfo, 1)              \
  X(clEnqueueNDRangeKernel, 1)                \
  X(clEnqueueMarkerWithWaitList, 1)           \
  X(clEnqueueBarrierWithWaitList, 1)          \
  X(clWaitForEvents, 1)                       \
  X(clGetEventInfo, 1)                        \
  X(clGetEventProfilingInfo, 1)               \
  X(clRetainEvent, 1)                         \
  X(clReleaseEvent, 1)                        \
  X(clSetEventCallback, 1)                    \
  X(clCreateUserEvent, 1)                     \
  X(clSetUserEventStatus, 1)

#endif /* RUDA_OPENCL_SYMBOLS_H */
