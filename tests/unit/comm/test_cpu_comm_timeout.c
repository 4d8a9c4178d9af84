/* A participant that does not arrive within the communication timeout
 * (RUDA_COMM_TIMEOUT=0.3 s here): cpu:1's worker is held inside
 * ruda_client_exclusive for 2 s, far longer than that, while an all-reduce of
 * {cpu:0, cpu:1} is queued. cpu:0 gives up with an error naming cpu:1
 * instead of hanging; cpu:1 fails at once when it gets there; the
 * communicator of {0, 1} stays broken, and the other device sets and the
 * streams keep working. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ruda/ruda.h"
#include "test.h"

static ruda_client_t *clients[3];
static atomic_bool held; /* cpu:1's worker is inside hold_worker */

__attribute__((constructor)) static void setup_env(void) {
  setenv("RUDA_CPU_DEVICES", "3", 1);
  setenv("RUDA_COMM_TIMEOUT", "0.3", 1);
}

static ruda_status_t hold_worker(ruda_client_t *c, void *ctx) {
  (void)c;
  (void)ctx;
  atomic_store(&held, true);
  struct timespec ts = {2, 0};
  nanosleep(&ts, NULL);
  return NULL;
}

static void *hold_thread(void *arg) {
  ruda_status_free(ruda_client_exclusive(arg, hold_worker, NULL));
  return NULL;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

TEST(absent_peer_times_out_with_an_error) {
  for (uint16_t i = 0; i < 3; i++) {
    ruda_status_t s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, i}, &clients[i]);
    if (s) {
      ruda_status_free(s);
      SKIP("cannot create 3 CPU devices");
    }
  }
  ruda_handle_t h[3];
  float v[16] = {1};
  for (int i = 0; i < 3; i++) ASSERT_OK(ruda_client_create_buffer(clients[i], v, sizeof v, &h[i]));
  /* Creates the communicator of {0, 1} first, so only the operation waits. */
  ASSERT_OK(ruda_client_all_reduce(clients, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[1]));

  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, hold_thread, clients[1]), 0);
  /* Waits until cpu:1's worker is inside hold_worker (a loaded machine
   * may take a while to start the thread). */
  for (int i = 0; i < 5000 && !atomic_load(&held); i++) {
    struct timespec ms = {0, 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  ASSERT_TRUE(atomic_load(&held));
  uint64_t t0 = now_ms();
  ASSERT_OK(ruda_client_all_reduce(clients, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ruda_status_t e0 = ruda_client_sync(clients[0]);
  uint64_t waited = now_ms() - t0;
  ASSERT_TRUE(e0 != NULL);
  char *text = ruda_status_to_string(e0);
  ASSERT_STR_CONTAINS(text, "all-reduce timed out after 0.3 s waiting for cpu:1");
  free(text);
  ruda_status_free(e0);
  ASSERT_GE(waited, 250);
  ASSERT_LT(waited, 1900); /* before cpu:1 came back */
  pthread_join(t, NULL);
  /* cpu:1 reached the operation late: it fails at once with the reason */
  ruda_status_t e1 = ruda_client_sync(clients[1]);
  ASSERT_TRUE(e1 != NULL);
  text = ruda_status_to_string(e1);
  ASSERT_STR_CONTAINS(text, "broken");
  free(text);
  ruda_status_free(e1);
  /* the pair stays broken, without waiting again */
  t0 = now_ms();
  ASSERT_OK(ruda_client_all_reduce(clients, 2, h, h, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  ASSERT_ERR_KIND(ruda_client_sync(clients[0]), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_ERR_KIND(ruda_client_sync(clients[1]), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_LT(now_ms() - t0, 250);
  /* other sets, and the devices themselves, still work */
  ruda_client_t *other[2] = {clients[0], clients[2]};
  ruda_handle_t hh[2] = {h[0], h[2]};
  ASSERT_OK(ruda_client_all_reduce(other, 2, hh, hh, RUDA_ELEM_F32, RUDA_REDUCE_SUM));
  float got[16];
  ASSERT_OK(ruda_client_read(clients[2], &h[2], got, sizeof got));
  ASSERT_OK(ruda_client_sync(clients[0]));
  ASSERT_OK(ruda_client_sync(clients[1]));
  for (int i = 0; i < 3; i++) {
    ruda_handle_release(&h[i]);
    ruda_client_release(clients[i]);
  }
}
