/* The tune cache on disk: one text file per (device, operation, key
 * bucket) in <compile cache directory>/tune, named by a hash of those
 * three. A file reads
 *
 *   ruda-tune 1
 *   version 0.1.0
 *   device cpu:0 | <name> | <backend information>
 *   op matmul_f32
 *   candidates <32 hex digits: the candidate set's hash>
 *   bucket 3 1024 1024 1024
 *   key m=1024 n=1024 k=1024
 *   rank 3 mm_t32 mm_t16 mm_t8
 *   scores mm_t32=1.234ms(+2%) mm_t16=2.5ms(+1%) mm_bad=excluded: ...
 *   spent_ms 812.5
 *   check <16 hex digits: checksum of the lines above>
 *
 * and an export file is such records one after the other. The version
 * and the candidate set are not part of the file's name: a record of
 * another version or candidate set sits where the new decision goes, is
 * ignored when read, and is replaced when the key is tuned again. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/json.h"
#include "ruda/log.h"
#include "server/binary_cache.h"
#include "tune/tune_internal.h"

enum { FILE_MAX = 1 << 20 };

/* A warning on the autotune channel, as JSON like its other lines:
 * {"warning":"..."}. */
static void warn(const char *fmt, const char *a, const char *b) {
  if (!ruda_log_enabled(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC)) return;
  char text[1200], quoted[2600];
  snprintf(text, sizeof text, fmt, a, b);
  ruda__json_escape(text, quoted, sizeof quoted);
  ruda_log(RUDA_LOG_CHANNEL_AUTOTUNE, RUDA_LOG_LEVEL_BASIC, "{\"warning\":%s}", quoted);
}

bool ruda__tune_cache_path(const char *dir, const char *device, const char *op,
                           const ruda_tune_key_t *bucket, char *path, size_t cap) {
  size_t dl = strlen(device), ol = strlen(op);
  size_t n = dl + 1 + ol + 1 + 4 + bucket->len * 8;
  unsigned char buf[1024];
  if (n > sizeof buf) return false;
  size_t at = 0;
  memcpy(buf + at, device, dl + 1);
  at += dl + 1;
  memcpy(buf + at, op, ol + 1);
  at += ol + 1;
  memcpy(buf + at, &bucket->len, 4);
  at += 4;
  memcpy(buf + at, bucket->v, bucket->len * 8);
  at += bucket->len * 8;
  ruda_hash128_t h = ruda_hash128(buf, at, 0x74756e65u);
  int w = snprintf(path, cap, "%s/%016llx%016llx.tune", dir, (unsigned long long)h.hi,
                   (unsigned long long)h.lo);
  return w > 0 && (size_t)w < cap;
}

/* ---- text ---- */

/* Text made of printf pieces: each formatted by ruda__vasprintf, then
 * appended (one realloc a piece: a record has a dozen, an export one a
 * record). */
typedef struct {
  char *p;
  size_t len;
  bool oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  char *piece = ruda__vasprintf(fmt, ap);
  va_end(ap);
  size_t n = piece ? strlen(piece) : 0;
  char *np = piece ? ruda__realloc(b->p, b->len + n + 1) : NULL;
  if (np) {
    memcpy(np + b->len, piece, n + 1);
    b->p = np;
    b->len += n;
  } else {
    b->oom = true;
  }
  ruda__free(piece);
}

static uint64_t text_check(const char *p, size_t n) {
  return ruda_hash128(p, n, 0x636865636bu).lo;
}

char *ruda__tune_record_format(const ruda__tune_record_t *r) {
  sbuf_t b = {0};
  sb_printf(&b, "ruda-tune 1\nversion %s\ndevice %s\nop %s\ncandidates %s\nbucket %u", r->version,
            r->device, r->op, r->candidates, r->bucket.len);
  for (uint32_t i = 0; i < r->bucket.len; i++)
    sb_printf(&b, " %llu", (unsigned long long)r->bucket.v[i]);
  sb_printf(&b, "\nkey %s\nrank %u", r->key_text, r->num_rank);
  for (uint32_t i = 0; i < r->num_rank; i++) sb_printf(&b, " %s", r->rank[i]);
  sb_printf(&b, "\nscores %s\nspent_ms %.3f\n", r->scores, r->spent_ms);
  if (b.oom) {
    ruda__free(b.p);
    return NULL;
  }
  uint64_t c = text_check(b.p, b.len);
  sb_printf(&b, "check %016llx\n", (unsigned long long)c);
  if (b.oom) {
    ruda__free(b.p);
    return NULL;
  }
  return b.p;
}

/* The value of the line "name value\n" at *p (advanced past it) into
 * out[cap]; false when the line is not that, or too long. */
static bool take_line(const char **p, const char *end, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  const char *s = *p;
  if ((size_t)(end - s) < nl + 1 || memcmp(s, name, nl) != 0 || s[nl] != ' ') return false;
  s += nl + 1;
  const char *eol = memchr(s, '\n', (size_t)(end - s));
  if (!eol || (size_t)(eol - s) >= cap) return false;
  memcpy(out, s, (size_t)(eol - s));
  out[eol - s] = '\0';
  *p = eol + 1;
  return true;
}

bool ruda__tune_record_parse(const char *text, size_t len, ruda__tune_record_t *out,
                             size_t *used, const char **why) {
  memset(out, 0, sizeof *out);
  const char *p = text, *end = text + len;
  char line[2048];
  *why = "truncated";
  if (!take_line(&p, end, "ruda-tune", line, sizeof line)) {
    *why = p == end ? "empty" : "not a tune cache record";
    return false;
  }
  if (strcmp(line, "1") != 0) {
    *why = "unknown record format";
    return false;
  }
  if (!take_line(&p, end, "version", out->version, sizeof out->version) ||
      !take_line(&p, end, "device", out->device, sizeof out->device) ||
      !take_line(&p, end, "op", out->op, sizeof out->op) ||
      !take_line(&p, end, "candidates", out->candidates, sizeof out->candidates) ||
      !take_line(&p, end, "bucket", line, sizeof line))
    return false;
  char *q = line, *e;
  unsigned long n = strtoul(q, &e, 10);
  if (e == q || n > RUDA_TUNE_KEY_MAX) {
    *why = "bad bucket";
    return false;
  }
  out->bucket.len = (uint32_t)n;
  for (unsigned long i = 0; i < n; i++) {
    q = e;
    out->bucket.v[i] = strtoull(q, &e, 10);
    if (e == q) {
      *why = "bad bucket";
      return false;
    }
  }
  if (!take_line(&p, end, "key", out->key_text, sizeof out->key_text) ||
      !take_line(&p, end, "rank", line, sizeof line))
    return false;
  q = line;
  n = strtoul(q, &e, 10);
  if (e == q || n > RUDA__TUNE_MAX_CANDIDATES) {
    *why = "bad rank";
    return false;
  }
  out->num_rank = (uint32_t)n;
  for (unsigned long i = 0; i < n; i++) {
    while (*e == ' ') e++;
    size_t l = strcspn(e, " ");
    if (l == 0 || l >= sizeof out->rank[0]) {
      *why = "bad rank";
      return false;
    }
    memcpy(out->rank[i], e, l);
    out->rank[i][l] = '\0';
    e += l;
  }
  if (!take_line(&p, end, "scores", out->scores, sizeof out->scores) ||
      !take_line(&p, end, "spent_ms", line, sizeof line))
    return false;
  out->spent_ms = strtod(line, NULL);
  size_t body = (size_t)(p - text);
  if (!take_line(&p, end, "check", line, sizeof line)) return false;
  char want[32];
  snprintf(want, sizeof want, "%016llx", (unsigned long long)text_check(text, body));
  if (strcmp(want, line) != 0) {
    *why = "checksum mismatch";
    return false;
  }
  *used = (size_t)(p - text);
  return true;
}

/* ---- files ---- */

static char *read_all(const char *path, size_t *len, bool *absent) {
  *absent = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *absent = errno == ENOENT;
    return NULL;
  }
  struct stat sb;
  char *buf = NULL;
  if (fstat(fd, &sb) == 0 && sb.st_size >= 0 && sb.st_size <= FILE_MAX)
    buf = ruda__malloc((size_t)sb.st_size + 1);
  size_t at = 0;
  if (buf) {
    while (at < (size_t)sb.st_size) {
      ssize_t r = read(fd, buf + at, (size_t)sb.st_size - at);
      if (r <= 0) break;
      at += (size_t)r;
    }
    buf[at] = '\0';
  }
  close(fd);
  *len = at;
  return buf;
}

int ruda__tune_cache_read(const char *path, ruda__tune_record_t *out) {
  size_t len = 0;
  bool absent = false;
  char *text = read_all(path, &len, &absent);
  if (!text) {
    if (!absent) warn("tune cache: ignoring %s: %s", path, "cannot be read");
    return absent ? 0 : -1;
  }
  size_t used = 0;
  const char *why = NULL;
  bool ok = ruda__tune_record_parse(text, len, out, &used, &why);
  if (ok && used != len) {
    ok = false;
    why = "trailing bytes";
  }
  ruda__free(text);
  if (!ok) {
    warn("tune cache: ignoring %s: %s (corrupt or truncated)", path, why);
    return -1;
  }
  return 1;
}

static _Atomic unsigned g_tmp_counter;

/* Writes `n` bytes to `path` through a temporary file of mode `mode`
 * renamed into place; `dir` and its missing parents are made first, with
 * the compile cache's policy (server/binary_cache.h: folders 0700; its
 * files are 0600, as the tune cache's entries). */
static bool write_atomic(const char *dir, const char *path, const char *data, size_t n,
                         mode_t mode) {
  if (!ruda__binary_cache_make_dirs(dir)) return false;
  char tmp[RUDA_CONFIG_PATH_MAX + 96];
  unsigned k = atomic_fetch_add(&g_tmp_counter, 1);
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), k) >= sizeof tmp)
    return false;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return false;
  size_t at = 0;
  while (at < n) {
    ssize_t w = write(fd, data + at, n - at);
    if (w <= 0) break;
    at += (size_t)w;
  }
  bool ok = at == n;
  if (close(fd) != 0) ok = false;
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) unlink(tmp);
  return ok;
}

bool ruda__tune_cache_write(const char *dir, const char *path, const ruda__tune_record_t *r) {
  char *text = ruda__tune_record_format(r);
  bool ok = text && write_atomic(dir, path, text, strlen(text), 0600);
  if (!ok) warn("tune cache: cannot write %s (%s); the decision stays in memory", path,
                text ? strerror(errno) : "out of memory");
  ruda__free(text);
  return ok;
}

/* ---- public ---- */

size_t ruda_tune_cache_dir(char *buf, size_t cap) {
  const ruda_config_t *cfg = ruda_config_get();
  char dir[RUDA_CONFIG_PATH_MAX];
  size_t n = ruda_config_cache_dir(cfg, dir, sizeof dir);
  if (!cfg->autotune.cache || n == 0 || n >= sizeof dir) {
    if (cap) buf[0] = '\0';
    return 0;
  }
  int w = snprintf(buf, cap, "%s/tune", dir);
  return w < 0 ? 0 : (size_t)w;
}

static ruda_status_t io_error(const char *what, const char *path) {
  return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "tune cache: %s %s: %s", what, path,
                            strerror(errno ? errno : EIO));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry files of the cache, sorted (ruda__malloc'ed names; *n of them).
 * NULL with *n 0 and no error when there is no cache or folder. */
static ruda_status_t list_files(char *dir, size_t dir_cap, char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t dl = ruda_tune_cache_dir(dir, dir_cap);
  if (dl == 0 || dl >= dir_cap) return NULL;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? NULL : io_error("cannot read the folder", dir);
  char **names = NULL;
  size_t cap = 0;
  struct dirent *e;
  ruda_status_t st = NULL;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".tune") != 0) continue;
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      char **nn = ruda__realloc(names, nc * sizeof *nn);
      if (!nn) {
        st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
        break;
      }
      names = nn;
      cap = nc;
    }
    names[*n] = ruda__strdup(e->d_name);
    if (!names[*n]) {
      st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
      break;
    }
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(names, *n, sizeof *names, cmp_str);
  *out = names;
  return st;
}

static void free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) ruda__free(names[i]);
  ruda__free(names);
}

/* Calls fn(path, record, ctx, &st) for every whole entry of the cache (the
 * others are skipped), until it returns false. */
static ruda_status_t each_record(bool (*fn)(const char *path, const ruda__tune_record_t *r,
                                            void *ctx, ruda_status_t *st),
                                 void *ctx) {
  char dir[RUDA_CONFIG_PATH_MAX + 8];
  char **names;
  size_t n;
  ruda_status_t st = list_files(dir, sizeof dir, &names, &n);
  ruda__tune_record_t *r = ruda__malloc(sizeof *r);
  if (!r && !st) st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    char path[RUDA_CONFIG_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (ruda__tune_cache_read(path, r) != 1) continue;
    if (!fn(path, r, ctx, &st)) break;
  }
  ruda__free(r);
  free_names(names, n);
  return st;
}

typedef struct list_ctx {
  bool (*fn)(const ruda_tune_entry_info_t *entry, void *ctx);
  void *ctx;
} list_ctx_t;

static bool list_one(const char *path, const ruda__tune_record_t *r, void *arg,
                     ruda_status_t *st) {
  (void)st;
  list_ctx_t *l = arg;
  ruda_tune_entry_info_t info = {path, r->device, r->version, r->op, r->key_text,
                                 r->num_rank ? r->rank[0] : "", r->scores, r->spent_ms};
  return l->fn(&info, l->ctx);
}

ruda_status_t ruda_tune_cache_list(bool (*fn)(const ruda_tune_entry_info_t *entry, void *ctx),
                                   void *ctx) {
  if (!fn) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_tune_cache_list: fn is NULL");
  list_ctx_t l = {fn, ctx};
  return each_record(list_one, &l);
}

ruda_status_t ruda_tune_cache_clear(size_t *out_removed) {
  if (out_removed) *out_removed = 0;
  char dir[RUDA_CONFIG_PATH_MAX + 8];
  char **names;
  size_t n;
  ruda_status_t st = list_files(dir, sizeof dir, &names, &n);
  for (size_t i = 0; i < n && !st; i++) {
    char path[RUDA_CONFIG_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      st = io_error("cannot remove", path);
    else if (out_removed)
      (*out_removed)++;
  }
  free_names(names, n);
  return st;
}

/* The file argument of export and import (`fn`); zeroes *out_count. */
static ruda_status_t file_arg(const char *fn, const char *path, size_t *out_count) {
  if (out_count) *out_count = 0;
  if (!path || !*path)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: path is NULL or empty", fn);
  return NULL;
}

typedef struct export_ctx {
  sbuf_t b;
  size_t count;
} export_ctx_t;

static bool export_one(const char *path, const ruda__tune_record_t *r, void *arg,
                       ruda_status_t *st) {
  (void)path;
  export_ctx_t *e = arg;
  char *t = ruda__tune_record_format(r);
  if (!t) {
    *st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
    return false;
  }
  sb_printf(&e->b, "%s", t);
  ruda__free(t);
  e->count++;
  return true;
}

ruda_status_t ruda_tune_cache_export(const char *path, size_t *out_count) {
  ruda_status_t st = file_arg("ruda_tune_cache_export", path, out_count);
  if (st) return st;
  export_ctx_t e = {{0}, 0};
  st = each_record(export_one, &e);
  sbuf_t b = e.b;
  size_t count = e.count;
  if (!st && b.oom) st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
  if (!st) {
    char pdir[RUDA_CONFIG_PATH_MAX];
    snprintf(pdir, sizeof pdir, "%s", path);
    char *slash = strrchr(pdir, '/');
    if (slash) *slash = '\0';
    else snprintf(pdir, sizeof pdir, ".");
    errno = 0;
    /* An export is the user's file to ship: 0644 (less the umask). */
    if (!write_atomic(slash && slash == pdir ? "/" : pdir, path, b.p ? b.p : "", b.len, 0644))
      st = io_error("cannot write", path);
  }
  ruda__free(b.p);
  if (!st && out_count) *out_count = count;
  return st;
}

ruda_status_t ruda_tune_cache_import(const char *path, size_t *out_count) {
  ruda_status_t bad = file_arg("ruda_tune_cache_import", path, out_count);
  if (bad) return bad;
  char dir[RUDA_CONFIG_PATH_MAX + 8];
  size_t dl = ruda_tune_cache_dir(dir, sizeof dir);
  if (dl == 0 || dl >= sizeof dir)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_tune_cache_import: there is no tune cache ([autotune] cache "
                              "is off, or compilation.cache is \"none\")");
  size_t len = 0;
  bool absent = false;
  char *text = read_all(path, &len, &absent);
  if (!text) return io_error("cannot read", path);
  ruda__tune_record_t *recs = NULL;
  size_t n = 0, cap = 0, at = 0;
  ruda_status_t st = NULL;
  while (at < len && !st) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 8;
      ruda__tune_record_t *nr = ruda__realloc(recs, nc * sizeof *nr);
      if (!nr) {
        st = ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "tune cache: out of memory");
        break;
      }
      recs = nr;
      cap = nc;
    }
    size_t used = 0;
    const char *why = NULL;
    if (!ruda__tune_record_parse(text + at, len - at, &recs[n], &used, &why)) {
      st = ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "tune cache: cannot import %s: entry %zu (byte %zu) is %s; "
                              "nothing was imported",
                              path, n + 1, at, why);
      break;
    }
    at += used;
    n++;
  }
  ruda__free(text);
  for (size_t i = 0; i < n && !st; i++) {
    char file[RUDA_CONFIG_PATH_MAX + 300];
    if (!ruda__tune_cache_path(dir, recs[i].device, recs[i].op, &recs[i].bucket, file,
                               sizeof file) ||
        !ruda__tune_cache_write(dir, file, &recs[i]))
      st = io_error("cannot write", file);
  }
  ruda__free(recs);
  if (!st && out_count) *out_count = n;
  return st;
}
