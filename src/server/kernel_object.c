/* Kernel objects: an immutable copy of a ruda_kernel_desc_t (its code
 * entries included) plus its stable id hash, shared by reference count. */
#include <string.h>

#include "base/alloc.h"
#include "server/kernel_object.h"
#include "types/hasher.h"

#define KERNEL_CODE_SEED UINT64_C(0x72756461636f6465) /* "rudacode" */

const char *ruda__kernel_format_name(ruda_kernel_format_t format) {
  switch (format) {
    case RUDA_KERNEL_FORMAT_CPU: return "CPU";
    case RUDA_KERNEL_FORMAT_CUDA_C: return "CUDA C";
    case RUDA_KERNEL_FORMAT_PTX: return "PTX";
    case RUDA_KERNEL_FORMAT_CUBIN: return "CUBIN";
    case RUDA_KERNEL_FORMAT_OPENCL_C: return "OpenCL C";
    case RUDA_KERNEL_FORMAT_PORTABLE: return "portable";
  }
  return "unknown";
}

static bool format_known(ruda_kernel_format_t f) {
  return f >= RUDA_KERNEL_FORMAT_CPU && f <= RUDA_KERNEL_FORMAT_PORTABLE;
}

static bool format_is_binary(ruda_kernel_format_t f) { return f == RUDA_KERNEL_FORMAT_CUBIN; }

/* A copy of `len` bytes with a terminator after them. */
static char *dup_bytes(const void *src, size_t len) {
  char *d = ruda__malloc(len + 1);
  if (!d) return NULL;
  if (len) memcpy(d, src, len);
  d[len] = 0;
  return d;
}

static void code_free(ruda_kernel_code_t *c) {
  ruda__free((void *)c->data);
  ruda__free((void *)c->entry);
  ruda__free((void *)c->origin);
  if (c->options) {
    for (size_t i = 0; i < c->num_options; i++) ruda__free((void *)c->options[i]);
    ruda__free((void *)c->options);
  }
}

static void kernel_free(ruda_kernel_t *k) {
  ruda__free((void *)k->desc.name);
  ruda__free((void *)k->desc.id_info);
  if (k->code) {
    for (size_t i = 0; i < k->desc.num_code; i++) code_free(&k->code[i]);
    ruda__free(k->code);
  }
  ruda__free(k->code_hash);
  ruda__free(k);
}

/* Checks one entry of the caller's description; NULL when it is usable. */
static ruda_status_t check_code(const ruda_kernel_desc_t *d, size_t i) {
  const ruda_kernel_code_t *c = &d->code[i];
  if (!format_known(c->format))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': code entry %zu has unknown format %d",
                              d->name, i, (int)c->format);
  for (size_t j = 0; j < i; j++) {
    if (d->code[j].format == c->format)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': %s code given twice (entries %zu and %zu)",
                                d->name, ruda__kernel_format_name(c->format), j, i);
  }
  if (c->format == RUDA_KERNEL_FORMAT_CPU && !c->cpu_fn)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': the CPU entry has no cpu_fn", d->name);
  if (c->format == RUDA_KERNEL_FORMAT_PORTABLE && !c->data && !c->cpu_fn)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s': the portable entry has neither text nor cpu_fn", d->name);
  if (c->format != RUDA_KERNEL_FORMAT_CPU && c->format != RUDA_KERNEL_FORMAT_PORTABLE && !c->data)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': the %s entry has no data", d->name,
                              ruda__kernel_format_name(c->format));
  if (format_is_binary(c->format) && c->size == 0)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': a %s entry needs its size", d->name,
                              ruda__kernel_format_name(c->format));
  if (c->num_options && !c->options)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "kernel '%s': num_options without options (%s entry)",
                              d->name, ruda__kernel_format_name(c->format));
  return NULL;
}

/* Copies one entry into `dst` (zeroed by the caller); false when memory ran
 * out (what was copied is freed with the kernel). */
static bool copy_code(ruda_kernel_code_t *dst, const ruda_kernel_code_t *src, const char *name) {
  dst->format = src->format;
  dst->cpu_fn = src->cpu_fn;
  if (src->data) {
    size_t len = src->size ? src->size : strlen(src->data);
    dst->data = dup_bytes(src->data, len);
    if (!dst->data) return false;
    dst->size = len;
  }
  dst->entry = ruda__strdup(src->entry ? src->entry : name);
  if (!dst->entry) return false;
  if (src->origin && !(dst->origin = ruda__strdup(src->origin))) return false;
  if (src->num_options) {
    char **opts = ruda__calloc(src->num_options, sizeof *opts);
    if (!opts) return false;
    dst->options = (const char *const *)opts;
    for (size_t i = 0; i < src->num_options; i++) {
      opts[i] = ruda__strdup(src->options[i] ? src->options[i] : "");
      dst->num_options = i + 1; /* what kernel_free must release */
      if (!opts[i]) return false;
    }
  }
  return true;
}

/* Everything of the description that changes compiled code, except the
 * code entries. */
static void hash_header(ruda__hasher_t *h, const ruda_kernel_desc_t *d) {
  ruda_kernel_id_t id = {
      .name = d->name,
      .address_type = d->address_type,
      .ruda_dim = d->ruda_dim,
      .mode = RUDA_EXEC_CHECKED,
      .info = d->id_info,
      .info_len = d->id_info_len,
  };
  ruda_hash128_t idh = ruda_kernel_id_stable_hash(&id);
  ruda__hasher_u64(h, idh.lo);
  ruda__hasher_u64(h, idh.hi);
  ruda__hasher_u64(h, d->shared_mem_bytes);
  ruda__hasher_u32(h, d->cluster_dim.x);
  ruda__hasher_u32(h, d->cluster_dim.y);
  ruda__hasher_u32(h, d->cluster_dim.z);
}

/* The CPU function's address is left out: it differs across processes and
 * CPU code is never cached on disk. */
static void hash_code(ruda__hasher_t *h, const ruda_kernel_code_t *c) {
  ruda__hasher_u32(h, (uint32_t)c->format);
  ruda__hasher_bytes(h, c->data ? c->data : "", c->data ? c->size : 0);
  ruda__hasher_bytes(h, c->entry, strlen(c->entry));
  ruda__hasher_u64(h, c->num_options);
  for (size_t i = 0; i < c->num_options; i++)
    ruda__hasher_bytes(h, c->options[i], strlen(c->options[i]));
}

static ruda_hash128_t code_hash(const ruda_kernel_t *k, const ruda_kernel_code_t *code) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, KERNEL_CODE_SEED);
  hash_header(&h, &k->desc);
  hash_code(&h, code);
  return ruda__hasher_final(&h);
}

ruda_hash128_t ruda__kernel_code_hash(const ruda_kernel_t *k, const ruda_kernel_code_t *code) {
  return k->code_hash[code - k->code];
}

static ruda_hash128_t kernel_hash(const ruda_kernel_t *k) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, KERNEL_CODE_SEED + 1);
  hash_header(&h, &k->desc);
  ruda__hasher_u64(&h, k->desc.num_code);
  for (size_t i = 0; i < k->desc.num_code; i++) hash_code(&h, &k->code[i]);
  return ruda__hasher_final(&h);
}

ruda_status_t ruda_kernel_create(const ruda_kernel_desc_t *desc, ruda_kernel_t **out) {
  if (!desc || !out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_kernel_create: NULL argument");
  *out = NULL;
  if (!desc->name || !desc->name[0])
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "a kernel needs a name");
  if (!desc->ruda_dim.x || !desc->ruda_dim.y || !desc->ruda_dim.z)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s': ruda_dim (%u, %u, %u) has a zero axis", desc->name,
                              desc->ruda_dim.x, desc->ruda_dim.y, desc->ruda_dim.z);
  if (!desc->num_code || !desc->code)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s' has no code for any backend (code/num_code)", desc->name);
  for (size_t i = 0; i < desc->num_code; i++) {
    ruda_status_t s = check_code(desc, i);
    if (s) return s;
  }

  ruda_kernel_t *k = ruda__calloc(1, sizeof *k);
  if (!k) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "creating kernel '%s'", desc->name);
  atomic_init(&k->refs, 1);
  k->desc = *desc;
  k->desc.name = NULL;
  k->desc.id_info = NULL;
  k->desc.code = NULL;
  k->desc.num_code = 0;
  bool ok = (k->desc.name = dup_bytes(desc->name, strlen(desc->name))) != NULL;
  if (ok && desc->id_info && desc->id_info_len) {
    ok = (k->desc.id_info = dup_bytes(desc->id_info, desc->id_info_len)) != NULL;
  } else {
    k->desc.id_info_len = 0;
  }
  if (ok) ok = (k->code = ruda__calloc(desc->num_code, sizeof *k->code)) != NULL;
  for (size_t i = 0; ok && i < desc->num_code; i++) {
    k->desc.num_code = i + 1; /* what kernel_free must release */
    ok = copy_code(&k->code[i], &desc->code[i], k->desc.name);
  }
  if (!ok) {
    kernel_free(k);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "creating kernel '%s'", desc->name);
  }
  k->desc.code = k->code;
  const ruda_kernel_code_t *portable = ruda__kernel_code(k, RUDA_KERNEL_FORMAT_PORTABLE);
  if (portable && portable->data)
    ruda__portable_scan_needs(portable->data, portable->size, &k->portable_needs);
  if (portable && portable->data && k->desc.num_code == 1)
    ruda__portable_scan_params(portable->data, portable->size, portable->entry,
                               &k->portable_params);
  k->hash = kernel_hash(k);
  k->code_hash = ruda__calloc(k->desc.num_code, sizeof *k->code_hash);
  if (!k->code_hash) {
    kernel_free(k);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "creating kernel '%s'", desc->name);
  }
  for (size_t i = 0; i < k->desc.num_code; i++) k->code_hash[i] = code_hash(k, &k->code[i]);
  *out = k;
  return NULL;
}

ruda_status_t ruda__kernel_check_read_only(const ruda_kernel_t *k, size_t buffer) {
  const ruda__portable_params_t *p = &k->portable_params;
  if (!p->known || buffer >= p->buffers) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': buffer %zu is a read-only DLPack import, and ruda "
                              "cannot read the kernel's declaration (only a kernel whose one "
                              "entry is portable text declaring it RUDA_BUFFER(const T *, name) "
                              "may be given one), so cannot tell that it only reads it",
                              k->desc.name, buffer);
  }
  return ruda__portable_check_read_only(p, (const char *)k->code[0].data, k->code[0].size,
                                        k->code[0].entry, buffer);
}

const ruda_kernel_code_t *ruda__kernel_code(const ruda_kernel_t *k, ruda_kernel_format_t format) {
  for (size_t i = 0; i < k->desc.num_code; i++) {
    if (k->code[i].format == format) return &k->code[i];
  }
  return NULL;
}

RUDA__HOT
const ruda_kernel_code_t *ruda__kernel_code_pick(const ruda_kernel_t *k,
                                                 const ruda_kernel_format_t *formats, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ruda_kernel_code_t *c = ruda__kernel_code(k, formats[i]);
    if (c) return c;
  }
  return NULL;
}

RUDA__HOT
ruda_kernel_t *ruda_kernel_retain(ruda_kernel_t *k) {
  if (k) atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
  return k;
}

RUDA__HOT
void ruda_kernel_release(ruda_kernel_t *k) {
  if (!k) return;
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) kernel_free(k);
}

RUDA__HOT
const ruda_kernel_desc_t *ruda_kernel_desc(const ruda_kernel_t *k) { return &k->desc; }

RUDA__HOT
ruda_hash128_t ruda_kernel_hash(const ruda_kernel_t *k) { return k->hash; }

ruda_status_t ruda__kernel_check_features(const ruda_kernel_t *k, uint16_t device_type,
                                          uint64_t features, const char *device_name) {
  if (device_type == RUDA_DEVICE_TYPE_CPU || !k->portable_needs.features) return NULL;
  static const ruda_kernel_format_t raw[] = {RUDA_KERNEL_FORMAT_CUDA_C, RUDA_KERNEL_FORMAT_PTX,
                                             RUDA_KERNEL_FORMAT_CUBIN, RUDA_KERNEL_FORMAT_OPENCL_C};
  if (ruda__kernel_code_pick(k, raw, sizeof raw / sizeof raw[0])) return NULL;
  return ruda__portable_check_needs(&k->portable_needs, k->desc.name, features, device_name);
}
