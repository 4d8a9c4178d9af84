/* The packed info words of a launch.
 *
 * Layout, in u64 words: scalars grouped by type, each group starting on a
 * word boundary (so each group is padded to 8 bytes); then static metadata;
 * then dynamic metadata, whose first word is dynamic_metadata_offset.
 * Address-sized metadata is packed two u32 per word or one u64 per word.
 * Values are stored in the host's byte order, which is what the device
 * reads when the words are copied to it (every supported target is
 * little-endian).
 */
#include <string.h>

#include "base/alloc.h"
#include "ruda/types.h"

enum { PHASE_SCALARS = 0, PHASE_STATIC = 1, PHASE_DYNAMIC = 2 };

void ruda_info_builder_init(ruda_info_builder_t *b) {
  if (b == NULL) return;
  memset(b, 0, sizeof(*b));
  b->group_elem = -1;
  b->phase = PHASE_SCALARS;
}

void ruda_info_builder_deinit(ruda_info_builder_t *b) {
  if (b == NULL) return;
  ruda__free(b->words);
  ruda_status_free(b->error);
  ruda_info_builder_init(b);
}

/* Records the first failure; later pushes are ignored. Takes `s`. */
static void fail(ruda_info_builder_t *b, ruda_status_t s) {
  if (b->error != NULL) {
    ruda_status_free(s);
    return;
  }
  b->error = s;
}

static void start_group(ruda_info_builder_t *b, int group) {
  if (b->group_elem != group) {
    b->group_elem = group;
    b->group_bytes = 0;
  }
}

/* Byte offset at which the current group continues. */
static size_t cursor(const ruda_info_builder_t *b) {
  if (b->group_bytes == 0) return b->len * 8;
  return (b->len - 1) * 8 + b->group_bytes;
}

/* Makes room for `nbytes` more bytes of the current group and returns where
 * they go (new words are zeroed, which is the padding), or NULL after
 * recording LaunchError::OutOfMemory. */
static unsigned char *reserve(ruda_info_builder_t *b, size_t nbytes) {
  size_t start = cursor(b);
  /* Past half the address space no allocation can succeed; failing here
   * also keeps the arithmetic below from overflowing. */
  if (nbytes > SIZE_MAX / 4 - start) goto oom;
  size_t end = start + nbytes;
  size_t new_len = (end + 7) / 8;
  if (new_len > b->cap) {
    size_t cap = b->cap ? b->cap : 8;
    while (cap < new_len) cap *= 2;
    uint64_t *w = ruda__realloc(b->words, cap * sizeof(uint64_t));
    if (w == NULL) goto oom;
    b->words = w;
    b->cap = cap;
  }
  if (new_len > b->len) {
    memset(b->words + b->len, 0, (new_len - b->len) * sizeof(uint64_t));
  }
  b->len = new_len;
  b->group_bytes = (uint32_t)(end % 8);
  return (unsigned char *)b->words + start;

oom:
  fail(b, ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                             "Could not allocate %zu more bytes of launch info",
                             nbytes));
  return NULL;
}

void ruda_info_builder_push_scalars(ruda_info_builder_t *b, ruda_elem_type_t elem,
                                    const void *values, size_t count) {
  if (b == NULL || b->error != NULL) return;
  if (b->phase != PHASE_SCALARS) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "%s scalars pushed after metadata: scalars "
                               "come first in the launch info",
                               ruda_elem_type_name(elem)));
    return;
  }
  size_t size = ruda_elem_type_size(elem);
  if (size == 0) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "invalid scalar element type %d", (int)elem));
    return;
  }
  if (count == 0) return;
  if (values == NULL) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "NULL values for %zu %s scalars", count,
                               ruda_elem_type_name(elem)));
    return;
  }
  uint32_t bit = 1u << (unsigned)elem;
  if (b->group_elem != (int)elem && (b->scalar_types_seen & bit)) {
    /* The kernel reads one group per type; a second group would shift
     * every scalar after the first group. */
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "%s scalars pushed in two separate groups: "
                               "push scalars of one type together",
                               ruda_elem_type_name(elem)));
    return;
  }
  if (count > SIZE_MAX / size) {
    fail(b, ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                               "%zu %s scalars do not fit in memory", count,
                               ruda_elem_type_name(elem)));
    return;
  }
  start_group(b, (int)elem);
  b->scalar_types_seen |= bit;
  unsigned char *dst = reserve(b, count * size);
  if (dst != NULL) memcpy(dst, values, count * size);
}

static void push_metadata(ruda_info_builder_t *b, int phase,
                          ruda_address_type_t address, const uint64_t *values,
                          size_t count) {
  static const char *const kPhase[] = {"scalars", "static metadata",
                                       "dynamic metadata"};
  if (b == NULL || b->error != NULL) return;
  if (b->phase > phase) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "%s pushed after %s", kPhase[phase],
                               kPhase[b->phase]));
    return;
  }
  if (address != RUDA_ADDRESS_U32 && address != RUDA_ADDRESS_U64) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "invalid address type %d", (int)address));
    return;
  }
  if (b->phase < phase) {
    /* A new section starts on a word boundary. */
    b->phase = phase;
    b->group_elem = -1;
    b->group_bytes = 0;
    if (phase == PHASE_DYNAMIC) b->dynamic_offset = b->len;
  }
  if (count == 0) return;
  if (values == NULL) {
    fail(b, ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                               "NULL values for %zu %s values", count,
                               kPhase[phase]));
    return;
  }
  size_t size = address == RUDA_ADDRESS_U32 ? 4 : 8;
  if (address == RUDA_ADDRESS_U32) {
    for (size_t i = 0; i < count; i++) {
      if (values[i] > UINT32_MAX) {
        fail(b, ruda_status_create(
                    RUDA_ERR_INVALID_ARGUMENT,
                    "%s value %zu (%llu) does not fit a u32 address",
                    kPhase[phase], i, (unsigned long long)values[i]));
        return;
      }
    }
  }
  if (count > SIZE_MAX / size) {
    fail(b, ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                               "%zu %s values do not fit in memory", count,
                               kPhase[phase]));
    return;
  }
  start_group(b, address == RUDA_ADDRESS_U32 ? RUDA_ELEM_U32 : RUDA_ELEM_U64);
  unsigned char *dst = reserve(b, count * size);
  if (dst == NULL) return;
  if (size == 8) {
    memcpy(dst, values, count * 8);
  } else {
    for (size_t i = 0; i < count; i++) {
      uint32_t v = (uint32_t)values[i];
      memcpy(dst + 4 * i, &v, 4);
    }
  }
}

void ruda_info_builder_push_static_metadata(ruda_info_builder_t *b,
                                            ruda_address_type_t address,
                                            const uint64_t *values,
                                            size_t count) {
  push_metadata(b, PHASE_STATIC, address, values, count);
}

void ruda_info_builder_push_dynamic_metadata(ruda_info_builder_t *b,
                                             ruda_address_type_t address,
                                             const uint64_t *values,
                                             size_t count) {
  push_metadata(b, PHASE_DYNAMIC, address, values, count);
}

ruda_status_t ruda_info_builder_finish(ruda_info_builder_t *b, ruda_info_t *out) {
  if (b == NULL || out == NULL) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_info_builder_finish: NULL argument");
  }
  /* The builder keeps its error so that finishing again reports it again;
   * the caller owns the copy. */
  if (b->error != NULL) return ruda_status_clone(b->error);
  out->data = b->words;
  out->len = b->len;
  /* Without dynamic metadata the offset is the end of the words. */
  out->dynamic_metadata_offset =
      b->phase == PHASE_DYNAMIC ? b->dynamic_offset : b->len;
  return NULL;
}
