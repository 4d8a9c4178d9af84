/* The threads' own ways of the reuse cache: attaching, removers, and the
 * lifetime of the ways (see reuse_cache.h, "The threads' own ways"). */
#include <pthread.h>
#include <string.h>

#include "base/alloc.h"
#include "memory/reuse_cache.h"

RUDA__THREAD_LOCAL ruda__local_ref_t ruda__thread_locals[RUDA__LOCAL_REFS];
static RUDA__THREAD_LOCAL uint32_t ruda__locals_victim;

static pthread_once_t ruda__locals_once = PTHREAD_ONCE_INIT;
static pthread_key_t ruda__locals_key;
static bool ruda__locals_key_ok;

static void ruda__local_drop(ruda__reuse_local_t *l) {
  if (l && atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) == 1) ruda__free(l);
}

/* A thread that had ways exits: it lets go of them. Their descriptors
 * stay for removers, and the ways for the next thread that attaches. */
static void ruda__locals_on_exit(void *unused) {
  (void)unused;
  for (uint32_t i = 0; i < RUDA__LOCAL_REFS; i++) {
    ruda__local_drop(ruda__thread_locals[i].local);
    memset(&ruda__thread_locals[i], 0, sizeof ruda__thread_locals[i]);
  }
}

static void ruda__locals_key_make(void) {
  ruda__locals_key_ok = pthread_key_create(&ruda__locals_key, ruda__locals_on_exit) == 0;
}

/* Ways of `rc` whose thread has gone, now the caller's; else new ones in
 * the list. Under rc->lock. */
static ruda__reuse_local_t *ruda__local_adopt_or_make(ruda__memory_reuse_t *rc) {
  for (ruda__reuse_local_t *l = atomic_load_explicit(&rc->locals, memory_order_relaxed); l;
       l = atomic_load_explicit(&l->next, memory_order_relaxed)) {
    uint32_t orphan = 1;
    if (atomic_compare_exchange_strong_explicit(&l->refs, &orphan, 2, memory_order_acq_rel,
                                                memory_order_relaxed))
      return l;
  }
  ruda__reuse_local_t *l = ruda__aligned_alloc(64, sizeof *l);
  if (!l) return NULL;
  atomic_init(&l->busy, 0);
  atomic_init(&l->steal, 0);
  atomic_init(&l->refs, 2);
  l->marked = false;
  for (uint32_t w = 0; w < RUDA__LOCAL_WAYS; w++) {
    atomic_init(&l->way[w], NULL);
    atomic_init(&l->size[w], 0);
  }
  atomic_init(&l->next, atomic_load_explicit(&rc->locals, memory_order_relaxed));
  atomic_store_explicit(&rc->locals, l, memory_order_release);
  return l;
}

ruda__reuse_local_t *ruda__reuse_local_attach(ruda__memory_reuse_t *rc) {
  pthread_once(&ruda__locals_once, ruda__locals_key_make);
  /* An unused entry, else one in turn (its ways become an orphan). */
  uint32_t slot = RUDA__LOCAL_REFS;
  for (uint32_t i = 0; i < RUDA__LOCAL_REFS && slot == RUDA__LOCAL_REFS; i++)
    if (ruda__thread_locals[i].rc == NULL || ruda__thread_locals[i].rc == rc) slot = i;
  if (slot == RUDA__LOCAL_REFS) slot = ruda__locals_victim++ % RUDA__LOCAL_REFS;
  ruda__reuse_local_t *l = NULL;
  if (ruda__locals_key_ok && atomic_load_explicit(&rc->local_on, memory_order_relaxed)) {
    pthread_mutex_lock(&rc->lock);
    l = ruda__local_adopt_or_make(rc);
    pthread_mutex_unlock(&rc->lock);
    /* Any value but NULL: the key's destructor runs at the thread's exit. */
    if (l) pthread_setspecific(ruda__locals_key, rc);
  }
  ruda__local_ref_t *r = &ruda__thread_locals[slot];
  ruda__local_drop(r->local);
  r->rc = rc;
  r->epoch = rc->epoch;
  r->local = l;
  return l;
}

/* Whether `l` holds a descriptor of the manager of `owner` (a read of
 * ways another thread owns: a hint). */
static bool ruda__local_holds_one(const ruda__reuse_local_t *l,
                                  const ruda__memory_inbox_t *owner) {
  for (uint32_t w = 0; w < RUDA__LOCAL_WAYS; w++) {
    ruda_memory_t *m = atomic_load_explicit((_Atomic(ruda_memory_t *) *)&l->way[w],
                                            memory_order_acquire);
    if (m && atomic_load_explicit(&m->owner, memory_order_relaxed) == owner) return true;
  }
  return false;
}

uint32_t ruda__reuse_local_evict(ruda__memory_reuse_t *rc, const ruda__memory_inbox_t *owner,
                                 void (*give)(ruda_memory_t *m, void *ctx), void *ctx) {
  if (!atomic_load_explicit(&rc->locals, memory_order_acquire)) return 0;
  pthread_mutex_lock(&rc->lock);
  bool any = false;
  ruda__reuse_local_t *head = atomic_load_explicit(&rc->locals, memory_order_relaxed);
  for (ruda__reuse_local_t *l = head; l; l = atomic_load_explicit(&l->next, memory_order_relaxed)) {
    l->marked = ruda__local_holds_one(l, owner);
    if (l->marked) {
      atomic_store_explicit(&l->steal, 1, memory_order_seq_cst);
      any = true;
    }
  }
  uint32_t n = 0;
  if (any) {
    /* After this, every owner is out of its ways or sees `steal`. */
    ruda__fence_heavy();
    for (ruda__reuse_local_t *l = head; l;
         l = atomic_load_explicit(&l->next, memory_order_relaxed)) {
      if (!l->marked) continue;
      for (uint32_t spins = 0; atomic_load_explicit(&l->busy, memory_order_acquire); spins++) {
        if (spins < 64)
          ruda__cpu_relax();
        else
          ruda__sync_yield(); /* the owner lost its core inside */
      }
      for (uint32_t w = 0; w < RUDA__LOCAL_WAYS; w++) {
        ruda_memory_t *m = atomic_load_explicit(&l->way[w], memory_order_relaxed);
        if (!m || atomic_load_explicit(&m->owner, memory_order_relaxed) != owner) continue;
        atomic_store_explicit(&l->way[w], NULL, memory_order_relaxed);
        atomic_store_explicit(&l->size[w], 0, memory_order_relaxed);
        give(m, ctx);
        n++;
      }
      l->marked = false;
      atomic_store_explicit(&l->steal, 0, memory_order_release);
    }
  }
  pthread_mutex_unlock(&rc->lock);
  return n;
}

bool ruda__reuse_local_holds(const ruda__memory_reuse_t *rc, const ruda__memory_inbox_t *owner) {
  for (ruda__reuse_local_t *l = atomic_load_explicit(
           &((ruda__memory_reuse_t *)rc)->locals, memory_order_acquire);
       l; l = atomic_load_explicit(&l->next, memory_order_acquire))
    if (ruda__local_holds_one(l, owner)) return true;
  return false;
}

void ruda__reuse_local_free_all(ruda__memory_reuse_t *rc) {
  ruda__reuse_local_t *l = atomic_exchange_explicit(&rc->locals, NULL, memory_order_acq_rel);
  while (l) {
    ruda__reuse_local_t *next = atomic_load_explicit(&l->next, memory_order_relaxed);
    ruda__local_drop(l);
    l = next;
  }
}
