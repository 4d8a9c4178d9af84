/* Kernel objects: an immutable copy of a ruda_kernel_desc_t plus its stable
 * id hash, shared by reference count. */
#include <stdlib.h>
#include <string.h>

#include "server/kernel_object.h"

static char *dup_bytes(const void *src, size_t len) {
  char *d = malloc(len + 1);
  if (!d) return NULL;
  if (len) memcpy(d, src, len);
  d[len] = 0;
  return d;
}

static void kernel_free(ruda_kernel_t *k) {
  free((void *)k->desc.name);
  free((void *)k->desc.source);
  free((void *)k->desc.id_info);
  if (k->options) {
    for (size_t i = 0; i < k->desc.num_compile_options; i++) free(k->options[i]);
    free(k->options);
  }
  free(k);
}

/* Feeds the parts of the description that change the compiled code into
 * one stable hash. The CPU function pointer is excluded: it differs across
 * processes and is not cached on disk. */
static ruda_hash128_t kernel_hash(const ruda_kernel_t *k) {
  const ruda_kernel_desc_t *d = &k->desc;
  ruda_kernel_id_t id = {
      .name = d->name,
      .address_type = d->address_type,
      .ruda_dim = d->ruda_dim,
      .mode = RUDA_EXEC_CHECKED,
      .info = d->id_info,
      .info_len = d->id_info_len,
  };
  ruda_hash128_t h = ruda_kernel_id_stable_hash(&id);
  uint64_t fixed[6] = {d->shared_mem_bytes, (uint64_t)d->source_kind, d->cluster_dim.x,
                       d->cluster_dim.y, d->cluster_dim.z, d->num_compile_options};
  ruda_hash128_t f = ruda_hash128(fixed, sizeof fixed, h.lo);
  h.lo ^= f.lo;
  h.hi ^= f.hi;
  if (d->source && d->source_len) {
    ruda_hash128_t s = ruda_hash128(d->source, d->source_len, h.hi);
    h.lo ^= s.lo;
    h.hi ^= s.hi;
  }
  for (size_t i = 0; i < d->num_compile_options; i++) {
    ruda_hash128_t o = ruda_hash128(k->options[i], strlen(k->options[i]), h.lo + i);
    h.lo ^= o.lo;
    h.hi ^= o.hi;
  }
  return h;
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
  bool has_source = desc->source_kind != RUDA_SOURCE_NONE && desc->source;
  if (!desc->cpu_fn && !has_source)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s' has no code for any backend", desc->name);
  if (desc->source_kind == RUDA_SOURCE_CUBIN && desc->source && desc->source_len == 0)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s': a CUBIN source needs source_len", desc->name);
  if (desc->num_compile_options && !desc->compile_options)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "kernel '%s': num_compile_options without compile_options", desc->name);

  ruda_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "creating kernel '%s'", desc->name);
  atomic_init(&k->refs, 1);
  k->desc = *desc;
  k->desc.name = NULL;
  k->desc.source = NULL;
  k->desc.id_info = NULL;
  k->desc.compile_options = NULL;
  bool ok = true;
  k->desc.name = dup_bytes(desc->name, strlen(desc->name));
  ok = ok && k->desc.name;
  if (has_source) {
    size_t len = desc->source_len ? desc->source_len : strlen(desc->source);
    k->desc.source = dup_bytes(desc->source, len);
    k->desc.source_len = len;
    ok = ok && k->desc.source;
  } else {
    k->desc.source_kind = RUDA_SOURCE_NONE;
    k->desc.source_len = 0;
  }
  if (desc->id_info && desc->id_info_len) {
    k->desc.id_info = dup_bytes(desc->id_info, desc->id_info_len);
    ok = ok && k->desc.id_info;
  } else {
    k->desc.id_info_len = 0;
  }
  if (ok && desc->num_compile_options) {
    k->options = calloc(desc->num_compile_options, sizeof *k->options);
    ok = k->options != NULL;
    for (size_t i = 0; ok && i < desc->num_compile_options; i++) {
      const char *o = desc->compile_options[i] ? desc->compile_options[i] : "";
      k->options[i] = dup_bytes(o, strlen(o));
      ok = k->options[i] != NULL;
    }
    k->desc.compile_options = (const char *const *)k->options;
  }
  if (!ok) {
    k->desc.num_compile_options = k->options ? desc->num_compile_options : 0;
    kernel_free(k);
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "creating kernel '%s'", desc->name);
  }
  k->hash = kernel_hash(k);
  *out = k;
  return NULL;
}

ruda_kernel_t *ruda_kernel_retain(ruda_kernel_t *k) {
  if (k) atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
  return k;
}

void ruda_kernel_release(ruda_kernel_t *k) {
  if (!k) return;
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) kernel_free(k);
}

const ruda_kernel_desc_t *ruda_kernel_desc(const ruda_kernel_t *k) { return &k->desc; }

ruda_hash128_t ruda_kernel_hash(const ruda_kernel_t *k) { return k->hash; }
