/* Configuration: parsing ruda.toml text, reading an error's location, and
 * the configuration the process runs with. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  /* guide-begin: parse */
  const char *text =
      "[cpu]\n"
      "threads = 2\n"
      "[streaming]\n"
      "max_streams = 16\n"
      "[compilation]\n"
      "check_mode = \"validate\"\n";
  ruda_config_t cfg;
  ruda_status_t s = ruda_config_parse(text, strlen(text), "ruda.toml", &cfg);
  if (s) return 1;
  printf("cpu.threads = %u, streaming.max_streams = %u, launch_unchecked runs %s\n",
         cfg.cpu.threads, cfg.streaming.max_streams,
         ruda_execution_mode_name(ruda_bounds_check_to_mode(cfg.compilation.check_mode)));
  /* guide-end: parse */

  /* guide-begin: error */
  const char *bad = "[streaming]\nmax_streams = 999\n";
  s = ruda_config_parse(bad, strlen(bad), "ruda.toml", &cfg); /* cfg: the defaults now */
  printf("%s at %s:%u, key %s\n", ruda_error_kind_name(ruda_status_kind(s)), ruda_status_file(s),
         ruda_status_line(s), ruda_status_key(s));
  ruda_status_free(s);
  /* guide-end: error */

  /* guide-begin: process */
  /* What this process runs with: ruda.toml (RUDA_CONFIG, or the nearest
   * from the current directory up), then RUDA_* variables; read once. */
  const ruda_config_t *now = ruda_config_get();
  printf("read from: %s\n", now->source[0] ? now->source : "(no file: the defaults)");
  /* guide-end: process */
  return 0;
}
