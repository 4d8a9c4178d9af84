/* Kernel ids: equality, the stable hash (the persistent cache key) and the
 * stable text form. */
#include <stdio.h>
#include <string.h>

#include "types/hasher.h"

/* Bumped whenever the serialization below changes. */
#define RUDA_KERNEL_ID_FORMAT 1u
#define RUDA_KERNEL_ID_SEED UINT64_C(0x727564616b65726e) /* "rudakern" */

static const char *id_name(const ruda_kernel_id_t *id) {
  return id->name ? id->name : "";
}

static bool id_has_info(const ruda_kernel_id_t *id) {
  return id->info != NULL && id->info_len > 0;
}

ruda_hash128_t ruda_kernel_id_stable_hash(const ruda_kernel_id_t *id) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, RUDA_KERNEL_ID_SEED);
  ruda__hasher_u32(&h, RUDA_KERNEL_ID_FORMAT);
  if (id == NULL) return ruda__hasher_final(&h);

  const char *name = id_name(id);
  ruda__hasher_bytes(&h, name, strlen(name));
  ruda__hasher_u32(&h, (uint32_t)id->address_type);
  ruda__hasher_u32(&h, id->ruda_dim.x);
  ruda__hasher_u32(&h, id->ruda_dim.y);
  ruda__hasher_u32(&h, id->ruda_dim.z);
  ruda__hasher_u32(&h, (uint32_t)id->mode);
  /* A presence byte keeps "no info" apart from any info's bytes. */
  if (id_has_info(id)) {
    ruda__hasher_u8(&h, 1);
    ruda__hasher_bytes(&h, id->info, id->info_len);
  } else {
    ruda__hasher_u8(&h, 0);
  }
  return ruda__hasher_final(&h);
}

bool ruda_kernel_id_eq(const ruda_kernel_id_t *a, const ruda_kernel_id_t *b) {
  if (a == NULL || b == NULL) return a == b;
  if (strcmp(id_name(a), id_name(b)) != 0) return false;
  if (a->address_type != b->address_type || a->mode != b->mode) return false;
  if (a->ruda_dim.x != b->ruda_dim.x || a->ruda_dim.y != b->ruda_dim.y ||
      a->ruda_dim.z != b->ruda_dim.z) {
    return false;
  }
  bool ai = id_has_info(a), bi = id_has_info(b);
  if (ai != bi) return false;
  if (!ai) return true;
  return a->info_len == b->info_len &&
         memcmp(a->info, b->info, a->info_len) == 0;
}

/* Appends to an snprintf-style buffer, tracking the full length. */
typedef struct text_out {
  char *buf;
  size_t cap;
  size_t len;
} text_out_t;

static void out_str(text_out_t *o, const char *s, size_t n) {
  if (o->len < o->cap) {
    size_t room = o->cap - o->len - 1; /* keep one byte for the terminator */
    size_t take = n < room ? n : room;
    memcpy(o->buf + o->len, s, take);
    o->buf[o->len + take] = '\0';
  }
  o->len += n;
}

size_t ruda_kernel_id_stable_format(const ruda_kernel_id_t *id, char *buf,
                                    size_t cap) {
  text_out_t o = {buf, buf ? cap : 0, 0};
  if (o.cap > 0) buf[0] = '\0';
  if (id == NULL) return 0;

  const char *name = id_name(id);
  out_str(&o, name, strlen(name));
  out_str(&o, id->address_type == RUDA_ADDRESS_U64 ? "-u64-" : "-u32-", 5);

  char tmp[64];
  ruda_count3_t dim = {id->ruda_dim.x, id->ruda_dim.y, id->ruda_dim.z};
  size_t n = ruda_count3_format(dim, tmp, sizeof(tmp));
  out_str(&o, tmp, n);
  out_str(&o, "-", 1);
  const char *mode = ruda_execution_mode_name(id->mode);
  out_str(&o, mode, strlen(mode));
  out_str(&o, "-", 1);

  if (!id_has_info(id)) {
    out_str(&o, "No info", 7);
  } else {
    static const char kHex[] = "0123456789abcdef";
    const uint8_t *p = id->info;
    for (size_t i = 0; i < id->info_len; i++) {
      char pair[2] = {kHex[p[i] >> 4], kHex[p[i] & 15]};
      out_str(&o, pair, 2);
    }
  }
  return o.len;
}
