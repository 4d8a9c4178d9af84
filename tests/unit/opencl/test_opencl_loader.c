/* The OpenCL backend's standalone parts: loading from an absent library,
 * cl_int translation, device enumeration and properties, and building
 * OpenCL C (the build log in the error, program binaries). Tests that need
 * an OpenCL device skip without one (CI has PoCL). */
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/alloc.h"
#include "ruda/client.h"
#include "ruda/status.h"
#include "test.h"
#include "test_client.h"

TEST(absent_loader_is_unavailable_and_named) {
  ruda__opencl_loader_test_override("/nonexistent/libruda-absent-OpenCL.so.1");
  uint32_t n = 99;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_OPENCL, &n);
  ruda_status_t p = ruda__opencl_probe();
  ruda__opencl_loader_test_override(NULL);
  ASSERT_UEQ(n, 0);
  ASSERT_NOT_NULL(p);
  ASSERT_EQ(ruda_status_kind(p), RUDA_ERR_UNAVAILABLE);
  ruda_status_free(p);
  test_expect_library_absent(s, "OpenCL", "/nonexistent/libruda-absent-OpenCL.so.1", "ICD loader");
  /* A client on an absent backend fails the same way, and nothing else. */
  ruda__opencl_loader_test_override("libruda-absent-OpenCL.so.1");
  ruda_client_t *c = NULL;
  ruda_device_id_t id = {RUDA_DEVICE_TYPE_OPENCL, 7};
  ASSERT_ERR_KIND(ruda_client_create(id, &c), RUDA_ERR_UNAVAILABLE);
  ruda__opencl_loader_test_override(NULL);
}

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#include "opencl_test_util.h"

TEST(error_names_and_kinds) {
  ASSERT_STR_EQ(ruda__cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  ASSERT_STR_EQ(ruda__cl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  ASSERT_STR_EQ(ruda__cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  ASSERT_STR_EQ(ruda__cl_error_name(-12345), "CL_UNKNOWN_ERROR");

  ruda_status_t s = ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, CL_INVALID_WORK_GROUP_SIZE,
                                   "clEnqueueNDRangeKernel", "kernel %s", "k1");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "clEnqueueNDRangeKernel");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "CL_INVALID_WORK_GROUP_SIZE");
  ASSERT_EQ(ruda_status_vendor_code(s), -54);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "kernel k1");
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "CL_INVALID_WORK_GROUP_SIZE (-54)");
  ruda_status_free(s);

  s = ruda__cl_alloc_error(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer", 1000);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "CL_MEM_OBJECT_ALLOCATION_FAILURE");
  ruda_status_free(s);
  s = ruda__cl_alloc_error(CL_INVALID_BUFFER_SIZE, "clCreateBuffer", 1000);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_BUFFER_TOO_BIG);
  ruda_status_free(s);
  s = ruda__cl_alloc_error(CL_INVALID_CONTEXT, "clCreateBuffer", 1000);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_UNKNOWN);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "allocating 1000 bytes");
  ruda_status_free(s);
}

TEST(devices_have_sane_properties_in_a_stable_order) {
  const ruda__opencl_api_t *api = NULL;
  const ruda__opencl_device_t *d = ocl_first_device(&api);
  const ruda_device_properties_t *p = &d->props;
  ASSERT_TRUE(p->name[0] != '\0');
  ASSERT_UGE(p->memory.alignment, d->base_align);
  ASSERT_UEQ(p->memory.alignment & (p->memory.alignment - 1), 0);
  ASSERT_UEQ(p->memory.max_page_size % p->memory.alignment, 0);
  ASSERT_UGT(p->hardware.max_units_per_ruda, 0);
  ASSERT_UGT(p->hardware.max_ruda_dim[0], 0);
  ASSERT_UGT(p->hardware.max_shared_memory_size, 0);
  ASSERT_UGE(p->hardware.total_memory, d->max_alloc);
  ASSERT_UGT(p->hardware.max_bindings, 0);
  ASSERT_TRUE(ruda_device_properties_has(p, RUDA_FEATURE_SHARED_MEMORY));
  ASSERT_EQ(ruda_device_properties_has(p, RUDA_FEATURE_F64), d->fp64);
  ASSERT_STR_CONTAINS(d->c_version, "OpenCL C");
  ASSERT_UGE(d->c_major, 1);
  ASSERT_STR_CONTAINS(d->info, d->platform_name);
  /* Enumerating again (as a new process would) gives the same list. */
  size_t n1 = 0, n2 = 0;
  const ruda__opencl_device_t *a = NULL, *b = NULL;
  ASSERT_OK(ruda__opencl_devices(&a, &n1));
  char name0[128];
  memcpy(name0, a[0].props.name, sizeof name0);
  uint64_t sum0 = ruda_device_properties_checksum(&a[0].props);
  ruda__opencl_loader_test_override(NULL);
  ASSERT_OK(ruda__opencl_devices(&b, &n2));
  ASSERT_UEQ(n1, n2);
  ASSERT_STR_EQ(b[0].props.name, name0);
  ASSERT_UEQ(ruda_device_properties_checksum(&b[0].props), sum0);
  uint32_t count = 0;
  ASSERT_OK(ruda_device_count(RUDA_DEVICE_TYPE_OPENCL, &count));
  ASSERT_UEQ(count, n2);
}

static cl_context make_context(const ruda__opencl_api_t *api, const ruda__opencl_device_t *d) {
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  cl_int r = CL_SUCCESS;
  cl_context ctx = api->clCreateContext(props, 1, &d->device, NULL, NULL, &r);
  ASSERT_EQ(r, CL_SUCCESS);
  return ctx;
}

TEST(build_error_carries_the_log_and_the_source) {
  const ruda__opencl_api_t *api = NULL;
  const ruda__opencl_device_t *d = ocl_first_device(&api);
  cl_context ctx = make_context(api, d);
  const char *src =
      "__kernel void broken(__global float *a, __global const ulong *info) {\n"
      "  a[0] = undeclared_name_xyz;\n"
      "}\n";
  cl_program prog = NULL;
  ruda_status_t s = ruda__opencl_build_source(api, ctx, d->device, "broken", src, 0, NULL, NULL, false,
                                              &prog);
  ASSERT_NULL(prog);
  ruda_status_t ce = ocl_vendor_cause(s, RUDA_ERR_COMPILATION_GENERIC, "clBuildProgram",
                                      "CL_BUILD_PROGRAM_FAILURE");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_COMPILATION);
  const char *r = ruda_status_reason(ce);
  ASSERT_STR_CONTAINS(r, "kernel broken");
  ASSERT_STR_CONTAINS(r, "[Compilation Error]");
  ASSERT_STR_CONTAINS(r, "undeclared_name_xyz"); /* the log names it... */
  ASSERT_STR_CONTAINS(r, "[Source]");
  ASSERT_STR_CONTAINS(r, "a[0] = undeclared_name_xyz;"); /* ...and the source is there */
  ruda_status_free(s);
  api->clReleaseContext(ctx);
}

TEST(built_program_gives_its_binary_and_the_binary_builds) {
  const ruda__opencl_api_t *api = NULL;
  const ruda__opencl_device_t *d = ocl_first_device(&api);
  cl_context ctx = make_context(api, d);
  const char *src = "__kernel void twice(__global uint *a, __global const ulong *info) {\n"
                    "  a[get_global_id(0)] *= 2u;\n"
                    "}\n";
  cl_program prog = NULL;
  ASSERT_OK(ruda__opencl_build_source(api, ctx, d->device, "twice", src, 0, "-cl-mad-enable",
                                      NULL, false, &prog));
  void *bin = NULL;
  size_t size = 0;
  ASSERT_OK(ruda__opencl_program_binary(api, prog, &bin, &size));
  ASSERT_UGT(size, 0);
  const unsigned char *bins[1] = {bin};
  cl_int status = 0, r = 0;
  cl_program p2 = api->clCreateProgramWithBinary(ctx, 1, &d->device, &size, bins, &status, &r);
  ASSERT_EQ(r, CL_SUCCESS);
  ASSERT_EQ(api->clBuildProgram(p2, 1, &d->device, "", NULL, NULL), CL_SUCCESS);
  cl_kernel k = api->clCreateKernel(p2, "twice", &r);
  ASSERT_EQ(r, CL_SUCCESS);
  api->clReleaseKernel(k);
  api->clReleaseProgram(p2);
  api->clReleaseProgram(prog);
  ruda__free(bin);
  api->clReleaseContext(ctx);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
