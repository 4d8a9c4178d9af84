/* Rendezvous of in-process communicators (see rendezvous.h).
 *
 * A round goes through three steps:
 *   1. arrive (under the lock): wait until the previous round has closed,
 *      store the part; the last to arrive runs `all` and opens the round
 *      (`opened` + 1); the others wait for that, bounded by the timeout;
 *   2. `each`, unlocked;
 *   3. leave (under the lock): the last to leave closes the round (`closed`
 *      + 1, so opened == closed again); with `each`, the others wait for it.
 * `opened` and `closed` are atomics so that waits can spin on them before
 * sleeping on the condition variable; they change only under the lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/sync.h"
#include "comm/rendezvous.h"

struct ruda__rendezvous {
  ruda__rendezvous_t *next;
  uint64_t id;
  uint32_t size;
  ruda_device_id_t ids[RUDA__COMM_MAX_DEVICES];
  pthread_mutex_t lock;
  pthread_cond_t cond;
  atomic_uint_fast64_t opened, closed;
  atomic_bool broken;
  uint32_t arrived, finished;
  bool present[RUDA__COMM_MAX_DEVICES];
  char why[512]; /* the reason, once broken */
  ruda__round_t round;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ruda__rendezvous_t *registry;

ruda_status_t ruda__rendezvous_get(uint64_t id, uint32_t size, const ruda_device_id_t *ids,
                                   ruda__rendezvous_t **out) {
  *out = NULL;
  if (size == 0 || size > RUDA__COMM_MAX_DEVICES) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "a communicator takes 1 to %d devices",
                              RUDA__COMM_MAX_DEVICES);
  }
  pthread_mutex_lock(&registry_lock);
  ruda__rendezvous_t *rv = registry;
  while (rv && rv->id != id) rv = rv->next;
  if (rv && rv->size != size) {
    pthread_mutex_unlock(&registry_lock);
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                              "communicator %016llx has %u participants, not %u",
                              (unsigned long long)id, rv->size, size);
  }
  if (!rv) {
    rv = ruda__calloc(1, sizeof *rv);
    if (!rv) {
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                "out of host memory creating a communicator");
    }
    rv->id = id;
    rv->size = size;
    if (ids) memcpy(rv->ids, ids, size * sizeof *ids);
    pthread_mutex_init(&rv->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&rv->cond, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&rv->opened, 0);
    atomic_init(&rv->closed, 0);
    atomic_init(&rv->broken, false);
    rv->next = registry;
    registry = rv;
  }
  pthread_mutex_unlock(&registry_lock);
  *out = rv;
  return NULL;
}

typedef struct change {
  ruda__rendezvous_t *rv;
  atomic_uint_fast64_t *counter;
  uint64_t old;
} change_t;

static bool changed_or_broken(const void *p) {
  const change_t *c = p;
  return atomic_load_explicit(c->counter, memory_order_acquire) != c->old ||
         atomic_load_explicit(&c->rv->broken, memory_order_acquire);
}

/* Spins a little while `*counter` still equals `old` (unlocked): 3000
 * pauses, then yields while they return at once, for up to 2 ms
 * (ruda__yield_until: with more runnable threads than cores one yield can
 * hand the core away for a scheduler slice, and 1000 of them used to
 * outlast the communication timeout). True when it changed or the
 * rendezvous broke. */
static bool spin_until_changed(ruda__rendezvous_t *rv, atomic_uint_fast64_t *counter,
                               uint64_t old) {
  change_t c = {rv, counter, old};
  for (int i = 0; i < 3000; i++) {
    if (changed_or_broken(&c)) return true;
    ruda__cpu_relax();
  }
  return ruda__yield_until(changed_or_broken, &c, RUDA__YIELD_MAX_NS);
}

static struct timespec deadline_in(uint64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t sec = ns / 1000000000ull, rem = ns % 1000000000ull;
  ts.tv_sec += (time_t)sec;
  ts.tv_nsec += (long)rem;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

static void device_name(const ruda__rendezvous_t *rv, uint32_t rank, char *buf, size_t cap) {
  const char *type = ruda_device_type_name(rv->ids[rank].type_id);
  snprintf(buf, cap, "%s:%u", type ? type : "device", rv->ids[rank].index_id);
}

/* Called under the lock by a participant whose wait for the others
 * expired: breaks the rendezvous for good, naming who is missing. */
static void break_on_timeout(ruda__rendezvous_t *rv, const char *what) {
  if (atomic_load(&rv->broken)) return;
  char missing[256];
  size_t len = 0;
  missing[0] = '\0';
  for (uint32_t r = 0; r < rv->size && len < sizeof missing; r++) {
    if (rv->present[r]) continue;
    char name[48];
    device_name(rv, r, name, sizeof name);
    int w = snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", name);
    if (w > 0) len += (size_t)w;
  }
  snprintf(rv->why, sizeof rv->why,
           "%s timed out after %.1f s waiting for %s (RUDA_COMM_TIMEOUT); the communicator "
           "of these %u devices is broken for the rest of the process",
           what, (double)ruda__comm_timeout_ns() * 1e-9, missing[0] ? missing : "peers",
           rv->size);
  atomic_store_explicit(&rv->broken, true, memory_order_release);
  pthread_cond_broadcast(&rv->cond);
}

static ruda_status_t broken_error(const ruda__rendezvous_t *rv) {
  return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "%s", rv->why);
}

ruda_status_t ruda__rendezvous_join(ruda__rendezvous_t *rv, uint32_t rank, void *part,
                                    void (*all)(ruda__round_t *round, void *ctx),
                                    void (*each)(ruda__round_t *round, uint32_t rank, void *ctx),
                                    void *ctx, const char *what) {
  if (rank >= rv->size) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "%s: rank %u of %u", what, rank,
                              rv->size);
  }
  pthread_mutex_lock(&rv->lock);
  /* A fast participant may come back before the previous round closed;
   * those still in it are working, so this wait ends without a bound. */
  while (!atomic_load(&rv->broken) && atomic_load(&rv->opened) != atomic_load(&rv->closed)) {
    uint64_t closed = atomic_load(&rv->closed);
    pthread_mutex_unlock(&rv->lock);
    bool changed = spin_until_changed(rv, &rv->closed, closed);
    pthread_mutex_lock(&rv->lock);
    while (!changed && !atomic_load(&rv->broken) && atomic_load(&rv->closed) == closed) {
      pthread_cond_wait(&rv->cond, &rv->lock);
    }
  }
  if (atomic_load(&rv->broken)) {
    ruda_status_t e = broken_error(rv);
    pthread_mutex_unlock(&rv->lock);
    return e;
  }
  uint64_t my_round = atomic_load(&rv->closed);
  rv->round.parts[rank] = part;
  rv->present[rank] = true;
  if (++rv->arrived == rv->size) {
    rv->round.size = rv->size;
    rv->round.error[0] = '\0';
    if (all) all(&rv->round, ctx);
    atomic_store_explicit(&rv->opened, my_round + 1, memory_order_release);
    pthread_cond_broadcast(&rv->cond);
  } else {
    /* The timeout counts from this participant's arrival. */
    struct timespec deadline = deadline_in(ruda__comm_timeout_ns());
    pthread_mutex_unlock(&rv->lock);
    spin_until_changed(rv, &rv->opened, my_round);
    pthread_mutex_lock(&rv->lock);
    while (atomic_load(&rv->opened) == my_round && !atomic_load(&rv->broken)) {
      if (pthread_cond_timedwait(&rv->cond, &rv->lock, &deadline) != 0 &&
          atomic_load(&rv->opened) == my_round) {
        break_on_timeout(rv, what);
      }
    }
    if (atomic_load(&rv->opened) == my_round) { /* broken before it opened */
      ruda_status_t e = broken_error(rv);
      pthread_mutex_unlock(&rv->lock);
      return e;
    }
  }
  ruda_status_t err = rv->round.error[0]
                          ? ruda_status_create(RUDA_ERR_SERVER_GENERIC, "%s", rv->round.error)
                          : NULL;
  pthread_mutex_unlock(&rv->lock);

  if (!err && each) each(&rv->round, rank, ctx);

  pthread_mutex_lock(&rv->lock);
  if (++rv->finished == rv->size) {
    rv->arrived = 0;
    rv->finished = 0;
    memset(rv->present, 0, sizeof rv->present);
    atomic_store_explicit(&rv->closed, my_round + 1, memory_order_release);
    pthread_cond_broadcast(&rv->cond);
    pthread_mutex_unlock(&rv->lock);
  } else if (each) {
    /* Peers may still be writing this participant's buffers. */
    pthread_mutex_unlock(&rv->lock);
    if (!spin_until_changed(rv, &rv->closed, my_round)) {
      pthread_mutex_lock(&rv->lock);
      while (atomic_load(&rv->closed) == my_round) pthread_cond_wait(&rv->cond, &rv->lock);
      pthread_mutex_unlock(&rv->lock);
    }
  } else {
    pthread_mutex_unlock(&rv->lock);
  }
  return err;
}
