/* `ruda kernels check` on OpenCL: builds a program with the ICD loader
 * (libOpenCL.so.1, loaded with dlopen, so the command runs without it) on
 * one device of the installed platforms, PoCL in CI. The handful of types
 * and constants used are the OpenCL ABI's, declared here so no OpenCL header
 * is needed at build time. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef struct cl_opaque *cl_platform_id, *cl_device_id, *cl_context, *cl_program;

enum {
  CL_SUCCESS = 0,
  CL_DEVICE_NOT_FOUND = -1,
  CL_BUILD_PROGRAM_FAILURE = -11,
  CL_PLATFORM_NAME = 0x0902,
  CL_DEVICE_NAME = 0x102B,
  CL_DEVICE_VERSION = 0x102F,
  CL_PROGRAM_BUILD_LOG = 0x1183,
};
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFull

typedef struct cl_api {
  void *lib;
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_ulong, cl_uint, cl_device_id *, cl_uint *);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *,
                              cl_int *);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                        cl_int *);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_int (*ReleaseProgram)(cl_program);
  cl_int (*ReleaseContext)(cl_context);
} cl_api_t;

struct ruda_tools_opencl {
  cl_api_t api;
  cl_context ctx;
  cl_device_id dev;
  char name[800];
};

static bool load(cl_api_t *a, char *why, size_t cap) {
  const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
  for (size_t i = 0; i < 2 && !a->lib; i++) a->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!a->lib) {
    snprintf(why, cap, "the OpenCL ICD loader (libOpenCL.so.1) is not installed");
    return false;
  }
#define SYM(field, name)                                                    \
  do {                                                                      \
    *(void **)&a->field = dlsym(a->lib, name);                              \
    if (!a->field) {                                                        \
      snprintf(why, cap, "libOpenCL.so.1 has no %s", name);                 \
      return false;                                                         \
    }                                                                       \
  } while (0)
  SYM(GetPlatformIDs, "clGetPlatformIDs");
  SYM(GetPlatformInfo, "clGetPlatformInfo");
  SYM(GetDeviceIDs, "clGetDeviceIDs");
  SYM(GetDeviceInfo, "clGetDeviceInfo");
  SYM(CreateContext, "clCreateContext");
  SYM(CreateProgramWithSource, "clCreateProgramWithSource");
  SYM(BuildProgram, "clBuildProgram");
  SYM(GetProgramBuildInfo, "clGetProgramBuildInfo");
  SYM(ReleaseProgram, "clReleaseProgram");
  SYM(ReleaseContext, "clReleaseContext");
#undef SYM
  return true;
}

ruda_tools_opencl_t *ruda_tools_opencl_open(unsigned index, char *why, size_t cap) {
  ruda_tools_opencl_t *o = calloc(1, sizeof *o);
  if (!o) {
    snprintf(why, cap, "out of memory");
    return NULL;
  }
  if (!load(&o->api, why, cap)) goto fail;
  cl_platform_id plats[16];
  cl_uint np = 0;
  cl_int e = o->api.GetPlatformIDs(16, plats, &np);
  if (e != CL_SUCCESS || np == 0) {
    snprintf(why, cap, "no OpenCL platform (clGetPlatformIDs returned %d; install pocl-opencl-icd)",
             (int)e);
    goto fail;
  }
  unsigned seen = 0;
  for (cl_uint p = 0; p < np && !o->dev; p++) {
    cl_device_id devs[16];
    cl_uint nd = 0;
    if (o->api.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
    if (index < seen + nd) {
      o->dev = devs[index - seen];
      char pn[256] = "", dn[256] = "", ver[256] = "";
      o->api.GetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
      o->api.GetDeviceInfo(o->dev, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
      o->api.GetDeviceInfo(o->dev, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL);
      snprintf(o->name, sizeof o->name, "opencl:%u %s (%s, %s)", index, dn, pn, ver);
    }
    seen += nd;
  }
  if (!o->dev) {
    snprintf(why, cap, "no OpenCL device %u (%u found)", index, seen);
    goto fail;
  }
  o->ctx = o->api.CreateContext(NULL, 1, &o->dev, NULL, NULL, &e);
  if (!o->ctx) {
    snprintf(why, cap, "clCreateContext failed with %d", (int)e);
    goto fail;
  }
  return o;
fail:
  if (o->api.lib) dlclose(o->api.lib);
  free(o);
  return NULL;
}

const char *ruda_tools_opencl_name(const ruda_tools_opencl_t *o) { return o->name; }

bool ruda_tools_opencl_build(ruda_tools_opencl_t *o, const char *source, size_t len,
                             char **out_log) {
  *out_log = NULL;
  cl_int e = CL_SUCCESS;
  cl_program prog = o->api.CreateProgramWithSource(o->ctx, 1, &source, &len, &e);
  if (!prog) {
    char buf[96];
    snprintf(buf, sizeof buf, "clCreateProgramWithSource failed with %d", (int)e);
    *out_log = strdup(buf);
    return false;
  }
  e = o->api.BuildProgram(prog, 1, &o->dev, "", NULL, NULL);
  size_t n = 0;
  if (o->api.GetProgramBuildInfo(prog, o->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
      n > 0) {
    char *log = malloc(n + 1);
    if (log && o->api.GetProgramBuildInfo(prog, o->dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) ==
                   CL_SUCCESS) {
      log[n] = '\0';
      *out_log = log;
    } else {
      free(log);
    }
  }
  if (e != CL_SUCCESS && !*out_log) {
    char buf[96];
    snprintf(buf, sizeof buf, "clBuildProgram failed with %d%s", (int)e,
             e == CL_BUILD_PROGRAM_FAILURE ? " (CL_BUILD_PROGRAM_FAILURE)" : "");
    *out_log = strdup(buf);
  }
  o->api.ReleaseProgram(prog);
  return e == CL_SUCCESS;
}

void ruda_tools_opencl_close(ruda_tools_opencl_t *o) {
  if (!o) return;
  if (o->ctx) o->api.ReleaseContext(o->ctx);
  /* The ICD loader stays loaded: some drivers do not survive dlclose. */
  free(o);
}
