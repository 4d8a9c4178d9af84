/* types/hasher.h: the streaming form of ruda_hash128 (internal).
 *
 * Feeding bytes in any number of pieces gives the same value as one
 * ruda_hash128() call over their concatenation. The typed helpers append a
 * value's canonical little-endian bytes, so hashes built from them are the
 * same on every machine. Used for device-property checksums, kernel ids and
 * cache keys. Not thread-safe: one hasher per caller.
 */
#ifndef RUDA_TYPES_HASHER_H
#define RUDA_TYPES_HASHER_H

#include <stddef.h>
#include <stdint.h>

#include "ruda/types.h"

typedef struct ruda__hasher {
  uint64_t h1, h2;
  uint64_t total;   /* bytes fed so far */
  uint8_t tail[16]; /* bytes not yet forming a full 16-byte block */
  size_t tail_len;
} ruda__hasher_t;

void ruda__hasher_init(ruda__hasher_t *h, uint64_t seed);
void ruda__hasher_update(ruda__hasher_t *h, const void *data, size_t len);
void ruda__hasher_u8(ruda__hasher_t *h, uint8_t v);
void ruda__hasher_u32(ruda__hasher_t *h, uint32_t v);
void ruda__hasher_u64(ruda__hasher_t *h, uint64_t v);
/* Length (u64) then bytes, so that adjacent strings cannot run together. */
void ruda__hasher_bytes(ruda__hasher_t *h, const void *data, size_t len);
/* The hash of everything fed; `h` is left unchanged and can be fed more. */
ruda_hash128_t ruda__hasher_final(const ruda__hasher_t *h);

/* A checksum of bulk bytes (the disk cache's payloads), about twice as
 * fast as ruda_hash128 on kilobytes and with a different value: the
 * same on every machine and for any alignment, every bit of the input
 * reaching every bit of the output. Part of the disk cache's file format.
 * A pure function (thread-safe); NULL data counts as no bytes. */
ruda_hash128_t ruda__checksum128(const void *data, size_t len, uint64_t seed);

#endif /* RUDA_TYPES_HASHER_H */
