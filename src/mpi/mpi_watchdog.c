/* The watchdog that bounds every MPI call ruda makes.
 *
 * A blocking MPI call cannot be interrupted, and MPI has no timeouts: a
 * peer that exited or stopped leaves the others inside MPI for ever. Each
 * thread that calls MPI marks a slot of its own for the length of the call
 * (its description, and a sequence number that is odd inside a call and
 * new for every call); a thread wakes a few times per timeout, notes when
 * it first saw each call, and when one has lasted longer than the
 * communication timeout prints what it waited for and ends the job with
 * MPI_Abort (exit code 124), which mpirun turns into the end of every
 * rank. Marking a call costs a few relaxed stores and two release stores,
 * no clock read: the watchdog's clock measures the calls, to within one of
 * its periods. A thread's slot is freed when the thread exits.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/sync.h"
#include "mpi/mpi_internal.h"
#include "server/server.h"

enum { SLOTS = 256 };

typedef struct watch_slot {
  atomic_bool taken;
  /* Odd: inside a call (a new value per call); written by the owner
   * only, with release after the description. */
  _Atomic uint64_t seq;
  const char *_Atomic what;
  const char *_Atomic type;
  _Atomic uint64_t count;
  _Atomic uint32_t size;
} watch_slot_t;

static watch_slot_t slots[SLOTS];
static RUDA__THREAD_LOCAL int my_slot = -1;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key; /* its destructor frees an exiting thread's slot */
static bool key_made;
static pthread_t watcher;
static bool running;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool stop;
static uint32_t w_rank, w_size;

static void slot_free(void *v) {
  int i = (int)(intptr_t)v - 1;
  if (i >= 0 && i < SLOTS) atomic_store_explicit(&slots[i].taken, false, memory_order_release);
}

static void make_key(void) { key_made = pthread_key_create(&slot_key, slot_free) == 0; }

void ruda__mpi_watch_begin(const char *what, const char *type, uint64_t count, uint32_t size) {
  if (my_slot < 0) {
    for (int i = 0; i < SLOTS && my_slot < 0; i++) {
      bool expected = false;
      if (atomic_compare_exchange_strong(&slots[i].taken, &expected, true)) my_slot = i;
    }
    if (my_slot < 0) return; /* more threads than slots: unwatched */
    pthread_once(&key_once, make_key);
    if (key_made) pthread_setspecific(slot_key, (void *)(intptr_t)(my_slot + 1));
  }
  watch_slot_t *s = &slots[my_slot];
  atomic_store_explicit(&s->what, what, memory_order_relaxed);
  atomic_store_explicit(&s->type, type, memory_order_relaxed);
  atomic_store_explicit(&s->count, count, memory_order_relaxed);
  atomic_store_explicit(&s->size, size, memory_order_relaxed);
  uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_release); /* odd */
}

void ruda__mpi_watch_end(void) {
  if (my_slot < 0) return;
  watch_slot_t *s = &slots[my_slot];
  uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  if (q & 1) atomic_store_explicit(&s->seq, q + 1, memory_order_release); /* even */
}

static void *watch_main(void *arg) {
  (void)arg;
  uint64_t timeout = ruda__comm_timeout_ns();
  uint64_t period = timeout / 4 < 100000000ull ? timeout / 4 : 100000000ull;
  if (period < 1000000) period = 1000000;
  /* Per slot: the call last seen (its sequence number) and since when. */
  static uint64_t seen_seq[SLOTS], seen_at[SLOTS];
  memset(seen_seq, 0, sizeof seen_seq);
  pthread_mutex_lock(&lock);
  while (!stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + period;
    ts.tv_sec = (time_t)(at / 1000000000ull);
    ts.tv_nsec = (long)(at % 1000000000ull);
    pthread_cond_timedwait(&wake, &lock, &ts);
    if (stop) break;
    uint64_t now = ruda__now_ns();
    for (int i = 0; i < SLOTS; i++) {
      uint64_t q = atomic_load_explicit(&slots[i].seq, memory_order_acquire);
      if (!(q & 1)) continue; /* not in a call */
      if (q != seen_seq[i]) { /* a call not seen before: it started about now */
        seen_seq[i] = q;
        seen_at[i] = now;
        continue;
      }
      uint64_t start = seen_at[i];
      if (now - start <= timeout) continue;
      const char *what = atomic_load_explicit(&slots[i].what, memory_order_relaxed);
      const char *type = atomic_load_explicit(&slots[i].type, memory_order_relaxed);
      char detail[128] = "";
      if (type) {
        snprintf(detail, sizeof detail, " of %llu elements of %s",
                 (unsigned long long)atomic_load_explicit(&slots[i].count, memory_order_relaxed),
                 type);
      }
      fprintf(stderr,
              "ruda: rank %u of %u has waited %.1f s for its peers in %s%s (a group of %u "
              "ranks; RUDA_COMM_TIMEOUT is %.1f s): a peer exited or stopped; aborting the MPI "
              "job\n",
              w_rank, w_size, (double)(now - start) * 1e-9, what ? what : "an MPI call", detail,
              atomic_load_explicit(&slots[i].size, memory_order_relaxed), (double)timeout * 1e-9);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 124);
    }
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

ruda_status_t ruda__mpi_watchdog_start(uint32_t world_rank, uint32_t world_size) {
  pthread_mutex_lock(&lock);
  if (running) {
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  w_rank = world_rank;
  w_size = world_size;
  stop = false;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wake, &attr);
  pthread_condattr_destroy(&attr);
  int rc = pthread_create(&watcher, NULL, watch_main, NULL);
  running = rc == 0;
  pthread_mutex_unlock(&lock);
  if (rc != 0) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "cannot start the MPI watchdog thread");
  }
  return NULL;
}

void ruda__mpi_watchdog_stop(void) {
  pthread_mutex_lock(&lock);
  if (!running) {
    pthread_mutex_unlock(&lock);
    return;
  }
  stop = true;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(watcher, NULL);
  pthread_mutex_lock(&lock);
  running = false;
  pthread_cond_destroy(&wake);
  pthread_mutex_unlock(&lock);
}
