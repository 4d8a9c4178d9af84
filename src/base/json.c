/* JSON string escaping; see json.h. */
#include "base/json.h"

/* Appends one byte, counting what does not fit (the last byte of `cap` is
 * kept for the terminator). */
static void put(char *buf, size_t cap, size_t *pos, char c) {
  if (*pos + 1 < cap) buf[*pos] = c;
  ++*pos;
}

size_t ruda__json_escape(const char *s, char *buf, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t pos = 0;
  put(buf, cap, &pos, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    char short_esc = 0;
    switch (*p) {
      case '"': short_esc = '"'; break;
      case '\\': short_esc = '\\'; break;
      case '\b': short_esc = 'b'; break;
      case '\f': short_esc = 'f'; break;
      case '\n': short_esc = 'n'; break;
      case '\r': short_esc = 'r'; break;
      case '\t': short_esc = 't'; break;
      default: break;
    }
    if (short_esc) {
      put(buf, cap, &pos, '\\');
      put(buf, cap, &pos, short_esc);
    } else if (*p < 0x20) {
      const char u[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
      for (size_t i = 0; i < sizeof u; i++) put(buf, cap, &pos, u[i]);
    } else {
      put(buf, cap, &pos, (char)*p);
    }
  }
  put(buf, cap, &pos, '"');
  if (cap) buf[pos < cap ? pos : cap - 1] = '\0';
  return pos;
}
