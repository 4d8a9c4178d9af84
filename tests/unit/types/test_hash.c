/* ruda_hash128 and the streaming hasher: pinned values, piecewise feeding,
 * and a distribution sanity check. */
#include <stdlib.h>
#include <string.h>

#include "ruda/types.h"
#include "test.h"
#include "types/hasher.h"

static ruda_hash128_t hash_str(const char *s, uint64_t seed) {
  return ruda_hash128(s, strlen(s), seed);
}

/* With a seed below 2^32 the output is MurmurHash3_x64_128's; these first
 * two values are that algorithm's published test vectors. */
TEST(hash128_matches_murmur3_vectors) {
  ruda_hash128_t h = hash_str("hello", 0);
  ASSERT_UEQ(h.lo, UINT64_C(0xcbd8a7b341bd9b02));
  ASSERT_UEQ(h.hi, UINT64_C(0x5b1e906a48ae1d19));
  h = hash_str("The quick brown fox jumps over the lazy dog", 0);
  ASSERT_UEQ(h.lo, UINT64_C(0xe34bbc7bbc071b6c));
  ASSERT_UEQ(h.hi, UINT64_C(0x7a433ca9c49a9347));
}

/* Golden values: a change to the construction changes every persistent
 * cache key, so it must be deliberate. */
TEST(hash128_golden_values) {
  ruda_hash128_t h = hash_str("a", 0);
  ASSERT_UEQ(h.lo, UINT64_C(0x85555565f6597889));
  ASSERT_UEQ(h.hi, UINT64_C(0xe6b53a48510e895a));
  h = hash_str("0123456789abcdef", 0); /* exactly one block */
  ASSERT_UEQ(h.lo, UINT64_C(0x4be06d94cf4ad1a7));
  ASSERT_UEQ(h.hi, UINT64_C(0x87c35b5c63a708da));
  h = hash_str("0123456789abcdefg", 0); /* one block and a 1-byte tail */
  ASSERT_UEQ(h.lo, UINT64_C(0x8e32612daa45f9de));
  ASSERT_UEQ(h.hi, UINT64_C(0x0800f4c206c372ee));
  /* A seed above 32 bits. */
  h = hash_str("", UINT64_C(0x123456789abcdef0));
  ASSERT_UEQ(h.lo, UINT64_C(0xafd6e440fca677af));
  ASSERT_UEQ(h.hi, UINT64_C(0x76b083e6fda41d76));
  h = hash_str("hello", UINT64_C(0x123456789abcdef0));
  ASSERT_UEQ(h.lo, UINT64_C(0x854f23c1af39a84c));
  ASSERT_UEQ(h.hi, UINT64_C(0x02fd573fd15bb171));
}

TEST(hash128_seed_and_input_change_the_value) {
  ruda_hash128_t a = hash_str("kernel", 1);
  ruda_hash128_t b = hash_str("kernel", 2);
  ruda_hash128_t c = hash_str("kernek", 1);
  ASSERT_TRUE(a.lo != b.lo || a.hi != b.hi);
  ASSERT_TRUE(a.lo != c.lo || a.hi != c.hi);
  /* NULL data is the empty string. */
  ruda_hash128_t n = ruda_hash128(NULL, 0, 7);
  ruda_hash128_t e = ruda_hash128("", 0, 7);
  ASSERT_UEQ(n.lo, e.lo);
  ASSERT_UEQ(n.hi, e.hi);
}

TEST(hash128_does_not_depend_on_alignment) {
  uint8_t buf[80];
  for (size_t i = 0; i < sizeof(buf); i++) buf[i] = (uint8_t)(i * 37 + 11);
  uint8_t shifted[96];
  for (size_t off = 1; off < 16; off++) {
    memcpy(shifted + off, buf, 64);
    ruda_hash128_t a = ruda_hash128(buf, 64, 9);
    ruda_hash128_t b = ruda_hash128(shifted + off, 64, 9);
    ASSERT_UEQ(a.lo, b.lo);
    ASSERT_UEQ(a.hi, b.hi);
  }
}

/* Feeding the bytes in pieces of any size gives the one-shot value. */
TEST(hasher_piecewise_equals_one_shot) {
  uint8_t data[200];
  for (size_t i = 0; i < sizeof(data); i++) data[i] = (uint8_t)(i ^ (i >> 3));
  for (size_t len = 0; len <= sizeof(data); len += 7) {
    ruda_hash128_t want = ruda_hash128(data, len, 42);
    for (size_t piece = 1; piece <= 33; piece += 4) {
      ruda__hasher_t h;
      ruda__hasher_init(&h, 42);
      for (size_t at = 0; at < len; at += piece) {
        size_t n = len - at < piece ? len - at : piece;
        ruda__hasher_update(&h, data + at, n);
      }
      ruda_hash128_t got = ruda__hasher_final(&h);
      ASSERT_UEQ(got.lo, want.lo);
      ASSERT_UEQ(got.hi, want.hi);
    }
  }
}

TEST(hasher_typed_values_are_little_endian) {
  ruda__hasher_t h;
  ruda__hasher_init(&h, 3);
  ruda__hasher_u32(&h, 0x04030201u);
  ruda__hasher_u64(&h, UINT64_C(0x0c0b0a0908070605));
  ruda__hasher_u8(&h, 0x0d);
  const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  ruda_hash128_t want = ruda_hash128(bytes, sizeof(bytes), 3);
  ruda_hash128_t got = ruda__hasher_final(&h);
  ASSERT_UEQ(got.lo, want.lo);
  ASSERT_UEQ(got.hi, want.hi);

  /* Length-prefixed strings cannot run together. */
  ruda__hasher_t a, b;
  ruda__hasher_init(&a, 0);
  ruda__hasher_bytes(&a, "ab", 2);
  ruda__hasher_bytes(&a, "c", 1);
  ruda__hasher_init(&b, 0);
  ruda__hasher_bytes(&b, "a", 1);
  ruda__hasher_bytes(&b, "bc", 2);
  ruda_hash128_t ha = ruda__hasher_final(&a), hb = ruda__hasher_final(&b);
  ASSERT_TRUE(ha.lo != hb.lo || ha.hi != hb.hi);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static unsigned popcount64(uint64_t v) {
  unsigned n = 0;
  while (v) {
    v &= v - 1;
    n++;
  }
  return n;
}

/* Sequential keys spread evenly over buckets, every output bit is set about
 * half the time, and flipping one input bit flips about half the output. */
TEST(hash128_distribution_sanity) {
  enum { N = 65536, BUCKETS = 256 };
  static uint32_t lo_buckets[BUCKETS], hi_buckets[BUCKETS];
  static uint32_t bit_ones[128];
  memset(lo_buckets, 0, sizeof(lo_buckets));
  memset(hi_buckets, 0, sizeof(hi_buckets));
  memset(bit_ones, 0, sizeof(bit_ones));
  for (uint32_t i = 0; i < N; i++) {
    uint8_t key[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16),
                      (uint8_t)(i >> 24)};
    ruda_hash128_t h = ruda_hash128(key, sizeof(key), 0);
    lo_buckets[h.lo % BUCKETS]++;
    hi_buckets[h.hi >> 56]++;
    for (unsigned b = 0; b < 64; b++) {
      bit_ones[b] += (uint32_t)((h.lo >> b) & 1);
      bit_ones[64 + b] += (uint32_t)((h.hi >> b) & 1);
    }
  }
  /* Chi-square over 255 degrees of freedom: mean 255, sd ~22.6; 400 is
   * over six standard deviations. */
  double expect = (double)N / BUCKETS, chi_lo = 0, chi_hi = 0;
  for (int b = 0; b < BUCKETS; b++) {
    chi_lo += (lo_buckets[b] - expect) * (lo_buckets[b] - expect) / expect;
    chi_hi += (hi_buckets[b] - expect) * (hi_buckets[b] - expect) / expect;
  }
  ASSERT_LT(chi_lo, 400);
  ASSERT_LT(chi_hi, 400);
  /* Each bit: mean N/2, sd 128; allow six sd. */
  for (int b = 0; b < 128; b++) {
    ASSERT_GT(bit_ones[b], N / 2 - 768);
    ASSERT_LT(bit_ones[b], N / 2 + 768);
  }

  /* Avalanche over one-bit flips of a 24-byte key. */
  uint8_t key[24];
  for (size_t i = 0; i < sizeof(key); i++) key[i] = (uint8_t)(i * 73 + 5);
  ruda_hash128_t base = ruda_hash128(key, sizeof(key), 0);
  uint64_t flipped = 0;
  unsigned trials = 0;
  for (size_t byte = 0; byte < sizeof(key); byte++) {
    for (unsigned bit = 0; bit < 8; bit++) {
      key[byte] ^= (uint8_t)(1u << bit);
      ruda_hash128_t h = ruda_hash128(key, sizeof(key), 0);
      key[byte] ^= (uint8_t)(1u << bit);
      unsigned d = popcount64(h.lo ^ base.lo) + popcount64(h.hi ^ base.hi);
      ASSERT_GT(d, 30); /* never a near-collision */
      flipped += d;
      trials++;
    }
  }
  double mean = (double)flipped / trials;
  ASSERT_GT(mean, 60.0);
  ASSERT_LT(mean, 68.0);

  /* No collisions among 65536 sequential keys on the low half alone. */
  uint64_t *los = malloc(N * sizeof(uint64_t));
  ASSERT_NOT_NULL(los);
  for (uint32_t i = 0; i < N; i++) {
    uint8_t k[4] = {(uint8_t)i, (uint8_t)(i >> 8), 0, 0};
    los[i] = ruda_hash128(k, sizeof(k), 1).lo;
  }
  qsort(los, N, sizeof(uint64_t), cmp_u64);
  size_t dups = 0;
  for (uint32_t i = 1; i < N; i++) dups += los[i] == los[i - 1];
  free(los);
  ASSERT_UEQ(dups, 0);
}

/* ---- ruda__checksum128 ---- */

TEST(checksum128_every_bit_reaches_the_output) {
  /* Sizes around the 8-byte words and 32-byte stripes, and a CUBIN's. */
  static const size_t sizes[] = {1, 7, 8, 9, 31, 32, 33, 63, 64, 100, 3968};
  uint8_t *buf = malloc(3968);
  ASSERT_NOT_NULL(buf);
  for (size_t i = 0; i < 3968; i++) buf[i] = (uint8_t)(i * 131u + 7u);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    ruda_hash128_t base = ruda__checksum128(buf, n, 42);
    uint64_t flipped = 0;
    unsigned trials = 0;
    for (size_t byte = 0; byte < n; byte += n > 100 ? 61 : 1) {
      for (unsigned bit = 0; bit < 8; bit++) {
        buf[byte] ^= (uint8_t)(1u << bit);
        ruda_hash128_t h = ruda__checksum128(buf, n, 42);
        buf[byte] ^= (uint8_t)(1u << bit);
        unsigned d = popcount64(h.lo ^ base.lo) + popcount64(h.hi ^ base.hi);
        ASSERT_GT(d, 30);
        flipped += d;
        trials++;
      }
    }
    double mean = (double)flipped / trials;
    ASSERT_GT(mean, 58.0);
    ASSERT_LT(mean, 70.0);
  }
  free(buf);
}

TEST(checksum128_length_seed_and_alignment) {
  uint8_t zeros[80] = {0};
  ruda_hash128_t prev = ruda__checksum128(zeros, 0, 1);
  for (size_t n = 1; n <= sizeof zeros; n++) {
    ruda_hash128_t h = ruda__checksum128(zeros, n, 1);
    ASSERT_TRUE(h.lo != prev.lo || h.hi != prev.hi); /* a trailing zero counts */
    prev = h;
  }
  uint8_t text[200], *shifted = malloc(sizeof text + 8);
  ASSERT_NOT_NULL(shifted);
  for (size_t i = 0; i < sizeof text; i++) text[i] = (uint8_t)(i ^ 0x5a);
  ruda_hash128_t a = ruda__checksum128(text, sizeof text, 9);
  for (size_t off = 1; off < 8; off++) {
    memcpy(shifted + off, text, sizeof text);
    ruda_hash128_t b = ruda__checksum128(shifted + off, sizeof text, 9);
    ASSERT_UEQ(a.lo, b.lo);
    ASSERT_UEQ(a.hi, b.hi);
  }
  free(shifted);
  ruda_hash128_t other = ruda__checksum128(text, sizeof text, 10);
  ASSERT_TRUE(other.lo != a.lo && other.hi != a.hi);
  ruda_hash128_t murmur = ruda_hash128(text, sizeof text, 9);
  ASSERT_TRUE(murmur.lo != a.lo); /* its own function, not murmur's value */
}

/* The disk cache's files store this value: a change to the function must
 * come with a new cache format. */
TEST(checksum128_golden_values) {
  ruda_hash128_t e = ruda__checksum128(NULL, 0, 0);
  ruda_hash128_t f = ruda__checksum128("The quick brown fox jumps over the lazy dog", 43, 7);
  ASSERT_UEQ(e.lo, UINT64_C(0xd6fdfe229c27d3f3));
  ASSERT_UEQ(e.hi, UINT64_C(0x7807f5f65afd4622));
  ASSERT_UEQ(f.lo, UINT64_C(0x21e92da45d2159f2));
  ASSERT_UEQ(f.hi, UINT64_C(0x53c40cdc46a29d19));
}
