/* Portable kernels inside the runtime (src/server/portable_kernel.h). */
#include "server/portable_kernel.h"

#include "base/alloc.h"
#include "server/server.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated at build time from include/ruda/dialect (CMakeLists.txt). */
extern const char ruda__prelude_cuda[];
extern const size_t ruda__prelude_cuda_size;
extern const char ruda__prelude_opencl[];
extern const size_t ruda__prelude_opencl_size;

const char *ruda__portable_prelude(ruda__portable_target_t target, size_t *out_len) {
  if (target == RUDA__PORTABLE_OPENCL) {
    if (out_len) *out_len = ruda__prelude_opencl_size;
    return ruda__prelude_opencl;
  }
  if (out_len) *out_len = ruda__prelude_cuda_size;
  return ruda__prelude_cuda;
}

ruda_status_t ruda__portable_source(ruda__portable_target_t target, const char *kernel,
                                    const char *text, size_t text_len, char **out,
                                    size_t *out_len) {
  *out = NULL;
  if (out_len) *out_len = 0;
  if (!text) {
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda_status_create(RUDA_ERR_COMPILATION_NO_CODE,
                           "portable kernel '%s' was built without its text (add its file to "
                           "ruda_add_kernels() or run `ruda kernels embed`, and do not define "
                           "RUDA_KERNEL_CPU_ONLY), so it runs on cpu:N only",
                           kernel ? kernel : "?"));
  }
  size_t plen = 0;
  const char *prelude = ruda__portable_prelude(target, &plen);
  if (text_len > SIZE_MAX - plen - 2) {
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "kernel '%s': text too large",
                              kernel ? kernel : "?");
  }
  char *s = ruda__malloc(plen + 1 + text_len + 1);
  if (!s) {
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                              "kernel '%s': no memory for its source", kernel ? kernel : "?");
  }
  memcpy(s, prelude, plen);
  s[plen] = '\n';
  memcpy(s + plen + 1, text, text_len);
  s[plen + 1 + text_len] = '\0';
  *out = s;
  if (out_len) *out_len = plen + 1 + text_len;
  return NULL;
}

/* ---- Feature scan ---- */

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static uint64_t needs_of(const char *id, size_t n) {
  if (n == 6 && memcmp(id, "double", 6) == 0) return RUDA_FEATURE_F64;
  static const char prefix[] = "ruda_atomic_";
  size_t pl = sizeof prefix - 1;
  if (n < pl + 4 || memcmp(id, prefix, pl) != 0) return 0;
  const char *sfx = id + n - 4;
  if (memcmp(sfx, "_f64", 4) == 0) return RUDA_FEATURE_F64 | RUDA_FEATURE_ATOMIC_I64;
  if (memcmp(sfx, "_i64", 4) == 0 || memcmp(sfx, "_u64", 4) == 0) return RUDA_FEATURE_ATOMIC_I64;
  return 0;
}

static void note_use(ruda__portable_needs_t *out, uint64_t bits, const char *id, size_t n,
                     const char *file, size_t file_len, uint32_t line) {
  for (uint64_t bit = 1; bit; bit <<= 1) {
    if (!(bits & bit) || (out->features & bit)) continue;
    out->features |= bit;
    if (out->num_uses >= RUDA__PORTABLE_MAX_USES) continue;
    ruda__portable_use_t *u = &out->uses[out->num_uses++];
    u->feature = bit;
    size_t tn = n < sizeof u->token - 1 ? n : sizeof u->token - 1;
    memcpy(u->token, id, tn);
    u->token[tn] = '\0';
    size_t fn = file_len < sizeof u->file - 1 ? file_len : sizeof u->file - 1;
    if (file) memcpy(u->file, file, fn);
    u->file[file ? fn : 0] = '\0';
    u->line = line;
  }
}

/* Reads `line N "file"` after the `#` of a directive. */
static void read_line_directive(const char *p, const char *end, uint32_t *line,
                                const char **file, size_t *file_len) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if ((size_t)(end - p) < 4 || memcmp(p, "line", 4) != 0) return;
  p += 4;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p >= end || !isdigit((unsigned char)*p)) return;
  unsigned long v = 0;
  while (p < end && isdigit((unsigned char)*p) && v < 100000000ul) v = v * 10 + (unsigned long)(*p++ - '0');
  *line = v ? (uint32_t)v - 1 : 0; /* the directive's own newline advances it */
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p < end && *p == '"') {
    const char *s = ++p;
    while (p < end && *p != '"' && *p != '\n') p += *p == '\\' ? 2 : 1;
    if (p <= end) {
      *file = s;
      *file_len = (size_t)(p - s);
    }
  }
}

void ruda__portable_scan_needs(const char *text, size_t len, ruda__portable_needs_t *out) {
  memset(out, 0, sizeof *out);
  if (!text) return;
  const char *p = text, *end = text + len;
  const char *file = NULL;
  size_t file_len = 0;
  uint32_t line = 1;
  bool line_start = true;
  while (p < end) {
    char c = *p;
    if (c == '\n') {
      line++;
      line_start = true;
      p++;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t' || c == '\r')) {
      p++;
      continue;
    }
    if (line_start && c == '#') {
      const char *eol = p;
      while (eol < end && (*eol != '\n' || eol[-1] == '\\')) eol++;
      read_line_directive(p + 1, eol, &line, &file, &file_len);
      for (const char *q = p; q < eol; q++)
        if (*q == '\n') line++;
      p = eol;
      continue;
    }
    line_start = false;
    if (c == '/' && p + 1 < end && p[1] == '*') {
      p += 2;
      while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) {
        if (*p == '\n') line++;
        p++;
      }
      p = p + 2 < end ? p + 2 : end;
      continue;
    }
    if (c == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') p++;
      continue;
    }
    if (c == '"' || c == '\'') {
      p++;
      while (p < end && *p != c && *p != '\n') p += *p == '\\' ? 2 : 1;
      if (p < end && *p == c) p++;
      continue;
    }
    if (ident_char(c)) {
      const char *s = p;
      while (p < end && ident_char(*p)) p++;
      uint64_t bits = isdigit((unsigned char)*s) ? 0 : needs_of(s, (size_t)(p - s));
      if (bits) note_use(out, bits, s, (size_t)(p - s), file, file_len, line);
      continue;
    }
    p++;
  }
}

const char *ruda__feature_name(uint64_t feature) {
  switch (feature) {
    case RUDA_FEATURE_F16: return "f16";
    case RUDA_FEATURE_BF16: return "bf16";
    case RUDA_FEATURE_F64: return "f64";
    case RUDA_FEATURE_ATOMIC_F32_ADD: return "atomic_f32_add";
    case RUDA_FEATURE_ATOMIC_F64_ADD: return "atomic_f64_add";
    case RUDA_FEATURE_ATOMIC_F16: return "atomic_f16";
    case RUDA_FEATURE_BARRIER: return "barrier";
    case RUDA_FEATURE_PIPELINE: return "pipeline";
    case RUDA_FEATURE_PLANE_SYNC: return "plane_sync";
    case RUDA_FEATURE_GRID_CONSTANTS: return "grid_constants";
    case RUDA_FEATURE_LDMATRIX: return "ldmatrix";
    case RUDA_FEATURE_COPY_ASYNC: return "copy_async";
    case RUDA_FEATURE_FP8: return "fp8";
    case RUDA_FEATURE_TMA: return "tma";
    case RUDA_FEATURE_TENSOR_MAP: return "tensor_map";
    case RUDA_FEATURE_CLUSTERS: return "clusters";
    case RUDA_FEATURE_ELECT_SYNC: return "elect_sync";
    case RUDA_FEATURE_STMATRIX: return "stmatrix";
    case RUDA_FEATURE_TMA_IM2COL_WIDE: return "tma_im2col_wide";
    case RUDA_FEATURE_FP4_FP6: return "fp4_fp6";
    case RUDA_FEATURE_DYNAMIC_COUNT: return "dynamic_count";
    case RUDA_FEATURE_SHARED_MEMORY: return "shared_memory";
    case RUDA_FEATURE_ATOMIC_I64: return "atomic_i64";
    default: return "unknown";
  }
}

static const char *feature_words(uint64_t feature) {
  switch (feature) {
    case RUDA_FEATURE_F64: return "64-bit floats (double)";
    case RUDA_FEATURE_ATOMIC_I64: return "64-bit atomics";
    default: return ruda__feature_name(feature);
  }
}

ruda_status_t ruda__portable_check_needs(const ruda__portable_needs_t *needs, const char *kernel,
                                         uint64_t device_features, const char *device_name) {
  uint64_t missing = needs->features & ~device_features;
  if (!missing) return NULL;
  for (size_t i = 0; i < needs->num_uses; i++) {
    const ruda__portable_use_t *u = &needs->uses[i];
    if (!(missing & u->feature)) continue;
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda_status_create(RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION,
                           "kernel '%s' uses %s (`%s` at %s:%u), which %s does not support "
                           "(feature %s)",
                           kernel ? kernel : "?", feature_words(u->feature), u->token,
                           u->file[0] ? u->file : "<kernel text>", u->line,
                           device_name && device_name[0] ? device_name : "this device",
                           ruda__feature_name(u->feature)));
  }
  uint64_t bit = missing & (~missing + 1);
  return ruda_status_wrap(
      RUDA_ERR_LAUNCH_COMPILATION,
      ruda_status_create(RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION,
                         "kernel '%s' uses %s, which %s does not support (feature %s)",
                         kernel ? kernel : "?", feature_words(bit),
                         device_name && device_name[0] ? device_name : "this device",
                         ruda__feature_name(bit)));
}

/* ---- The public face: ahead of time, without a device ---- */

ruda_status_t ruda_kernel_portable_source(uint16_t device_type, const char *text, size_t len,
                                          char **out, size_t *out_len) {
  if (out_len) *out_len = 0;
  if (!out || !text)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_kernel_portable_source: NULL %s", out ? "text" : "out");
  *out = NULL;
  ruda__portable_target_t target;
  if (device_type == RUDA_DEVICE_TYPE_CUDA) {
    target = RUDA__PORTABLE_CUDA;
  } else if (device_type == RUDA_DEVICE_TYPE_OPENCL) {
    target = RUDA__PORTABLE_OPENCL;
  } else {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_kernel_portable_source: device type %u has no prelude (cuda "
                              "and opencl have)",
                              (unsigned)device_type);
  }
  return ruda__portable_source(target, "source", text, len, out, out_len);
}

ruda_status_t ruda_kernel_compile_portable_with_options(uint16_t device_type, uint32_t target,
                                                        const char *name, const char *text,
                                                        size_t len, const char *origin,
                                                        const char *const *options,
                                                        size_t num_options, void **out_binary,
                                                        size_t *out_size) {
  if (out_binary) *out_binary = NULL;
  if (out_size) *out_size = 0;
  if (!name || !text)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_kernel_compile_portable: NULL %s", name ? "text" : "name");
  if (device_type != RUDA_DEVICE_TYPE_OPENCL && (target < 30 || target > 200))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_kernel_compile_portable: architecture %u is outside 30..200",
                              (unsigned)target);
  if (num_options && !options)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_kernel_compile_portable: num_options without options");
  ruda_status_t err = ruda__portable_check_options(name, options, num_options);
  if (err) return err;
  const ruda__backend_t *b = ruda__backend_for(device_type);
  const char *type = ruda_device_type_name(device_type);
  if (!b || !b->compile_portable)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              b ? "the %s backend compiles no kernel ahead of time"
                                : "no backend for device type %s is built into this ruda library",
                              type ? type : "?");
  void *bin = NULL;
  size_t size = 0;
  ruda__portable_compile_t job = {target,  name,       text,     len ? len : strlen(text),
                                  origin ? origin : "kernel", options, num_options};
  ruda_status_t s = b->compile_portable(&job, &bin, &size);
  if (s) return s;
  if (out_binary) {
    *out_binary = bin;
  } else {
    ruda__free(bin);
  }
  if (out_size) *out_size = size;
  return NULL;
}

ruda_status_t ruda_kernel_compile_portable(uint16_t device_type, uint32_t arch, const char *name,
                                           const char *text, size_t len, const char *origin,
                                           void **out_binary, size_t *out_size) {
  return ruda_kernel_compile_portable_with_options(device_type, arch, name, text, len, origin,
                                                   NULL, 0, out_binary, out_size);
}

/* ---- The declaration's parameters ---- */

/* Skips blanks, comments and (at a line's start) directives. */
static const char *skip_blank(const char *p, const char *end, bool *line_start) {
  while (p < end) {
    char c = *p;
    if (c == '\n') {
      *line_start = true;
      p++;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      p++;
    } else if (c == '#' && *line_start) {
      while (p < end && (*p != '\n' || p[-1] == '\\')) p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
      p += 2;
      while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) p++;
      p = p + 2 < end ? p + 2 : end;
    } else if (c == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') p++;
    } else {
      break;
    }
  }
  return p;
}

/* Skips what is not code from p: blanks, comments, directives
 * (skip_blank) and string or character literals. Returns where code starts
 * (*line_start then false), or a place at or past `end`. */
static const char *skip_noise(const char *p, const char *end, bool *line_start) {
  while (p < end) {
    const char *q = skip_blank(p, end, line_start);
    if (q != p) {
      p = q;
      continue;
    }
    char c = *p;
    *line_start = false;
    if (c != '"' && c != '\'') break;
    p++;
    while (p < end && *p != c && *p != '\n') p += *p == '\\' ? 2 : 1;
    if (p < end) p++;
  }
  return p;
}

static bool ident_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && memcmp(s, word, n) == 0;
}

typedef enum { PARAM_OTHER, PARAM_BUFFER, PARAM_SCALAR } param_kind_t;

/* What one walk of a declaration finds: the counts, and the name of the
 * `want_index`th parameter of kind `want_kind` (PARAM_OTHER: none). */
typedef struct params_walk {
  ruda__portable_params_t params;
  param_kind_t want_kind;
  uint32_t want_index;
  char name[64];
  char type[64];      /* a wanted buffer's pointer type, blanks folded */
  bool const_pointee; /* a wanted buffer's type is `const T *` (T const *) */
} params_walk_t;

/* A buffer's pointer type, RUDA_BUFFER(ptr_type, name)'s first argument in
 * [s, e) (from its '('): into w->type, and whether it points to const: a
 * `const` before the first '*' of the argument (a typedef'd pointer, with
 * no '*', is not). */
static void note_buffer_type(params_walk_t *w, const char *s, const char *e) {
  bool ls = false;
  s = skip_blank(s, e, &ls);
  if (s >= e || *s != '(') return;
  s++;
  bool saw_const = false, star = false, blank = false;
  size_t n = 0;
  int depth = 0;
  for (const char *q = s; q < e; q++) {
    char c = *q;
    if (c == '(') depth++;
    if (c == ')' && depth-- == 0) break;
    if (c == ',' && depth == 0) break;
    if (isspace((unsigned char)c)) {
      blank = n > 0;
      continue;
    }
    if (blank && n + 1 < sizeof w->type) w->type[n++] = ' ';
    blank = false;
    if (n + 1 < sizeof w->type) w->type[n++] = c;
    if (c == '*' && !star) {
      star = true;
      w->const_pointee = saw_const;
    }
    if (!star && ident_char(c) && (q == s || !ident_char(q[-1])) && (size_t)(e - q) > 5 &&
        memcmp(q, "const", 5) == 0 && !ident_char(q[5]))
      saw_const = true;
  }
  w->type[n] = '\0';
}

/* One argument of RUDA_KERNEL, [s, e): its kind from its first identifier,
 * its name the last identifier inside it. */
static void note_param(params_walk_t *w, const char *s, const char *e) {
  bool ls = false;
  s = skip_blank(s, e, &ls);
  const char *id = s;
  while (s < e && ident_char(*s)) s++;
  param_kind_t kind = ident_is(id, (size_t)(s - id), "RUDA_BUFFER")   ? PARAM_BUFFER
                      : ident_is(id, (size_t)(s - id), "RUDA_SCALAR") ? PARAM_SCALAR
                                                                      : PARAM_OTHER;
  if (kind == PARAM_OTHER) return;
  uint32_t index = kind == PARAM_BUFFER ? w->params.buffers++ : w->params.scalars++;
  if (kind != w->want_kind || index != w->want_index) return;
  if (kind == PARAM_BUFFER) note_buffer_type(w, s, e);
  const char *last = NULL, *last_end = NULL;
  for (const char *q = s; q < e;) {
    if (ident_char(*q) && !isdigit((unsigned char)*q)) {
      const char *b = q;
      while (q < e && ident_char(*q)) q++;
      last = b;
      last_end = q;
    } else {
      q++;
    }
  }
  if (last) {
    size_t n = (size_t)(last_end - last);
    if (n >= sizeof w->name) n = sizeof w->name - 1;
    memcpy(w->name, last, n);
    w->name[n] = '\0';
  }
}

/* Walks the arguments of RUDA_KERNEL(entry, ...) from just after `entry`;
 * false when the call does not close. */
static bool walk_args(params_walk_t *w, const char *p, const char *end) {
  int depth = 1;
  uint32_t arg = 1; /* 0 is the name, 1 the dims */
  const char *arg_start = p;
  bool ls = false;
  while ((p = skip_noise(p, end, &ls)) < end) {
    char c = *p;
    if (c == '(') {
      depth++;
    } else if (c == ')' || (c == ',' && depth == 1)) {
      if (c == ')' && --depth > 0) {
        p++;
        continue;
      }
      if (arg >= 2) note_param(w, arg_start, p);
      arg++;
      arg_start = p + 1;
      if (c == ')') return true;
    }
    p++;
  }
  return false;
}

static void walk_declaration(params_walk_t *w, const char *text, size_t len, const char *entry) {
  memset(&w->params, 0, sizeof w->params);
  if (!text || !entry) return;
  const char *p = text, *end = text + len;
  size_t entry_len = strlen(entry);
  bool line_start = true;
  while ((p = skip_noise(p, end, &line_start)) < end) {
    char c = *p;
    if (!ident_char(c)) {
      p++;
      continue;
    }
    const char *s = p;
    while (p < end && ident_char(*p)) p++;
    if (!ident_is(s, (size_t)(p - s), "RUDA_KERNEL")) continue;
    bool ls = false;
    const char *a = skip_blank(p, end, &ls);
    if (a >= end || *a != '(') continue;
    a = skip_blank(a + 1, end, &ls);
    const char *n = a;
    while (a < end && ident_char(*a)) a++;
    if ((size_t)(a - n) != entry_len || memcmp(n, entry, entry_len) != 0) continue;
    params_walk_t found = *w;
    if (walk_args(&found, a, end)) {
      found.params.known = true;
      *w = found;
    }
    return;
  }
}

void ruda__portable_scan_params(const char *text, size_t len, const char *entry,
                                ruda__portable_params_t *out) {
  params_walk_t w = {.want_kind = PARAM_OTHER};
  walk_declaration(&w, text, len, entry);
  *out = w.params;
}

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

ruda_status_t ruda__portable_check_args(const ruda__portable_params_t *params, const char *text,
                                        size_t len, const char *entry, size_t num_buffers,
                                        size_t num_info) {
  if (!params->known || (num_buffers == params->buffers && num_info >= params->scalars))
    return NULL;
  params_walk_t w = {.want_kind = PARAM_SCALAR, .want_index = (uint32_t)num_info};
  const char *what = "scalar";
  if (num_buffers < params->buffers) {
    w.want_kind = PARAM_BUFFER;
    w.want_index = (uint32_t)num_buffers;
    what = "buffer";
  }
  walk_declaration(&w, text, len, entry);
  char missing[128] = "";
  if (num_buffers > params->buffers)
    snprintf(missing, sizeof missing, ": %zu buffer%s too many", num_buffers - params->buffers,
             plural(num_buffers - params->buffers));
  else if (w.name[0])
    snprintf(missing, sizeof missing, ": %s '%s' has no value", what, w.name);
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "launch of '%s': the kernel declares %u buffer%s and %u scalar%s; the launch passed "
                            "%zu buffer%s and %zu info word%s%s (RUDA_LAUNCH passes them as "
                            "declared)",
                            entry, params->buffers, plural(params->buffers), params->scalars,
                            plural(params->scalars), num_buffers, plural(num_buffers), num_info,
                            plural(num_info), missing);
}

ruda_status_t ruda__portable_check_read_only(const ruda__portable_params_t *params,
                                             const char *text, size_t len, const char *entry,
                                             size_t buffer) {
  if (!params->known || buffer >= params->buffers) return NULL;
  params_walk_t w = {.want_kind = PARAM_BUFFER, .want_index = (uint32_t)buffer};
  walk_declaration(&w, text, len, entry);
  if (w.const_pointee) return NULL;
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "launch of '%s': buffer '%s' (buffer %zu) is a read-only DLPack "
                            "import, and the kernel declares it RUDA_BUFFER(%s, %s), not const, "
                            "so it may write into it (declare it RUDA_BUFFER(const T *, %s) if "
                            "the kernel only reads it)",
                            entry, w.name, buffer, w.type, w.name, w.name);
}

/* Whether one option is in the allowed set. */
static bool option_allowed(const char *o) {
  bool ok = o && o[0] == '-' && o[1] != '\0' && strchr("DIOfm", o[1]) != NULL;
  if (ok && (o[1] == 'D' || o[1] == 'I') && o[2] == '\0') ok = false;
  if (ok && strncmp(o, "-fplugin", 8) == 0) ok = false;
  for (const char *p = o; ok && *p; p++)
    if (isspace((unsigned char)*p)) ok = false;
  return ok;
}

ruda_status_t ruda__portable_check_options(const char *kernel, const char *const *options,
                                           size_t num_options) {
  for (size_t i = 0; i < num_options; i++) {
    const char *o = options ? options[i] : NULL;
    if (!option_allowed(o)) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "kernel '%s': compile option \"%s\" is not allowed (portable "
                                "kernels take -DNAME[=VALUE] and -IDIR, and for the CPU compiler "
                                "-O, -f and -m flags, each one argument without blanks)",
                                kernel ? kernel : "?", o ? o : "(null)");
    }
  }
  return NULL;
}
