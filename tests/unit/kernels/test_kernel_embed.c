/* The kernel embed step (tools/kernel_text.c): the text a kernel file
 * becomes (#line directives, inlined headers, dropped includes), the kernel
 * names it declares, its errors, the generated C and the depfile. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel_text.h"
#include "test.h"

static const char *path_in(const char *dir, const char *name) {
  static char path[4][2048]; /* a directory of up to 1023 bytes, a name */
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

static void write_file(const char *dir, const char *name, const char *text) {
  rt_write_file(path_in(dir, name), text);
}

static bool load(const char *dir, const char *name, ruda_tools_kernel_text_t *t, char *err,
                 size_t cap, const char *const *dirs, size_t nd) {
  return ruda_tools_kernel_text_load(path_in(dir, name), dirs, nd, t, err, cap);
}

/* Line `n` (1-based) of `text` into out. */
static void line_of(const char *text, int n, char *out, size_t cap) {
  const char *p = text;
  for (int i = 1; i < n && p; i++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  ASSERT_NOT_NULL(p);
  size_t len = strcspn(p, "\n");
  if (len >= cap) len = cap - 1;
  memcpy(out, p, len);
  out[len] = '\0';
}

TEST(text_starts_with_a_line_directive_and_keeps_every_line) {
  const char *dir = rt_tmpdir();
  write_file(dir, "k1.c",
             "#include <ruda/kernel_dialect.h>\n"
             "#include <stdint.h>\n"
             "#include <math.h>\n"
             "#pragma once\n"
             "RUDA_KERNEL(alpha, RUDA_DIM(1, 1, 1)) {}\n"
             "/* RUDA_KERNEL(in_a_comment, x) */\n"
             "// RUDA_KERNEL(in_a_line_comment, x)\n"
             "#define NOT_A_KERNEL RUDA_KERNEL(macro_body, x)\n"
             "const char *s = \"RUDA_KERNEL(in_a_string, x)\";\n"
             "RUDA_KERNEL(\n   beta, RUDA_DIM(2, 1, 1)) {}\n");
  ruda_tools_kernel_text_t t;
  char err[512];
  ASSERT_TRUE(load(dir, "k1.c", &t, err, sizeof err, NULL, 0));
  char line[512], want[1200];
  line_of(t.text, 1, line, sizeof line);
  snprintf(want, sizeof want, "#line 1 \"%s\"", t.path);
  ASSERT_STR_EQ(line, want);
  /* The dialect's include, the standard headers and #pragma once become
   * empty lines, so line numbers stay the file's own. */
  for (int i = 2; i <= 5; i++) {
    line_of(t.text, i, line, sizeof line);
    ASSERT_STR_EQ(line, "");
  }
  line_of(t.text, 6, line, sizeof line);
  ASSERT_STR_EQ(line, "RUDA_KERNEL(alpha, RUDA_DIM(1, 1, 1)) {}");
  ASSERT_UEQ(t.num_kernels, 2);
  ASSERT_STR_EQ(t.kernels[0].name, "alpha");
  ASSERT_UEQ(t.kernels[0].line, 5);
  ASSERT_STR_EQ(t.kernels[1].name, "beta");
  ASSERT_UEQ(t.kernels[1].line, 10);
  ASSERT_NULL(ruda_tools_kernel_text_kernel_at(&t, 4));
  ASSERT_STR_EQ(ruda_tools_kernel_text_kernel_at(&t, 7)->name, "alpha");
  ASSERT_STR_EQ(ruda_tools_kernel_text_kernel_at(&t, 11)->name, "beta");
  ASSERT_UEQ(t.num_deps, 1);
  ruda_tools_kernel_text_free(&t);
}

TEST(own_headers_are_inlined_between_line_directives) {
  const char *dir = rt_tmpdir();
  char sub[1024];
  snprintf(sub, sizeof sub, "%s/inc", dir);
  mkdir(sub, 0755);
  write_file(sub, "helpers.h", "#pragma once\n#define HELPER 42\n");
  write_file(dir, "near.h", "#include \"helpers.h\"\n#define NEAR 1\n");
  write_file(dir, "k2.c",
             "#include \"near.h\"\n"
             "#include \"helpers.h\"\n"
             "RUDA_KERNEL(gamma, RUDA_DIM(1, 1, 1)) { int x = HELPER + NEAR; }\n");
  ruda_tools_kernel_text_t t;
  char err[512];
  /* helpers.h is found through -I only. */
  ASSERT_FALSE(load(dir, "k2.c", &t, err, sizeof err, NULL, 0));
  ASSERT_STR_CONTAINS(err, "near.h:1: cannot find \"helpers.h\"");
  const char *dirs[1] = {sub};
  ASSERT_TRUE(load(dir, "k2.c", &t, err, sizeof err, dirs, 1));
  ASSERT_STR_CONTAINS(t.text, "#define HELPER 42\n");
  ASSERT_STR_CONTAINS(t.text, "#define NEAR 1\n");
  /* After each inlined header, a #line directive returns to the includer's
   * next line; the second include of a #pragma once header becomes an empty
   * line. */
  char want[1200];
  snprintf(want, sizeof want, "#line 2 \"%s\"\n\nRUDA_KERNEL(gamma", t.path);
  ASSERT_STR_CONTAINS(t.text, want);
  ASSERT_NULL(strstr(strstr(t.text, "#define HELPER 42") + 1, "#define HELPER 42"));
  ASSERT_UEQ(t.num_deps, 3);
  ASSERT_UEQ(t.num_kernels, 1); /* kernels come from the file itself */
  ruda_tools_kernel_text_free(&t);
}

TEST(errors_name_the_file_and_line) {
  const char *dir = rt_tmpdir();
  ruda_tools_kernel_text_t t;
  char err[512];
  write_file(dir, "dup.c", "RUDA_KERNEL(twice, RUDA_DIM(1, 1, 1)) {}\n\nRUDA_KERNEL(twice, x) {}\n");
  ASSERT_FALSE(load(dir, "dup.c", &t, err, sizeof err, NULL, 0));
  ASSERT_STR_CONTAINS(err, "dup.c:3: kernel 'twice' is declared twice (first at line 1)");
  write_file(dir, "noname.c", "RUDA_KERNEL( (x), y) {}\n");
  ASSERT_FALSE(load(dir, "noname.c", &t, err, sizeof err, NULL, 0));
  ASSERT_STR_CONTAINS(err, "noname.c:1: RUDA_KERNEL needs the kernel's name");
  write_file(dir, "cycle_a.h", "#include \"cycle_b.h\"\n");
  write_file(dir, "cycle_b.h", "#include \"cycle_a.h\"\n");
  write_file(dir, "cycle.c", "#include \"cycle_a.h\"\n");
  ASSERT_FALSE(load(dir, "cycle.c", &t, err, sizeof err, NULL, 0));
  ASSERT_STR_CONTAINS(err, "nested deeper than");
  ASSERT_FALSE(load(dir, "absent.c", &t, err, sizeof err, NULL, 0));
  ASSERT_STR_CONTAINS(err, "absent.c");
}

TEST(generated_c_and_depfile) {
  const char *dir = rt_tmpdir();
  write_file(dir, "k3.c",
             "RUDA_KERNEL(delta, RUDA_DIM(1, 1, 1)) { const char *q = \"a\\\\b\\\"c?\?=\"; }\n"
             "RUDA_KERNEL(epsilon, RUDA_DIM(1, 1, 1)) {}\n");
  ruda_tools_kernel_text_t t;
  char err[512];
  ASSERT_TRUE(load(dir, "k3.c", &t, err, sizeof err, NULL, 0));
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ASSERT_TRUE(ruda_tools_kernel_text_write_c(&t, f));
  fclose(f);
  ASSERT_STR_CONTAINS(buf, "const char ruda_kernel_text__delta[] = RUDA_KERNEL_FILE_TEXT;");
  ASSERT_STR_CONTAINS(buf, "const char ruda_kernel_text__epsilon[] = RUDA_KERNEL_FILE_TEXT;");
  /* Backslashes, quotes and trigraph question marks escaped. */
  ASSERT_STR_CONTAINS(buf, "\\\"a\\\\\\\\b\\\\\\\"c\\?\\?=\\\"");
  free(buf);
  buf = NULL;
  f = open_memstream(&buf, &len);
  ASSERT_TRUE(ruda_tools_kernel_text_write_depfile(&t, "out dir/k3_text.c", f));
  fclose(f);
  ASSERT_STR_CONTAINS(buf, "out\\ dir/k3_text.c: \\\n  ");
  ASSERT_STR_CONTAINS(buf, t.path);
  free(buf);
  ruda_tools_kernel_text_free(&t);
}
