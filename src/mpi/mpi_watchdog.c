/* The watchdog that bounds every MPI call ruda makes.
 *
 * A blocking MPI call cannot be interrupted, and MPI has no timeouts: a
 * peer that exited or stopped leaves the others inside MPI for ever. Each
 * thread that calls MPI marks a slot of its own (its description and start
 * time) for the length of the call; a thread wakes a few times per timeout
 * and, when a call has lasted longer than the communication timeout,
 * prints what it waited for and ends the job with MPI_Abort (exit code
 * 124), which mpirun turns into the end of every rank. Marking a call costs
 * two relaxed stores and a clock read.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mpi/mpi_internal.h"
#include "server/server.h"

enum { SLOTS = 256 };

typedef struct watch_slot {
  atomic_bool taken;
  _Atomic uint64_t start_ns; /* 0: not in an MPI call */
  /* Written by the owner before start_ns (release), read after it. */
  const char *_Atomic what;
  const char *_Atomic type;
  _Atomic uint64_t count;
  _Atomic uint32_t size;
} watch_slot_t;

static watch_slot_t slots[SLOTS];
static _Thread_local int my_slot = -1;
static pthread_t watcher;
static bool running;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool stop;
static uint32_t w_rank, w_size;

void ruda__mpi_watch_begin(const char *what, const char *type, uint64_t count, uint32_t size) {
  if (my_slot < 0) {
    for (int i = 0; i < SLOTS && my_slot < 0; i++) {
      bool expected = false;
      if (atomic_compare_exchange_strong(&slots[i].taken, &expected, true)) my_slot = i;
    }
    if (my_slot < 0) return; /* more threads than slots: unwatched */
  }
  watch_slot_t *s = &slots[my_slot];
  atomic_store_explicit(&s->what, what, memory_order_relaxed);
  atomic_store_explicit(&s->type, type, memory_order_relaxed);
  atomic_store_explicit(&s->count, count, memory_order_relaxed);
  atomic_store_explicit(&s->size, size, memory_order_relaxed);
  atomic_store_explicit(&s->start_ns, ruda__now_ns(), memory_order_release);
}

void ruda__mpi_watch_end(void) {
  if (my_slot >= 0) atomic_store_explicit(&slots[my_slot].start_ns, 0, memory_order_release);
}

static void *watch_main(void *arg) {
  (void)arg;
  uint64_t timeout = ruda__comm_timeout_ns();
  uint64_t period = timeout / 4 < 100000000ull ? timeout / 4 : 100000000ull;
  if (period < 1000000) period = 1000000;
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
      uint64_t start = atomic_load_explicit(&slots[i].start_ns, memory_order_acquire);
      if (start == 0 || now - start <= timeout) continue;
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
