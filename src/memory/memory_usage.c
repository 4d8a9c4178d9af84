/* MemoryUsage: combination and the report text (sizes in binary units). */
#include <stdio.h>

#include "ruda/memory.h"

ruda_memory_usage_t ruda_memory_usage_combine(ruda_memory_usage_t a, ruda_memory_usage_t b) {
  ruda_memory_usage_t r = {
      a.number_allocs + b.number_allocs,
      a.bytes_in_use + b.bytes_in_use,
      a.bytes_padding + b.bytes_padding,
      a.bytes_reserved + b.bytes_reserved,
  };
  return r;
}

size_t ruda_bytes_format(uint64_t bytes, char *buf, size_t cap) {
  int n;
  if (bytes < 1024) {
    n = snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
  } else {
    static const char prefixes[] = "KMGTPE";
    unsigned exp = 0;
    uint64_t div = 1;
    while (bytes / div >= 1024) {
      div *= 1024;
      exp++;
    }
    n = snprintf(buf, cap, "%.2f %ciB", (double)bytes / (double)div, prefixes[exp - 1]);
  }
  return n < 0 ? 0 : (size_t)n;
}

/* 0/0 prints as "NaN" (printf would write "nan"), x/0 as "inf". */
static void ruda__percent(char *out, size_t cap, uint64_t num, uint64_t den) {
  if (den == 0 && num == 0)
    snprintf(out, cap, "NaN");
  else if (den == 0)
    snprintf(out, cap, "inf");
  else
    snprintf(out, cap, "%.2f", (double)num / (double)den * 100.0);
}

size_t ruda_memory_usage_format(const ruda_memory_usage_t *u, char *buf, size_t cap) {
  char in_use[32], padding[32], reserved[32], eff[32], over[32];
  ruda_bytes_format(u->bytes_in_use, in_use, sizeof in_use);
  ruda_bytes_format(u->bytes_padding, padding, sizeof padding);
  ruda_bytes_format(u->bytes_reserved, reserved, sizeof reserved);
  ruda__percent(eff, sizeof eff, u->bytes_in_use, u->bytes_reserved);
  ruda__percent(over, sizeof over, u->bytes_padding, u->bytes_in_use);
  int n = snprintf(buf, cap,
                   "Memory Usage Report:\n"
                   "  Number of allocations: %llu\n"
                   "  Bytes in use: %s\n"
                   "  Bytes used for padding: %s\n"
                   "  Total bytes reserved: %s\n"
                   "  Usage efficiency: %s%%\n"
                   "  Padding overhead: %s%%\n",
                   (unsigned long long)u->number_allocs, in_use, padding, reserved, eff,
                   over);
  return n < 0 ? 0 : (size_t)n;
}
