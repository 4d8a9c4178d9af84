/* `ruda devices [--json]`: every backend and its devices. The device types
 * are the library's (ruda_device_types): its backends in their order, then
 * the built-in types whose backend it was built without. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/memory.h"
#include "ruda_tools.h"
#include "tools_common.h"

/* Most device types listed. */
#define MAX_TYPES 16

void ruda_cmd_devices_help(FILE *f) {
  uint16_t types[MAX_TYPES];
  size_t n = ruda_device_types(types, MAX_TYPES);
  if (n > MAX_TYPES) n = MAX_TYPES;
  char names[256] = "";
  size_t used = 0;
  for (size_t i = 0; i < n && used < sizeof names; i++) {
    int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                     ruda_device_type_name(types[i]));
    if (w > 0) used += (size_t)w;
  }
  fprintf(f,
          "usage: ruda devices [--json]\n"
          "\n"
          "Lists every backend built into this library (%s) and its devices.\n"
          "By default one line per device with the main properties; --json prints\n"
          "every property as one JSON object. A backend that cannot run here (no\n"
          "driver, no GPU) is listed with the reason.\n"
          "\n"
          "exit codes: 0 ok, 2 usage error.\n",
          names);
}

static const struct {
  uint64_t bit;
  const char *name;
} feature_names[] = {
    {RUDA_FEATURE_F16, "f16"},
    {RUDA_FEATURE_BF16, "bf16"},
    {RUDA_FEATURE_F64, "f64"},
    {RUDA_FEATURE_ATOMIC_F32_ADD, "atomic_f32_add"},
    {RUDA_FEATURE_ATOMIC_F64_ADD, "atomic_f64_add"},
    {RUDA_FEATURE_ATOMIC_F16, "atomic_f16"},
    {RUDA_FEATURE_BARRIER, "barrier"},
    {RUDA_FEATURE_PIPELINE, "pipeline"},
    {RUDA_FEATURE_PLANE_SYNC, "plane_sync"},
    {RUDA_FEATURE_GRID_CONSTANTS, "grid_constants"},
    {RUDA_FEATURE_LDMATRIX, "ldmatrix"},
    {RUDA_FEATURE_COPY_ASYNC, "copy_async"},
    {RUDA_FEATURE_FP8, "fp8"},
    {RUDA_FEATURE_TMA, "tma"},
    {RUDA_FEATURE_TENSOR_MAP, "tensor_map"},
    {RUDA_FEATURE_CLUSTERS, "clusters"},
    {RUDA_FEATURE_ELECT_SYNC, "elect_sync"},
    {RUDA_FEATURE_STMATRIX, "stmatrix"},
    {RUDA_FEATURE_TMA_IM2COL_WIDE, "tma_im2col_wide"},
    {RUDA_FEATURE_FP4_FP6, "fp4_fp6"},
    {RUDA_FEATURE_DYNAMIC_COUNT, "dynamic_count"},
    {RUDA_FEATURE_SHARED_MEMORY, "shared_memory"},
    {RUDA_FEATURE_ATOMIC_I64, "atomic_i64"},
};

static void json_string(const char *s) { ruda_tools_json_string(stdout, s); }

static void json_u32x3(const char *key, const uint32_t v[3]) {
  printf(",\"%s\":[%" PRIu32 ",%" PRIu32 ",%" PRIu32 "]", key, v[0], v[1], v[2]);
}

static void print_device_json(ruda_device_id_t id, const ruda_device_properties_t *p,
                              const char *info) {
  const ruda_hardware_properties_t *h = &p->hardware;
  printf("{\"id\":\"%s:%u\",\"name\":", ruda_device_type_name(id.type_id), (unsigned)id.index_id);
  json_string(p->name);
  printf(",\"info\":");
  json_string(info);
  printf(",\"properties_checksum\":\"%016" PRIx64 "\"", ruda_device_properties_checksum(p));
  printf(",\"features\":[");
  bool first = true;
  for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; ++i) {
    if (!(p->features & feature_names[i].bit)) continue;
    printf("%s\"%s\"", first ? "" : ",", feature_names[i].name);
    first = false;
  }
  printf("],\"timing_method\":\"%s\"", p->timing_method == RUDA_TIMING_DEVICE ? "device" : "system");
  printf(",\"memory\":{\"max_page_size\":%" PRIu64 ",\"alignment\":%" PRIu64 "}",
         p->memory.max_page_size, p->memory.alignment);
  printf(",\"hardware\":{\"load_width\":%" PRIu32, h->load_width);
  printf(",\"plane_size_min\":%" PRIu32 ",\"plane_size_max\":%" PRIu32, h->plane_size_min,
         h->plane_size_max);
  printf(",\"max_bindings\":%" PRIu32, h->max_bindings);
  printf(",\"max_shared_memory_size\":%" PRIu64, h->max_shared_memory_size);
  json_u32x3("max_ruda_count", h->max_ruda_count);
  printf(",\"max_units_per_ruda\":%" PRIu32, h->max_units_per_ruda);
  json_u32x3("max_ruda_dim", h->max_ruda_dim);
  printf(",\"num_streaming_multiprocessors\":%" PRIu32, h->num_streaming_multiprocessors);
  printf(",\"num_cpu_cores\":%" PRIu32, h->num_cpu_cores);
  printf(",\"num_tensor_cores\":%" PRIu32, h->num_tensor_cores);
  printf(",\"min_tensor_cores_dim\":%" PRIu32, h->min_tensor_cores_dim);
  printf(",\"max_vector_size\":%" PRIu32, h->max_vector_size);
  printf(",\"total_memory\":%" PRIu64, h->total_memory);
  printf(",\"cache_l1\":%" PRIu64 ",\"cache_l2\":%" PRIu64 ",\"cache_l3\":%" PRIu64, h->cache_l1,
         h->cache_l2, h->cache_l3);
  printf(",\"compute_capability\":%" PRIu32 ",\"warp_size\":%" PRIu32 "}}", h->compute_capability,
         h->warp_size);
}

/* Sizes in binary units (ruda_bytes_format), as everywhere in ruda's output. */
static void print_size(const char *label, uint64_t bytes, const char *suffix) {
  char text[32];
  ruda_bytes_format(bytes, text, sizeof text);
  printf("%s%s%s", label, text, suffix);
}

static void print_device_line(ruda_device_id_t id, const ruda_device_properties_t *p) {
  const ruda_hardware_properties_t *h = &p->hardware;
  printf("  %s:%u  %s\n", ruda_device_type_name(id.type_id), (unsigned)id.index_id, p->name);
  printf("        ");
  if (h->num_cpu_cores) printf("%" PRIu32 " cores, ", h->num_cpu_cores);
  if (h->num_streaming_multiprocessors)
    printf("%" PRIu32 " SMs, sm_%" PRIu32 ", ", h->num_streaming_multiprocessors,
           h->compute_capability);
  if (h->total_memory)
    print_size("", h->total_memory, " memory, ");
  else
    printf("? memory, ");
  printf("%" PRIu32 "-bit loads, ", h->load_width);
  print_size("shared ", h->max_shared_memory_size, "/ruda, ");
  printf("%" PRIu32 " units/ruda", h->max_units_per_ruda);
  if (h->cache_l1) print_size(", L1d ", h->cache_l1, "");
  if (h->cache_l2) print_size(", L2 ", h->cache_l2, "");
  if (h->cache_l3) print_size(", L3 ", h->cache_l3, "");
  printf("\n");
}

int ruda_cmd_devices(int argc, char **argv) {
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    if (ruda_tools_is_help(argv[i])) {
      ruda_cmd_devices_help(stdout);
      return RUDA_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      fprintf(stderr, "ruda devices: unknown option '%s'\n", argv[i]);
      ruda_cmd_devices_help(stderr);
      return RUDA_EXIT_USAGE;
    }
  }
  uint16_t types[MAX_TYPES];
  size_t ntypes = ruda_device_types(types, MAX_TYPES);
  if (ntypes > MAX_TYPES) ntypes = MAX_TYPES;
  if (json) printf("{\"backends\":[");
  for (size_t t = 0; t < ntypes; ++t) {
    uint16_t type = types[t];
    const char *tname = ruda_device_type_name(type);
    uint32_t n = 0;
    ruda_status_t st = ruda_device_count(type, &n);
    if (json) {
      printf("%s{\"type\":\"%s\",\"available\":%s", t ? "," : "", tname, st ? "false" : "true");
    }
    if (st) {
      char *text = ruda_status_to_string(st);
      const char *reason = ruda_status_reason(st);
      if (json) {
        printf(",\"reason\":");
        json_string(reason && *reason ? reason : (text ? text : "unavailable"));
        printf(",\"devices\":[]}");
      } else {
        printf("%s: unavailable: %s\n", tname,
               reason && *reason ? reason : (text ? text : "unavailable"));
      }
      free(text);
      ruda_status_free(st);
      continue;
    }
    if (json) {
      printf(",\"devices\":[");
    } else {
      printf("%s: %" PRIu32 " device%s\n", tname, n, n == 1 ? "" : "s");
    }
    for (uint32_t i = 0; i < n; ++i) {
      ruda_device_id_t id = {type, (uint16_t)i};
      ruda_client_t *c = NULL;
      st = ruda_client_create(id, &c);
      if (st) {
        char *text = ruda_status_to_string(st);
        if (json) {
          printf("%s{\"id\":\"%s:%" PRIu32 "\",\"error\":", i ? "," : "", tname, i);
          json_string(text ? text : "error");
          printf("}");
        } else {
          printf("  %s:%" PRIu32 "  unusable: %s\n", tname, i, text ? text : "error");
        }
        free(text);
        ruda_status_free(st);
        continue;
      }
      const ruda_device_properties_t *p = ruda_client_properties(c);
      if (json) {
        if (i) printf(",");
        print_device_json(id, p, ruda_client_info(c));
      } else {
        print_device_line(id, p);
      }
      ruda_client_release(c);
    }
    if (json) printf("]}");
  }
  if (json) printf("]}\n");
  return RUDA_EXIT_OK;
}
