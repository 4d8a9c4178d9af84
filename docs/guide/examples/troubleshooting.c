/* Troubleshooting: what an error says (text, JSON, backtrace), and which
 * library a program actually runs with. Run with RUDA_BACKTRACE=1. */
#include <ruda/ruda.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  /* guide-begin: version */
  printf("headers %s, library %s\n", RUDA_VERSION_STRING, ruda_version_string());
  /* guide-end: version */

  /* guide-begin: error */
  ruda_device_id_t missing = {RUDA_DEVICE_TYPE_CPU, 7};
  ruda_client_t *c = NULL;
  ruda_status_t s = ruda_client_create(missing, &c);
  printf("kind: %s\n", ruda_error_kind_name(ruda_status_kind(s)));
  char *text = ruda_status_to_string(s); /* the full text, causes included */
  char *json = ruda_status_to_json(s);
  printf("text: %s\njson: %s\n", text, json);
  printf("backtrace captured: %s\n", ruda_status_backtrace(s) ? "yes" : "no");
  free(text);
  free(json);
  ruda_status_free(s);
  /* guide-end: error */
  return c == NULL ? 0 : 1;
}
