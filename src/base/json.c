/* JSON string escaping; see json.h. */
#include "base/json.h"

#include <string.h>

/* Appends one byte, counting what does not fit (the last byte of `cap` is
 * kept for the terminator). */
static void put(char *buf, size_t cap, size_t *pos, char c) {
  if (*pos + 1 < cap) buf[*pos] = c;
  ++*pos;
}

/* The short escapes, byte and letter at the same index. */
static const char k_escaped_bytes[] = "\"\\\b\f\n\r\t";
static const char k_escape_letters[] = "\"\\bfnrt";

char ruda__short_escape_letter(unsigned char c) {
  const char *at = c ? strchr(k_escaped_bytes, c) : NULL;
  return at ? k_escape_letters[at - k_escaped_bytes] : 0;
}

char ruda__short_escape_byte(int letter) {
  const char *at = letter > 0 && letter <= 0x7f ? strchr(k_escape_letters, letter) : NULL;
  return at ? k_escaped_bytes[at - k_escape_letters] : 0;
}

size_t ruda__json_escape(const char *s, char *buf, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t pos = 0;
  put(buf, cap, &pos, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    char short_esc = ruda__short_escape_letter(*p);
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
