#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

enum { RT_MAX_TESTS = 1024 };

typedef struct {
  const char *name;
  rt_test_fn fn;
  const char *file;
  int line;
} rt_test;

static rt_test rt_tests[RT_MAX_TESTS];
static size_t rt_count;
static jmp_buf rt_jump;
static int rt_outcome; /* 0 pass, 1 fail, 2 skip */
static char rt_skip_reason[512];
static char rt_dir[512];

void rt_register(const char *name, rt_test_fn fn, const char *file, int line) {
  if (rt_count == RT_MAX_TESTS) {
    fprintf(stderr, "too many tests in one program\n");
    exit(2);
  }
  rt_tests[rt_count++] = (rt_test){name, fn, file, line};
}

void rt_fail_msg(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: assertion failed: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
}

_Noreturn void rt_fail(void) {
  rt_outcome = 1;
  longjmp(rt_jump, 1);
}

_Noreturn void rt_skip(const char *file, int line, const char *why) {
  rt_outcome = 2;
  snprintf(rt_skip_reason, sizeof rt_skip_reason, "%s (%s:%d)", why ? why : "",
           file, line);
  longjmp(rt_jump, 1);
}

bool rt_device_required(const char *backend) {
  const char *list = getenv("RUDA_REQUIRE_DEVICE");
  size_t want = backend ? strcspn(backend, ":") : 0;
  if (!list || want == 0) return false;
  while (*list) {
    list += strspn(list, ", ");
    size_t len = strcspn(list, ", ");
    size_t name = strcspn(list, ":, ");
    if (len > 0 && name == want && strncmp(list, backend, want) == 0) return true;
    list += len;
  }
  return false;
}

_Noreturn void rt_skip_unavailable(const char *file, int line, const char *backend,
                                   const char *why) {
  if (rt_device_required(backend)) {
    rt_fail_msg(file, line,
                "the %s device is unavailable, and RUDA_REQUIRE_DEVICE=%s requires it: %s",
                backend, getenv("RUDA_REQUIRE_DEVICE"), why ? why : "");
    rt_fail();
  }
  rt_skip(file, line, why);
}

const char *rt_tmpdir(void) {
  if (rt_dir[0]) return rt_dir;
  const char *base = getenv("RUDA_TEST_TMP");
  if (!base || !*base) base = "/tmp";
  mkdir(base, 0777);
  snprintf(rt_dir, sizeof rt_dir, "%s/rt-%ld-XXXXXX", base, (long)getpid());
  if (!mkdtemp(rt_dir)) {
    snprintf(rt_dir, sizeof rt_dir, "/tmp");
  }
  return rt_dir;
}

char *rt_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

void rt_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  RT_CHECK_(f != NULL, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

int rt_run_command(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  RT_CHECK_(p != NULL, "cannot run %s", cmd);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void rt_expect_formatted(const char *buf, size_t n, const char *want) {
  ASSERT_STR_EQ(buf, want);
  ASSERT_UEQ(n, strlen(want));
}

void rt_expect_text_format(size_t (*format)(const char *, char *, size_t), const char *in,
                           const char *want) {
  char buf[256];
  rt_expect_formatted(buf, format(in, buf, sizeof buf), want);
}

void rt_expect_u64_format(size_t (*format)(uint64_t, char *, size_t), uint64_t in,
                          const char *want) {
  char buf[256];
  rt_expect_formatted(buf, format(in, buf, sizeof buf), want);
}

static double rt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : getenv("RUDA_TEST_FILTER");
  /* static: setjmp/longjmp may not preserve automatic variables */
  static size_t passed, failed, skipped, i;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 0; i < rt_count; i++) {
    const rt_test *t = &rt_tests[i];
    if (filter && *filter && !strstr(t->name, filter)) continue;
    rt_outcome = 0;
    rt_skip_reason[0] = 0;
    double t0 = rt_now();
    if (setjmp(rt_jump) == 0) {
      t->fn();
    }
    double ms = (rt_now() - t0) * 1e3;
    switch (rt_outcome) {
      case 0:
        passed++;
        printf("PASS %s (%.1f ms)\n", t->name, ms);
        break;
      case 1:
        failed++;
        printf("FAIL %s (%s:%d)\n", t->name, t->file, t->line);
        break;
      default:
        skipped++;
        printf("SKIP %s: %s\n", t->name, rt_skip_reason);
        break;
    }
  }
  printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
  if (failed) return 1;
  if (skipped && !passed) return 77;
  return 0;
}
