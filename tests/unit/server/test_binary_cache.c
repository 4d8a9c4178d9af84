/* The disk cache's file format (server/binary_cache.h): a round trip keeps
 * payload and word; a missing file is absent; every damaged file (short,
 * foreign magic, other format, wrong size, flipped payload byte) is
 * unusable with its reason; a write creates the directories and leaves no
 * temporary behind; a directory that cannot be made is reported; the
 * policy: folders 0700, files 0600, only the user's own files read. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "server/binary_cache.h"
#include "test.h"

static const ruda__binary_kind_t kind = {"RUDATST1", 7, 0x1234};

static void make_root(char *dir, size_t cap) {
  static int n;
  snprintf(dir, cap, "%s/binary-cache-%ld-%ld-%d", rt_tmpdir(), (long)getpid(), (long)time(NULL),
           n++);
}

static unsigned char *file_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *b = malloc(1 << 20);
  *len = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}

static void put_bytes(const char *path, const unsigned char *b, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(b, 1, len, f);
  fclose(f);
}

static ruda__binary_read_t read_back(const char *path, const char **why) {
  void *p = NULL;
  size_t size = 0;
  uint64_t word = 0;
  ruda__binary_read_t r = ruda__binary_cache_read(&kind, path, &p, &size, &word, why);
  ruda__free(p);
  return r;
}

TEST(binary_cache_round_trip_keeps_payload_and_word) {
  char root[512], dir[600], path[700];
  make_root(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/a/b", root);
  snprintf(path, sizeof path, "%s/entry.bin", dir);
  unsigned char payload[200000]; /* larger than the first read's buffer */
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)(i * 31 + 7);
  ASSERT_EQ(ruda__binary_cache_write(&kind, dir, path, 0xfeedULL, payload, sizeof payload),
            RUDA__BINARY_WRITE_OK);
  void *p = NULL;
  size_t size = 0;
  uint64_t word = 0;
  const char *why = "unset";
  ASSERT_EQ(ruda__binary_cache_read(&kind, path, &p, &size, &word, &why), RUDA__BINARY_READ_OK);
  ASSERT_UEQ(size, sizeof payload);
  ASSERT_UEQ(word, 0xfeedULL);
  ASSERT_NULL(why);
  ASSERT_MEM_EQ(p, payload, sizeof payload);
  ruda__free(p);
  /* Nothing but the entry is left in the directory. */
  DIR *d = opendir(dir);
  ASSERT_NOT_NULL(d);
  int files = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') files++;
  closedir(d);
  ASSERT_EQ(files, 1);
}

TEST(binary_cache_missing_file_is_absent) {
  char root[512], path[600];
  make_root(root, sizeof root);
  snprintf(path, sizeof path, "%s/none.bin", root);
  const char *why = NULL;
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_ABSENT);
  ASSERT_NULL(why);
}

TEST(binary_cache_damaged_files_are_unusable_with_a_reason) {
  char root[512], path[600];
  make_root(root, sizeof root);
  snprintf(path, sizeof path, "%s/e.bin", root);
  const unsigned char payload[100] = {1, 2, 3, 4, 5};
  ASSERT_EQ(ruda__binary_cache_write(&kind, root, path, 1, payload, sizeof payload),
            RUDA__BINARY_WRITE_OK);
  size_t len = 0;
  unsigned char *good = file_bytes(path, &len);
  ASSERT_NOT_NULL(good);
  ASSERT_UEQ(len, 48 + sizeof payload);
  unsigned char *b = malloc(len);
  const char *why = NULL;

  put_bytes(path, good, 20); /* shorter than the header */
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "truncated");

  put_bytes(path, good, len - 1); /* the payload cut short */
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "truncated");

  memcpy(b, good, len);
  b[0] ^= 1; /* another kind's magic */
  put_bytes(path, b, len);
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "bad header");

  memcpy(b, good, len);
  b[8] ^= 1; /* another format */
  put_bytes(path, b, len);
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "unsupported format or size");

  memcpy(b, good, len);
  b[48 + 50] ^= 0x40; /* one payload bit */
  put_bytes(path, b, len);
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "checksum mismatch");

  put_bytes(path, good, len); /* and the intact file reads again */
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_OK);
  free(b);
  free(good);
}

TEST(binary_cache_directory_that_cannot_be_made_is_reported) {
  char root[512], file[600], dir[700], path[800];
  make_root(root, sizeof root);
  ASSERT_EQ(mkdir(root, 0755), 0);
  snprintf(file, sizeof file, "%s/plain-file", root);
  put_bytes(file, (const unsigned char *)"x", 1);
  snprintf(dir, sizeof dir, "%s/sub", file); /* under a regular file */
  snprintf(path, sizeof path, "%s/e.bin", dir);
  const unsigned char payload[4] = {9, 9, 9, 9};
  ASSERT_EQ(ruda__binary_cache_write(&kind, dir, path, 0, payload, sizeof payload),
            RUDA__BINARY_WRITE_NO_DIRECTORY);
  char text[2000];
  ASSERT_TRUE(ruda__binary_cache_write_problem(RUDA__BINARY_WRITE_NO_DIRECTORY, dir, path, text,
                                               sizeof text));
  ASSERT_STR_CONTAINS(text, dir);
  ASSERT_STR_CONTAINS(text, "disk cache off");
  ASSERT_FALSE(ruda__binary_cache_write_problem(RUDA__BINARY_WRITE_FAILED, dir, path, text,
                                                sizeof text));
  ASSERT_STR_CONTAINS(text, path);
  ASSERT_STR_CONTAINS(text, "skipping it");
  const char *why = NULL;
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_ABSENT);
}

TEST(binary_cache_path_names_the_key_in_hex_and_refuses_what_does_not_fit) {
  ruda_hash128_t key = {UINT64_C(0x0123456789abcdef), UINT64_C(0xfedcba9876543210)};
  char path[64];
  ASSERT_TRUE(ruda__binary_cache_path("/c/cuda", key, ".cubin", path, sizeof path));
  ASSERT_STR_EQ(path, "/c/cuda/fedcba98765432100123456789abcdef.cubin");
  /* Exactly the length it needs, with its NUL, fits; one byte less does
   * not, and nothing past the buffer is written. */
  size_t need = strlen("/c/cuda/") + 32 + strlen(".cubin") + 1;
  char tight[80];
  memset(tight, 'x', sizeof tight);
  ASSERT_TRUE(ruda__binary_cache_path("/c/cuda", key, ".cubin", tight, need));
  ASSERT_UEQ(strlen(tight), need - 1);
  memset(tight, 'x', sizeof tight);
  ASSERT_FALSE(ruda__binary_cache_path("/c/cuda", key, ".cubin", tight, need - 1));
  ASSERT_TRUE(tight[need - 1] == 'x');
}

/* The policy: a written entry is 0600 in a 0700 folder; a file another
 * user owns, one others may write or a link is refused with its reason. */
TEST(binary_cache_files_are_private_and_only_the_user_s_are_read) {
  char root[512], dir[600], path[700], link[800];
  make_root(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/sub", root);
  snprintf(path, sizeof path, "%s/e.bin", dir);
  const unsigned char payload[16] = {1, 2, 3};
  ASSERT_EQ(ruda__binary_cache_write(&kind, dir, path, 0, payload, sizeof payload),
            RUDA__BINARY_WRITE_OK);
  struct stat st;
  ASSERT_EQ(stat(dir, &st), 0);
  ASSERT_UEQ(st.st_mode & 0777, 0700);
  ASSERT_EQ(stat(root, &st), 0);
  ASSERT_UEQ(st.st_mode & 0777, 0700);
  ASSERT_EQ(stat(path, &st), 0);
  ASSERT_UEQ(st.st_mode & 0777, 0600);
  const char *why = NULL;
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_OK);

  ASSERT_EQ(chmod(path, 0622), 0);
  ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "writable by others");
  ASSERT_EQ(chmod(path, 0600), 0);

  snprintf(link, sizeof link, "%s/link.bin", dir);
  ASSERT_EQ(symlink(path, link), 0);
  ASSERT_EQ(read_back(link, &why), RUDA__BINARY_READ_UNUSABLE);
  ASSERT_STR_EQ(why, "not a regular file");

  if (chown(path, 65534, 65534) == 0) {
    ASSERT_EQ(read_back(path, &why), RUDA__BINARY_READ_UNUSABLE);
    ASSERT_STR_EQ(why, "owned by another user");
  } else {
    printf("  (not root: a file of another user is not tried)\n");
  }
}

TEST(binary_cache_dir_is_made_private_or_refused) {
  char root[512], dir[700], why[1200];
  make_root(root, sizeof root);
  /* Made 0700 with its parents. */
  ASSERT_TRUE(ruda__binary_cache_dir(root, "cpu", dir, sizeof dir, why, sizeof why));
  ASSERT_STR_EQ(why, "");
  struct stat st;
  ASSERT_EQ(stat(dir, &st), 0);
  ASSERT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_UEQ(st.st_mode & 0777, 0700);
  /* The user's own, open to others (an older ruda's 0755): narrowed. */
  ASSERT_EQ(chmod(dir, 0755), 0);
  ASSERT_TRUE(ruda__binary_cache_dir(root, "cpu", dir, sizeof dir, why, sizeof why));
  ASSERT_EQ(stat(dir, &st), 0);
  ASSERT_UEQ(st.st_mode & 0777, 0700);
  /* No root: off by setting, without a reason. */
  ASSERT_FALSE(ruda__binary_cache_dir("", "cpu", dir, sizeof dir, why, sizeof why));
  ASSERT_STR_EQ(dir, "");
  ASSERT_STR_EQ(why, "");
  /* Not a folder: refused with the reason. */
  char file[600];
  snprintf(file, sizeof file, "%s/plain", root);
  put_bytes(file, (const unsigned char *)"x", 1);
  ASSERT_FALSE(ruda__binary_cache_dir(root, "plain", dir, sizeof dir, why, sizeof why));
  ASSERT_STR_EQ(dir, "");
  ASSERT_STR_CONTAINS(why, "plain");
  ASSERT_STR_CONTAINS(why, "disk cache off");
  /* Another user's folder: refused. */
  char theirs[600];
  snprintf(theirs, sizeof theirs, "%s/theirs", root);
  ASSERT_EQ(mkdir(theirs, 0700), 0);
  if (chown(theirs, 65534, 65534) == 0) {
    ASSERT_FALSE(ruda__binary_cache_dir(root, "theirs", dir, sizeof dir, why, sizeof why));
    ASSERT_STR_CONTAINS(why, "not the user's own folder");
  } else {
    printf("  (not root: a folder of another user is not tried)\n");
  }
}

TEST(binary_cache_store_and_load_count_writes_and_skips) {
  char root[512], dir[600], path[700];
  make_root(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/store", root);
  snprintf(path, sizeof path, "%s/e.bin", dir);
  const unsigned char payload[4] = {1, 2, 3, 4};
  _Atomic uint64_t writes = 0, skips = 0;
  bool disabled = false;
  ASSERT_TRUE(ruda__binary_cache_store(&kind, dir, path, 5, payload, sizeof payload, "test",
                                       &writes, &disabled));
  ASSERT_UEQ(atomic_load(&writes), 1);
  ASSERT_FALSE(disabled);
  size_t size = 0;
  uint64_t word = 0;
  void *p = ruda__binary_cache_load(&kind, path, &size, &word, "test", &skips);
  ASSERT_NOT_NULL(p);
  ASSERT_UEQ(size, sizeof payload);
  ASSERT_UEQ(word, 5);
  ruda__free(p);
  ASSERT_UEQ(atomic_load(&skips), 0);
  put_bytes(path, (const unsigned char *)"damaged", 7); /* unusable: skipped and counted */
  ASSERT_NULL(ruda__binary_cache_load(&kind, path, &size, &word, "test", &skips));
  ASSERT_UEQ(atomic_load(&skips), 1);
  char absent[800];
  snprintf(absent, sizeof absent, "%s/none.bin", dir); /* absent: not counted */
  ASSERT_NULL(ruda__binary_cache_load(&kind, absent, &size, &word, "test", &skips));
  ASSERT_UEQ(atomic_load(&skips), 1);
  /* A directory that cannot be made turns the cache off. */
  char file[700], under[800], upath[900];
  snprintf(file, sizeof file, "%s/plain-file", root);
  put_bytes(file, (const unsigned char *)"x", 1);
  snprintf(under, sizeof under, "%s/sub", file);
  snprintf(upath, sizeof upath, "%s/e.bin", under);
  ASSERT_FALSE(ruda__binary_cache_store(&kind, under, upath, 0, payload, sizeof payload, "test",
                                        &writes, &disabled));
  ASSERT_TRUE(disabled);
  ASSERT_UEQ(atomic_load(&writes), 1);
}
