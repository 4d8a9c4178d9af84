/* The files of the compiled-kernel disk cache (binary_cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log_internal.h"
#include "server/binary_cache.h"
#include "types/hasher.h"

enum {
  HEADER = 8 + 8 + 8 + 16 + 8,
  /* The first read's buffer: below malloc's mmap threshold. */
  FIRST_READ = 96 * 1024,
};
#define MAX_PAYLOAD (UINT64_C(1) << 31)

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Reads the whole file into *file (*got bytes): the header says how long
 * it is, so no read is spent finding its end. False without memory. */
static bool read_all(int fd, unsigned char **file, size_t *got) {
  size_t cap = FIRST_READ, n = 0;
  unsigned char *buf = ruda__malloc(cap);
  if (buf == NULL) return false;
  for (;;) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n < HEADER) continue;
    uint64_t want = get_u64(buf + 16) + HEADER;
    if (n >= want || want > MAX_PAYLOAD + HEADER) break;
    if (want <= cap) continue;
    unsigned char *bigger = ruda__realloc(buf, (size_t)want);
    if (bigger == NULL) {
      ruda__free(buf);
      return false;
    }
    buf = bigger;
    cap = (size_t)want;
  }
  *file = buf;
  *got = n;
  return true;
}

ruda__binary_read_t ruda__binary_cache_read(const ruda__binary_kind_t *kind, const char *path,
                                            void **payload, size_t *size, uint64_t *word,
                                            const char **why) {
  *payload = NULL;
  *size = 0;
  *word = 0;
  *why = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ELOOP) return RUDA__BINARY_READ_ABSENT;
    *why = "not a regular file";
    return RUDA__BINARY_READ_UNUSABLE;
  }
  /* The file opened, not the name: another user cannot swap it between
   * the check and the read. */
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) *why = "not a regular file";
  else if (st.st_uid != geteuid()) *why = "owned by another user";
  else if ((st.st_mode & 022) != 0) *why = "writable by others";
  if (*why != NULL) {
    close(fd);
    return RUDA__BINARY_READ_UNUSABLE;
  }
  unsigned char *file = NULL;
  size_t got = 0;
  bool read_ok = read_all(fd, &file, &got);
  close(fd);
  if (!read_ok) {
    *why = "no memory";
    return RUDA__BINARY_READ_UNUSABLE;
  }
  uint64_t fmt = got >= HEADER ? get_u64(file + 8) : 0;
  uint64_t n = got >= HEADER ? get_u64(file + 16) : 0;
  if (got < HEADER || memcmp(file, kind->magic, 8) != 0) {
    *why = got < HEADER ? "truncated" : "bad header";
  } else if (fmt != kind->format || n == 0 || n != got - HEADER) {
    *why = n > got - HEADER ? "truncated" : "unsupported format or size";
  } else {
    ruda_hash128_t sum = ruda__checksum128(file + HEADER, (size_t)n, kind->seed);
    if (sum.lo != get_u64(file + 24) || sum.hi != get_u64(file + 32)) *why = "checksum mismatch";
  }
  if (*why != NULL) {
    ruda__free(file);
    return RUDA__BINARY_READ_UNUSABLE;
  }
  *word = get_u64(file + 40);
  /* The payload moves to the front: the caller frees what it is given. */
  memmove(file, file + HEADER, (size_t)n);
  *payload = file;
  *size = (size_t)n;
  return RUDA__BINARY_READ_OK;
}

bool ruda__binary_cache_path(const char *dir, ruda_hash128_t key, const char *ext, char *path,
                             size_t cap) {
  static const char digits[] = "0123456789abcdef";
  size_t dl = strlen(dir), el = strlen(ext);
  if (dl + 1 + 32 + el + 1 > cap) return false;
  memcpy(path, dir, dl);
  char *p = path + dl;
  *p++ = '/';
  for (int i = 15; i >= 0; i--) *p++ = digits[(key.hi >> (4 * i)) & 15];
  for (int i = 15; i >= 0; i--) *p++ = digits[(key.lo >> (4 * i)) & 15];
  memcpy(p, ext, el + 1);
  return true;
}

bool ruda__binary_cache_make_dirs(const char *dir) {
  char tmp[1200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s", dir) >= sizeof tmp) {
    errno = ENAMETOOLONG;
    return false;
  }
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
    *p = '/';
  }
  return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

bool ruda__binary_cache_dir(const char *root, const char *sub, char *dir, size_t cap, char *why,
                            size_t why_cap) {
  if (why_cap) why[0] = '\0';
  if (cap) dir[0] = '\0';
  if (root == NULL || root[0] == '\0') return false;
  int n = snprintf(dir, cap, "%s/%s", root, sub);
  if (n < 0 || (size_t)n >= cap) {
    if (cap) dir[0] = '\0';
    snprintf(why, why_cap, "the compilation cache path %s/%s is too long; disk cache off", root,
             sub);
    return false;
  }
  struct stat st;
  if (!ruda__binary_cache_make_dirs(dir) || lstat(dir, &st) != 0) {
    snprintf(why, why_cap, "compilation cache directory %s cannot be created (%s); disk cache off",
             dir, strerror(errno));
  } else if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    snprintf(why, why_cap,
             "compilation cache directory %s is not the user's own folder (owner %u, mode %03o); "
             "disk cache off",
             dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
  } else if ((st.st_mode & 077) != 0 && chmod(dir, 0700) != 0) {
    snprintf(why, why_cap,
             "compilation cache directory %s is open to others (mode %03o) and cannot be made "
             "private (%s); disk cache off",
             dir, (unsigned)(st.st_mode & 0777), strerror(errno));
  } else {
    return true;
  }
  dir[0] = '\0';
  return false;
}

static bool write_all(int fd, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    len -= (size_t)w;
  }
  return true;
}

ruda__binary_write_t ruda__binary_cache_write(const ruda__binary_kind_t *kind, const char *dir,
                                              const char *path, uint64_t word, const void *bin,
                                              size_t size) {
  if (!ruda__binary_cache_make_dirs(dir)) return RUDA__BINARY_WRITE_NO_DIRECTORY;
  char tmp[1300];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
    errno = ENAMETOOLONG;
    return RUDA__BINARY_WRITE_NOT_WRITABLE;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return RUDA__BINARY_WRITE_NOT_WRITABLE;
  unsigned char h[HEADER];
  memcpy(h, kind->magic, 8);
  put_u64(h + 8, kind->format);
  put_u64(h + 16, size);
  ruda_hash128_t sum = ruda__checksum128(bin, size, kind->seed);
  put_u64(h + 24, sum.lo);
  put_u64(h + 32, sum.hi);
  put_u64(h + 40, word);
  bool ok = write_all(fd, h, HEADER) && write_all(fd, bin, size);
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    unlink(tmp);
    errno = saved;
    return RUDA__BINARY_WRITE_FAILED;
  }
  return RUDA__BINARY_WRITE_OK;
}

bool ruda__binary_cache_write_problem(ruda__binary_write_t w, const char *dir, const char *path,
                                      char *buf, size_t cap) {
  const char *err = strerror(errno);
  switch (w) {
    case RUDA__BINARY_WRITE_NO_DIRECTORY:
      snprintf(buf, cap, "compilation cache directory %s cannot be created (%s); disk cache off",
               dir, err);
      return true;
    case RUDA__BINARY_WRITE_NOT_WRITABLE:
      snprintf(buf, cap, "compilation cache %s is not writable (%s); disk cache off", dir, err);
      return true;
    case RUDA__BINARY_WRITE_FAILED:
    case RUDA__BINARY_WRITE_OK:
      break;
  }
  snprintf(buf, cap, "writing compilation cache entry %s failed (%s); skipping it", path, err);
  return false;
}

void *ruda__binary_cache_load(const ruda__binary_kind_t *kind, const char *path, size_t *size,
                              uint64_t *word, const char *who, _Atomic uint64_t *skips) {
  void *bin = NULL;
  const char *why = NULL;
  ruda__binary_read_t r = ruda__binary_cache_read(kind, path, &bin, size, word, &why);
  if (r == RUDA__BINARY_READ_UNUSABLE) {
    atomic_fetch_add(skips, 1);
    ruda__warn(who, "compilation cache entry %s is unusable (%s); skipping it", path, why);
  }
  return r == RUDA__BINARY_READ_OK ? bin : NULL;
}

bool ruda__binary_cache_store(const ruda__binary_kind_t *kind, const char *dir, const char *path,
                              uint64_t word, const void *bin, size_t size, const char *who,
                              _Atomic uint64_t *writes, bool *disable) {
  ruda__binary_write_t w = ruda__binary_cache_write(kind, dir, path, word, bin, size);
  if (w == RUDA__BINARY_WRITE_OK) {
    if (writes != NULL) atomic_fetch_add(writes, 1);
    return true;
  }
  char why[2600];
  if (ruda__binary_cache_write_problem(w, dir, path, why, sizeof why) && disable != NULL)
    *disable = true;
  ruda__warn(who, "%s", why);
  return false;
}
