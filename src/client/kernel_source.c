/* ruda_kernel_from_file and ruda_kernel_from_text (ruda/kernel.h): a
 * portable kernel built from a kernel file read at run time. The text is
 * made as the build-time embed step makes it (base/kernel_text.h), and the
 * kernel is one portable code entry without a cpu_fn: every backend
 * compiles the text (cpu:N through backends/cpu/cpu_compile.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/kernel_text.h"
#include "ruda/kernel.h"
#include "server/portable_kernel.h"

static ruda_status_t invalid(const char *fmt, const char *a, const char *b) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, fmt, a, b);
}

/* The value of NAME from a -DNAME=VALUE option or a `#define NAME VALUE`
 * line of the text, when it is a whole number; false otherwise. */
static bool constant_of(const char *name, size_t n, const ruda_kernel_source_t *src,
                        const char *text, uint32_t *out) {
  const char *val = NULL;
  for (size_t i = src->num_options; i-- > 0 && !val;) {
    const char *o = src->options[i];
    if (strncmp(o, "-D", 2) == 0 && strncmp(o + 2, name, n) == 0 && o[2 + n] == '=')
      val = o + 3 + n;
  }
  if (!val) {
    for (const char *p = text; (p = strstr(p, "#define")) != NULL; p += 7) {
      const char *q = p + 7;
      while (*q == ' ' || *q == '\t') q++;
      if (strncmp(q, name, n) != 0 || (q[n] != ' ' && q[n] != '\t')) continue;
      q += n;
      while (*q == ' ' || *q == '\t') q++;
      val = q;
    }
  }
  if (!val) return false;
  while (*val == '(' || *val == ' ') val++;
  char *end = NULL;
  unsigned long long v = strtoull(val, &end, 0);
  if (end == val || v == 0 || v > UINT32_MAX) return false;
  while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L' || *end == ')') end++;
  if (*end && !isspace((unsigned char)*end)) return false;
  *out = (uint32_t)v;
  return true;
}

/* The kernel's dims from its declaration's second argument. */
static bool parse_dims(const char *dims, const ruda_kernel_source_t *src, const char *text,
                       ruda_dim_t *out, bool *any) {
  const char *p = dims;
  while (isspace((unsigned char)*p)) p++;
  *any = false;
  if (strncmp(p, "RUDA_DIM_ANY", 12) == 0) {
    *any = true;
    return true;
  }
  if (strncmp(p, "RUDA_DIM", 8) != 0) return false;
  p += 8;
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != '(') return false;
  uint32_t v[3];
  for (int i = 0; i < 3; i++) {
    while (isspace((unsigned char)*p)) p++;
    const char *s = p;
    while (*p && *p != ',' && *p != ')') p++;
    const char *e = p;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    if (e == s) return false;
    char *end = NULL;
    unsigned long long n = strtoull(s, &end, 0);
    if (end != s) {
      while (end < e && (*end == 'u' || *end == 'U')) end++;
      if (end != e || n == 0 || n > UINT32_MAX) return false;
      v[i] = (uint32_t)n;
    } else if (!constant_of(s, (size_t)(e - s), src, text, &v[i])) {
      return false;
    }
    if (*p != (i == 2 ? ')' : ',')) return false;
    p++;
  }
  *out = ruda_dim_new_3d(v[0], v[1], v[2]);
  return true;
}

static ruda_status_t create(ruda_tools_kernel_text_t *t, const ruda_kernel_source_t *src,
                            ruda_kernel_t **out) {
  const ruda_tools_kernel_decl_t *decl = NULL;
  if (src->entry) {
    for (size_t i = 0; i < t->num_kernels && !decl; i++)
      if (strcmp(t->kernels[i].name, src->entry) == 0) decl = &t->kernels[i];
  } else if (t->num_kernels == 1) {
    decl = &t->kernels[0];
  }
  if (!decl) {
    char names[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < t->num_kernels && used < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                               t->kernels[i].name);
    if (src->entry) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "%s declares no kernel '%s' (it declares: %s)", t->path,
                                src->entry, names[0] ? names : "none");
    }
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s declares %zu kernels (%s): name the one to create in "
                              "ruda_kernel_source_t.entry",
                              t->path, t->num_kernels, names[0] ? names : "none");
  }
  ruda_dim_t dim = src->ruda_dim;
  bool any = false;
  ruda_dim_t declared;
  if (!parse_dims(decl->dims, src, t->text, &declared, &any)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s:%u: kernel '%s': ruda cannot read its dims \"%s\" (write "
                              "RUDA_DIM(x, y, z) with whole numbers or names given by a -D "
                              "option or a #define, or RUDA_DIM_ANY)",
                              t->path, decl->line, decl->name, decl->dims);
  }
  if (any) {
    if (!dim.x || !dim.y || !dim.z) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "%s:%u: kernel '%s' is declared with RUDA_DIM_ANY: give its "
                                "dims in ruda_kernel_source_t.ruda_dim",
                                t->path, decl->line, decl->name);
    }
  } else if ((dim.x || dim.y || dim.z) &&
             (dim.x != declared.x || dim.y != declared.y || dim.z != declared.z)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s:%u: kernel '%s' declares dims (%u, %u, %u); "
                              "ruda_kernel_source_t.ruda_dim asks for (%u, %u, %u)",
                              t->path, decl->line, decl->name, declared.x, declared.y,
                              declared.z, dim.x, dim.y, dim.z);
  } else {
    dim = declared;
  }
  ruda_kernel_code_t code = {RUDA_KERNEL_FORMAT_PORTABLE, t->text, t->len, NULL, decl->name,
                             src->options, src->num_options, t->path};
  ruda_kernel_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.name = decl->name;
  desc.ruda_dim = dim;
  desc.shared_mem_bytes = src->shared_mem_bytes;
  desc.code = &code;
  desc.num_code = 1;
  return ruda_kernel_create(&desc, out);
}

/* Checks the arguments and gathers the -I folders (pointers into the
 * options; *dirs is malloc'ed). */
static ruda_status_t prepare(const char *what, const ruda_kernel_source_t *src,
                             ruda_kernel_t **out, const char ***dirs, size_t *num_dirs) {
  *dirs = NULL;
  *num_dirs = 0;
  if (!src || !out) return invalid("%s: NULL %s", what, !src ? "src" : "out");
  *out = NULL;
  if (src->num_options && !src->options) return invalid("%s: %s", what, "num_options without options");
  ruda_status_t err = ruda__portable_check_options(src->entry ? src->entry : what, src->options,
                                                   src->num_options);
  if (err) return err;
  if (src->num_options) {
    *dirs = malloc(src->num_options * sizeof **dirs);
    if (!*dirs) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "%s", what);
    for (size_t i = 0; i < src->num_options; i++)
      if (strncmp(src->options[i], "-I", 2) == 0) (*dirs)[(*num_dirs)++] = src->options[i] + 2;
  }
  return NULL;
}

/* The kernel of the file at path `from` (from_file), or of the text
 * `from` of `len` bytes named `origin`: the body of ruda_kernel_from_file
 * and ruda_kernel_from_text, `what` naming the call. */
static ruda_status_t from_file_or_text(const char *what, bool from_file, const char *from,
                                       size_t len, const char *origin,
                                       const ruda_kernel_source_t *src, ruda_kernel_t **out) {
  if (!from) {
    if (out) *out = NULL;
    return invalid("%s: NULL %s", what, from_file ? "path" : "text");
  }
  const char **dirs = NULL;
  size_t nd = 0;
  ruda_status_t err = prepare(what, src, out, &dirs, &nd);
  if (err) return err;
  ruda_tools_kernel_text_t t;
  char msg[1024];
  bool loaded = from_file ? ruda_tools_kernel_text_load(from, dirs, nd, &t, msg, sizeof msg)
                          : ruda_tools_kernel_text_from_memory(from, len ? len : strlen(from),
                                                               origin, dirs, nd, &t, msg,
                                                               sizeof msg);
  free(dirs);
  if (!loaded) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s", what, msg);
  err = create(&t, src, out);
  ruda_tools_kernel_text_free(&t);
  return err;
}

ruda_status_t ruda_kernel_from_file(const char *path, const ruda_kernel_source_t *src,
                                    ruda_kernel_t **out) {
  return from_file_or_text("ruda_kernel_from_file", true, path, 0, NULL, src, out);
}

ruda_status_t ruda_kernel_from_text(const char *text, size_t len, const char *origin,
                                    const ruda_kernel_source_t *src, ruda_kernel_t **out) {
  return from_file_or_text("ruda_kernel_from_text", false, text, len, origin, src, out);
}
