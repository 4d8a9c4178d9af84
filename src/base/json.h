/* src/base/json.h: JSON string escaping (internal).
 *
 * The one escaper every ruda component that writes JSON uses (status
 * rendering, benchmark lines, traces), so that they all quote the same
 * way: '"' and '\\' are backslash-escaped, \b \f \n \r \t use their short
 * escapes, other bytes below 0x20 become \u00XX, and every other byte
 * (UTF-8 included) is copied as it is.
 */
#ifndef RUDA_BASE_JSON_H
#define RUDA_BASE_JSON_H

#include <stddef.h>

/* Writes `s` as a quoted JSON string literal ("..." with the quotes) into
 * `buf`, snprintf-style: at most `cap` bytes including the terminator, and
 * `buf` is always terminated when cap > 0. Returns the length the whole
 * literal needs, without the terminator; a return >= cap means the output
 * was cut short. `buf` may be NULL when cap is 0 (to measure). NULL `s`
 * writes "". Allocates nothing, cannot fail; thread-safe. */
size_t ruda__json_escape(const char *s, char *buf, size_t cap);

/* The short escapes that JSON and TOML basic strings share: \" \\ \b \f
 * \n \r \t. The letter after the backslash for byte `c` ('n' for '\n',
 * '"' for '"'), or 0 where `c` has no short escape. Pure. */
char ruda__short_escape_letter(unsigned char c);

/* The byte that the short escape `letter` stands for ('\n' for 'n'), or 0
 * where `letter` is no short escape. Pure. */
char ruda__short_escape_byte(int letter);

#endif /* RUDA_BASE_JSON_H */
