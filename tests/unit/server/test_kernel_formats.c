/* Kernel code by format and the backend registry: validation at
 * ruda_kernel_create, what a server finds with ruda__kernel_code_pick, the
 * hashes, and how device names resolve against the built-in backends. */
#include <stdlib.h>

#include "ruda/ruda.h"
#include "server/kernel_object.h"
#include "server/server.h"
#include "test.h"
#include "types/device_names.h"

static void noop(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }
static void other(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }

static ruda_kernel_desc_t desc_with(const ruda_kernel_code_t *code, size_t n) {
  ruda_kernel_desc_t d = {.name = "k", .ruda_dim = {4, 1, 1}, .code = code, .num_code = n};
  return d;
}

TEST(create_rejects_bad_code_entries) {
  ruda_kernel_t *k = NULL;
  ruda_kernel_desc_t d = desc_with(NULL, 0);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t unknown = {(ruda_kernel_format_t)99, "x", 0, NULL, NULL, NULL, 0, NULL};
  d = desc_with(&unknown, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t twice[2] = {ruda_kernel_code_cpu(noop), ruda_kernel_code_cpu(other)};
  d = desc_with(twice, 2);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t cpu_without_fn = ruda_kernel_code_cpu(NULL);
  d = desc_with(&cpu_without_fn, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t text_without_data = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, NULL);
  d = desc_with(&text_without_data, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t cubin_without_size = {RUDA_KERNEL_FORMAT_CUBIN, "\x7f" "ELF", 0, NULL, NULL, NULL, 0, NULL};
  d = desc_with(&cubin_without_size, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t options_without_array = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, "k");
  options_without_array.num_options = 2;
  d = desc_with(&options_without_array, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);

  ruda_kernel_code_t portable_empty = {RUDA_KERNEL_FORMAT_PORTABLE, NULL, 0, NULL, NULL, NULL, 0, NULL};
  d = desc_with(&portable_empty, 1);
  ASSERT_ERR_KIND(ruda_kernel_create(&d, &k), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(k);
}

TEST(entries_are_copied_and_picked_in_order) {
  char text[] = "__kernel void k(void) {}";
  const char *opts[] = {"-cl-fast-relaxed-math"};
  ruda_kernel_code_t code[3] = {
      ruda_kernel_code_cpu(noop),
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, text),
      {RUDA_KERNEL_FORMAT_CUBIN, "\x7f" "ELF\0\1", 6, NULL, "entry_k", NULL, 0, "k.cubin"},
  };
  code[1].options = opts;
  code[1].num_options = 1;
  ruda_kernel_desc_t d = desc_with(code, 3);
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  text[0] = 'X'; /* the kernel holds its own copy */
  opts[0] = "changed";

  const ruda_kernel_code_t *cl = ruda__kernel_code(k, RUDA_KERNEL_FORMAT_OPENCL_C);
  ASSERT_NOT_NULL(cl);
  ASSERT_STR_EQ((const char *)cl->data, "__kernel void k(void) {}");
  ASSERT_UEQ(cl->size, strlen("__kernel void k(void) {}"));
  ASSERT_STR_EQ(cl->entry, "k"); /* defaults to the kernel's name */
  ASSERT_UEQ(cl->num_options, 1);
  ASSERT_STR_EQ(cl->options[0], "-cl-fast-relaxed-math");

  const ruda_kernel_code_t *bin = ruda__kernel_code(k, RUDA_KERNEL_FORMAT_CUBIN);
  ASSERT_NOT_NULL(bin);
  ASSERT_UEQ(bin->size, 6);
  ASSERT_MEM_EQ(bin->data, "\x7f" "ELF\0\1", 6);
  ASSERT_STR_EQ(bin->entry, "entry_k");
  ASSERT_STR_EQ(bin->origin, "k.cubin");

  ASSERT_NULL(ruda__kernel_code(k, RUDA_KERNEL_FORMAT_PTX));
  ruda_kernel_format_t pref[] = {RUDA_KERNEL_FORMAT_PTX, RUDA_KERNEL_FORMAT_CUBIN,
                                 RUDA_KERNEL_FORMAT_CPU};
  ASSERT_PTR_EQ(ruda__kernel_code_pick(k, pref, 3), bin);
  ASSERT_PTR_EQ(ruda__kernel_code_pick(k, pref, 1), NULL);
  ASSERT_TRUE(ruda__kernel_code(k, RUDA_KERNEL_FORMAT_CPU)->cpu_fn == noop);
  ruda_kernel_release(k);
}

TEST(code_hash_ignores_other_entries_kernel_hash_does_not) {
  const char *src = "extern \"C\" __global__ void k() {}";
  ruda_kernel_code_t one[1] = {ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, src)};
  ruda_kernel_code_t two[2] = {ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, src),
                               ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, "__kernel void k() {}")};
  ruda_kernel_code_t cpu_a[2] = {ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, src),
                                 ruda_kernel_code_cpu(noop)};
  ruda_kernel_code_t cpu_b[2] = {ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, src),
                                 ruda_kernel_code_cpu(other)};
  ruda_kernel_t *k1 = NULL, *k2 = NULL, *ka = NULL, *kb = NULL;
  ruda_kernel_desc_t d = desc_with(one, 1);
  ASSERT_OK(ruda_kernel_create(&d, &k1));
  d = desc_with(two, 2);
  ASSERT_OK(ruda_kernel_create(&d, &k2));
  d = desc_with(cpu_a, 2);
  ASSERT_OK(ruda_kernel_create(&d, &ka));
  d = desc_with(cpu_b, 2);
  ASSERT_OK(ruda_kernel_create(&d, &kb));

  ruda_hash128_t c1 = ruda__kernel_code_hash(k1, ruda__kernel_code(k1, RUDA_KERNEL_FORMAT_CUDA_C));
  ruda_hash128_t c2 = ruda__kernel_code_hash(k2, ruda__kernel_code(k2, RUDA_KERNEL_FORMAT_CUDA_C));
  ASSERT_UEQ(c1.lo, c2.lo);
  ASSERT_UEQ(c1.hi, c2.hi);
  ASSERT_TRUE(ruda_kernel_hash(k1).lo != ruda_kernel_hash(k2).lo);
  /* CPU function addresses never reach a hash. */
  ASSERT_UEQ(ruda_kernel_hash(ka).lo, ruda_kernel_hash(kb).lo);
  ASSERT_UEQ(ruda_kernel_hash(ka).hi, ruda_kernel_hash(kb).hi);
  ruda_kernel_release(k1);
  ruda_kernel_release(k2);
  ruda_kernel_release(ka);
  ruda_kernel_release(kb);
}

TEST(registry_lists_cpu_first_and_resolves_names) {
  ASSERT_NOT_NULL(ruda__backend_list[0]);
  ASSERT_STR_EQ(ruda__backend_list[0]->name, "cpu");
  size_t n = 0;
  while (ruda__backend_list[n]) {
    const ruda__backend_t *b = ruda__backend_list[n];
    ASSERT_PTR_EQ(ruda__backend_for(b->type_id), b);
    ASSERT_PTR_EQ(ruda__backend_named(b->name, strlen(b->name)), b);
    ASSERT_UEQ(ruda__backend_index(b), n);
    ASSERT_STR_EQ(ruda_device_type_name(b->type_id), b->name);
    n++;
  }
  ASSERT_ULE(n, RUDA__MAX_BACKENDS);
  ASSERT_NULL(ruda__backend_named("cp", 2));
  ASSERT_NULL(ruda__backend_for(4242));
}

/* The names of devices come from the registry, wherever they are printed:
 * the server layer installed its lookup before main, so the types layer's
 * formatter (used by the memory layer too) and the parser agree with every
 * registered backend's own name. */
TEST(device_ids_format_and_parse_with_the_registry_names) {
  ASSERT_TRUE(ruda__device_type_names_installed() == ruda_device_type_name);
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    const ruda__backend_t *b = ruda__backend_list[i];
    char want[64], buf[64];
    snprintf(want, sizeof want, "%s:5", b->name);
    ASSERT_UEQ(ruda_device_id_format((ruda_device_id_t){b->type_id, 5}, buf, sizeof buf),
               strlen(want));
    ASSERT_STR_EQ(buf, want);
    ruda_device_id_t id;
    ASSERT_OK(ruda_device_parse(buf, &id));
    ASSERT_UEQ(id.type_id, b->type_id);
    ASSERT_UEQ(id.index_id, 5);
  }
  /* A malformed name lists the registered names. */
  ruda_device_id_t id;
  ruda_status_t s = ruda_device_parse("xpu:0", &id);
  ASSERT_NOT_NULL(s);
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    char want[64];
    snprintf(want, sizeof want, "%s:N", ruda__backend_list[i]->name);
    ASSERT_STR_CONTAINS(ruda_status_reason(s), want);
  }
  ruda_status_free(s);
}

TEST(device_names_parse_for_every_known_type) {
  ruda_device_id_t id;
  ASSERT_OK(ruda_device_parse("cpu", &id));
  ASSERT_UEQ(id.type_id, RUDA_DEVICE_TYPE_CPU);
  ASSERT_UEQ(id.index_id, 0);
  ASSERT_OK(ruda_device_parse("cuda:3", &id));
  ASSERT_UEQ(id.type_id, RUDA_DEVICE_TYPE_CUDA);
  ASSERT_UEQ(id.index_id, 3);
  ASSERT_OK(ruda_device_parse("opencl:1", &id));
  ASSERT_UEQ(id.type_id, RUDA_DEVICE_TYPE_OPENCL);
  ASSERT_UEQ(id.index_id, 1);
  ASSERT_STR_EQ(ruda_device_type_name(RUDA_DEVICE_TYPE_OPENCL), "opencl");
  ASSERT_ERR_KIND(ruda_device_parse("gpu:0", &id), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_device_parse("cpu:", &id), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_device_parse("cpu:1x", &id), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_device_parse("cpu:70000", &id), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_device_parse(":0", &id), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(ruda_device_type_name(999));
}

/* An unknown type is InvalidArgument to create and counts no device
 * (include/ruda/client.h says why the two differ). A type whose backend the
 * build leaves out is Unavailable, saying it is not built in: checked here
 * for whatever this build leaves out (nothing in the default build), and
 * always by unit_backend_left_out (tests/unit/server/backend_left_out.c),
 * which links every layer with a backend list of the CPU backend only. */
TEST(a_type_without_its_backend_is_unavailable_an_unknown_one_invalid) {
  ruda_client_t *c = NULL;
  ruda_device_id_t unknown = {999, 0};
  ASSERT_ERR_KIND(ruda_client_create(unknown, &c), RUDA_ERR_INVALID_ARGUMENT);
  uint32_t count = 7;
  ASSERT_ERR_KIND(ruda_device_count(999, &count), RUDA_ERR_UNAVAILABLE);
  ASSERT_UEQ(count, 0);
  static const uint16_t gpu_types[] = {RUDA_DEVICE_TYPE_CUDA, RUDA_DEVICE_TYPE_OPENCL};
  for (size_t i = 0; i < sizeof gpu_types / sizeof gpu_types[0]; i++) {
    if (ruda__backend_for(gpu_types[i])) continue; /* built in */
    ruda_device_id_t id = {gpu_types[i], 0};
    ASSERT_ERR_TEXT(ruda_client_create(id, &c), RUDA_ERR_UNAVAILABLE,
                    "backend is not built into this ruda library");
    ASSERT_ERR_KIND(ruda_device_count(gpu_types[i], &count), RUDA_ERR_UNAVAILABLE);
    ASSERT_UEQ(count, 0);
  }
}
