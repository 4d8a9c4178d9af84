/* Handles, bindings and descriptor reference counting, including clones and
 * releases from several threads while the device thread drains frees. */
#include <pthread.h>

#include "memory_test_util.h"

static uint64_t state_count(const ruda_memory_t *m) {
  return RUDA__MEMORY_COUNT(atomic_load(&((ruda_memory_t *)m)->state));
}

TEST(new_descriptor_counts) {
  ruda_memory_t *m = ruda__memory_new();
  ASSERT_NOT_NULL(m);
  ruda_memory_t *m2 = ruda__memory_new();
  ASSERT_UNE(ruda__memory_id(m2), ruda__memory_id(m));
  ruda_handle_t h = ruda__handle_wrap(m, 100, (ruda_stream_id_t){7});
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ASSERT_UEQ(ruda_handle_memory_id(&h), ruda__memory_id(m));
  ASSERT_PTR_EQ(ruda__handle_memory(&h), m);
  ASSERT_UEQ(state_count(m), 1);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 1);
  ruda_handle_t c = ruda_handle_clone(&h);
  ASSERT_UEQ(state_count(m), 2);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 2);
  /* Unbound, a clone alive: no handle may mutate (the contract holds
   * whether or not the pool has bound the memory yet). */
  ASSERT_FALSE(ruda_handle_can_mut(&h));
  ASSERT_FALSE(ruda_handle_can_mut(&c));
  ruda_handle_t c2 = ruda_handle_clone(&h);
  ruda_binding_t b = ruda_handle_binding(&h);
  ASSERT_UEQ(state_count(m), 4);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 3);
  ruda_binding_t b2 = ruda_handle_into_binding(&c2);
  ASSERT_TRUE(ruda_handle_is_empty(&c2));
  ASSERT_UEQ(state_count(m), 4);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 2);
  ruda_binding_t b3 = ruda_binding_clone(&b);
  ASSERT_UEQ(state_count(m), 5);
  ruda_binding_release(&b);
  ruda_binding_release(&b2);
  ruda_binding_release(&b3);
  ASSERT_TRUE(ruda_binding_is_empty(&b));
  ruda_handle_release(&c);
  ASSERT_UEQ(state_count(m), 1);
  ASSERT_TRUE(ruda_handle_can_mut(&h)); /* bindings never counted */
  ruda_handle_release(&h); /* recycles the slot */
  ruda_handle_release(&h); /* empty: no-op */
  ruda_handle_release(NULL);
  ruda_binding_release(NULL);
  ruda__memory_release_handle(m2);
}

TEST(empty_handle) {
  ruda_handle_t h;
  memset(&h, 0, sizeof h);
  ASSERT_TRUE(ruda_handle_is_empty(&h));
  ASSERT_TRUE(ruda_handle_is_empty(NULL));
  ASSERT_FALSE(ruda_handle_can_mut(&h));
  ASSERT_FALSE(ruda_handle_is_bound(&h));
  ASSERT_UEQ(ruda_handle_memory_id(&h), 0);
  ruda_handle_t c = ruda_handle_clone(&h);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ruda_binding_t b = ruda_handle_binding(&h);
  ASSERT_TRUE(ruda_binding_is_empty(&b));
  ASSERT_ERR_KIND(ruda_handle_validate(&h), RUDA_ERR_INVALID_HANDLE);
  ASSERT_ERR_KIND(ruda_handle_validate(NULL), RUDA_ERR_INVALID_HANDLE);
  ASSERT_ERR_KIND(ruda_handle_offset_start(&h, 0), RUDA_ERR_INVALID_HANDLE);
}

TEST(offsets_add_and_size_in_used) {
  ruda_handle_t h = ruda__handle_wrap(ruda__memory_new(), 1000, (ruda_stream_id_t){0});
  ASSERT_UEQ(ruda_handle_size_in_used(&h), 1000);
  ASSERT_OK(ruda_handle_offset_start(&h, 100));
  ASSERT_OK(ruda_handle_offset_start(&h, 50));
  ASSERT_OK(ruda_handle_offset_end(&h, 200));
  ASSERT_UEQ(h.offset_start, 150);
  ASSERT_UEQ(h.offset_end, 200);
  ASSERT_UEQ(h.size, 1000);
  ASSERT_UEQ(ruda_handle_size_in_used(&h), 650);
  ASSERT_ERR_KIND(ruda_handle_offset_start(&h, 651), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_handle_offset_end(&h, 651), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_UEQ(ruda_handle_size_in_used(&h), 650);
  ruda_binding_t b = ruda_handle_binding(&h);
  ASSERT_UEQ(ruda_binding_size_in_used(&b), 650);
  ASSERT_UEQ(b.offset_start, 150);
  ruda_binding_release(&b);
  ASSERT_OK(ruda_handle_offset_end(&h, 650));
  ASSERT_UEQ(ruda_handle_size_in_used(&h), 0);
  ruda_handle_release(&h);
}

TEST(bound_handle_can_mut_and_is_bound) {
  MANAGER_WITH_SLICE(cs, mm, h);
  /* The pool's reference is not a handle. */
  ASSERT_UEQ(atomic_load(&MEM(h)->handle_refs), 1);
  ASSERT_TRUE(ruda_handle_is_bound(&h));
  expect_clone_blocks_mut(&h);
  ruda_handle_release(&h);
  destroy_empty(mm);
}

/* ---- Stale, forged and edited handles ---- */

TEST(stale_copy_is_refused_and_never_retains) {
  MANAGER_WITH_SLICE(cs, mm, h);
  ruda_handle_t copy = h; /* a plain struct copy: no reference */
  ruda_handle_release(&h);
  /* Released, slice not yet taken back by the device: already stale. */
  ASSERT_FALSE(ruda_handle_can_mut(&copy));
  ASSERT_FALSE(ruda_handle_is_bound(&copy));
  ASSERT_NULL(ruda__handle_memory(&copy));
  ruda_handle_t c = ruda_handle_clone(&copy);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ruda_binding_t b = ruda_handle_binding(&copy);
  ASSERT_TRUE(ruda_binding_is_empty(&b));
  ruda_status_t st = ruda_handle_validate(&copy);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_HANDLE);
  char want[64];
  snprintf(want, sizeof want, "handle #%u.%u was released", (unsigned)copy.id,
           (unsigned)(copy.id >> 32));
  ASSERT_STR_EQ(ruda_status_reason(st), want);
  ruda_status_free(st);
  /* The device takes the slice back; the slot is recycled for the next
   * descriptor, with a new generation. */
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
  ruda_handle_t n;
  ALLOC(mm, 64, &n);
  ASSERT_UEQ((uint32_t)n.id, (uint32_t)copy.id);
  ASSERT_UEQ(n.id >> 32, (copy.id >> 32) + 1);
  /* The stale copy touches nothing of the new owner's. */
  ruda_handle_release(&copy);
  ASSERT_TRUE(ruda_handle_is_empty(&copy));
  copy.id = ruda_handle_memory_id(&n) - (1ull << 32); /* the old id again */
  copy.size = 64;
  ruda_binding_release(&(ruda_binding_t){copy.id, 0, 0, 64, {0}, {0, 0}});
  ASSERT_UEQ(state_count(MEM(n)), 1 + 1); /* the user's + the pool's */
  ASSERT_TRUE(ruda_handle_can_mut(&n));
  ruda__storage_handle_t sh;
  ruda_binding_t sb = {copy.id, 0, 0, 64, {0}, {0, 0}};
  ASSERT_ERR_KIND(ruda__memory_resolve_binding(mm, &sb, &sh), RUDA_ERR_IO_NOT_FOUND);
  ASSERT_OK(ruda_handle_validate(&n));
  ruda_handle_release(&n);
  destroy_empty(mm);
}

TEST(copy_of_the_last_handle_is_stale_while_bindings_remain) {
  /* Queued work (a binding) keeps the memory alive after the user released
   * its only handle; a copy of that handle is refused all the same. */
  ruda_handle_t h = ruda__handle_wrap(ruda__memory_new(), 32, (ruda_stream_id_t){0});
  ruda_binding_t b = ruda_handle_binding(&h);
  ruda_handle_t copy = h;
  ruda_handle_release(&h);
  ASSERT_ERR_KIND(ruda_handle_validate(&copy), RUDA_ERR_INVALID_HANDLE);
  ruda_handle_t c = ruda_handle_clone(&copy);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ruda_binding_t b2 = ruda_handle_binding(&copy);
  ASSERT_TRUE(ruda_binding_is_empty(&b2));
  ASSERT_NULL(ruda__handle_memory(&copy));
  /* The binding itself is live. */
  ASSERT_NOT_NULL(ruda__binding_memory(&b));
  ASSERT_OK(ruda__binding_check(&b, "read"));
  ruda_binding_release(&b);
  ASSERT_NULL(ruda__binding_memory(&b));
}

TEST(released_but_not_drained_cannot_be_revived) {
  /* The race the state word closes: the last user reference is gone (only
   * the pool's is left) but the device has not taken the slice back. A
   * stale clone must not bring it back to life. */
  MANAGER_WITH_SLICE(cs, mm, h);
  ruda_memory_t *m = MEM(h);
  ruda_handle_t copy = h;
  ruda_handle_release(&h);
  ASSERT_UEQ(atomic_load(&m->state) & ~RUDA__MEMORY_COUNT_MASK & 0xffffffffull,
             RUDA__MEMORY_BOUND);
  ASSERT_UEQ(state_count(m), 1);
  ruda_handle_t c = ruda_handle_clone(&copy);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ASSERT_UEQ(state_count(m), 1);
  destroy_empty(mm);
}

TEST(forged_and_edited_handles) {
  MANAGER_WITH_SLICE(cs, mm, h);
  ASSERT_OK(ruda_handle_validate(&h));
  ruda_handle_t e = h;
  e.id = (uint64_t)7 << 32 | 0xfffffff0u; /* a slot no slab holds */
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  ruda_handle_t c = ruda_handle_clone(&e);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ruda_handle_release(&e); /* nothing to drop: ignored */
  e = h;
  e.id = h.id & 0xffffffffu; /* generation 0 */
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  e = h;
  e.id = h.id + (5ull << 32); /* a generation the slot never had */
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  /* Issue 17: a size larger than the allocation is refused by the check... */
  e = h;
  e.size = 1ull << 30;
  ruda_status_t st = ruda_handle_validate(&e);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_HANDLE);
  ASSERT_NOT_NULL(strstr(ruda_status_reason(st), "holds 1073741824 bytes; it holds 64"));
  ruda_status_free(st);
  /* ...and by the memory layer's resolve, whatever the handle says. */
  ruda_binding_t b = ruda_handle_binding(&h);
  ruda_binding_t eb = b;
  eb.size = 1ull << 30;
  ruda__storage_handle_t sh;
  st = ruda__memory_resolve_binding(mm, &eb, &sh);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_HANDLE);
  ASSERT_NOT_NULL(strstr(ruda_status_reason(st), "1073741824 bytes; the device allocated 64"));
  ruda_status_free(st);
  eb = b;
  eb.offset_start = 60;
  eb.offset_end = 10;
  ASSERT_ERR_KIND(ruda__memory_resolve_binding(mm, &eb, &sh), RUDA_ERR_INVALID_HANDLE);
  ASSERT_OK(ruda__memory_resolve_binding(mm, &b, &sh));
  ASSERT_UEQ(sh.size, 64);
  ruda_binding_release(&b);
  /* Offsets that wrap, a stream or device field changed. */
  e = h;
  e.offset_start = UINT64_MAX;
  e.offset_end = 2;
  ASSERT_UEQ(ruda_handle_size_in_used(&e), 0);
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  e = h;
  e.stream.value = 99;
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  ruda_handle_release(&h);
  ruda__memory_manager_destroy(mm);
}

TEST(handles_of_a_device_are_refused_elsewhere) {
  ruda_device_id_t cuda0 = {RUDA_DEVICE_TYPE_CUDA, 0}, cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_handle_t h;
  ASSERT_OK(ruda__handle_create(64, cuda0, (ruda_stream_id_t){3}, &h));
  ASSERT_OK(ruda__handle_check(&h, cuda0, "write"));
  ruda_status_t st = ruda__handle_check(&h, cpu0, "write");
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_HANDLE);
  char want[80];
  snprintf(want, sizeof want, "write: handle #%u.%u belongs to cuda:0, not cpu:0",
           (unsigned)h.id, (unsigned)(h.id >> 32));
  ASSERT_STR_EQ(ruda_status_reason(st), want);
  ruda_status_free(st);
  /* Editing the device field does not help. */
  ruda_handle_t e = h;
  e.device = cpu0;
  st = ruda__handle_check(&e, cpu0, "read");
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_HANDLE);
  ASSERT_NOT_NULL(strstr(ruda_status_reason(st), "belongs to cuda:0, not cpu:0"));
  ruda_status_free(st);
  ASSERT_ERR_KIND(ruda_handle_validate(&e), RUDA_ERR_INVALID_HANDLE);
  ruda_binding_t b;
  ASSERT_ERR_KIND(ruda__handle_bind(&h, cpu0, "launch", &b), RUDA_ERR_INVALID_HANDLE);
  ASSERT_TRUE(ruda_binding_is_empty(&b));
  ASSERT_OK(ruda__handle_bind(&h, cuda0, "launch", &b));
  ASSERT_OK(ruda__binding_check(&b, "launch"));
  ruda_binding_release(&b);
  st = ruda__handle_check(NULL, cpu0, "read");
  ASSERT_STR_EQ(ruda_status_reason(st), "read: the handle is empty (released, or never created)");
  ruda_status_free(st);
  ruda_handle_release(&h);
  ASSERT_ERR_KIND(ruda__handle_check(&h, cuda0, "read"), RUDA_ERR_INVALID_HANDLE);
}

TEST(slots_are_recycled_through_many_generations) {
  /* Thousands of create/release cycles reuse a handful of slots, each
   * generation refusing every older copy. */
  ruda_handle_t first = ruda__handle_wrap(ruda__memory_new(), 8, (ruda_stream_id_t){0});
  ruda_handle_t old = first;
  ruda_handle_release(&first);
  uint32_t max_slot = 0;
  for (int i = 0; i < 5000; i++) {
    ruda_handle_t h = ruda__handle_wrap(ruda__memory_new(), 8, (ruda_stream_id_t){0});
    if ((uint32_t)h.id > max_slot) max_slot = (uint32_t)h.id;
    ASSERT_UNE(h.id, old.id);
    ruda_handle_t c = ruda_handle_clone(&old);
    ASSERT_TRUE(ruda_handle_is_empty(&c));
    ruda_handle_release(&h);
  }
  ASSERT_ERR_KIND(ruda_handle_validate(&old), RUDA_ERR_INVALID_HANDLE);
  /* LIFO reuse: the loop never needed a second slab. */
  ASSERT_ULT(max_slot, 1024 * 64);
}

/* ---- Threads ---- */

enum { N_THREADS = 4, N_HANDLES = 64, N_ROUNDS = 2000 };

typedef struct worker {
  ruda_handle_t handles[N_HANDLES];
  unsigned seed;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  for (int r = 0; r < N_ROUNDS; r++) {
    unsigned i = (unsigned)rand_r(&w->seed) % N_HANDLES;
    ruda_handle_t c = ruda_handle_clone(&w->handles[i]);
    ruda_binding_t b = ruda_handle_binding(&c);
    (void)ruda_handle_can_mut(&c);
    ruda_handle_release(&c);
    ruda_binding_release(&b);
  }
  /* Drop this thread's handles: their slices become free concurrently with
   * the device thread's drains. */
  for (int i = 0; i < N_HANDLES; i++) ruda_handle_release(&w->handles[i]);
  return NULL;
}

TEST(threads_clone_and_release_while_device_drains) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  static worker_t workers[N_THREADS];
  ruda_handle_t shared[N_HANDLES];
  for (int i = 0; i < N_HANDLES; i++) ALLOC(mm, 64 + (uint64_t)i * 100, &shared[i]);
  /* Every thread gets its own clones of the same handles. */
  for (int t = 0; t < N_THREADS; t++) {
    workers[t].seed = (unsigned)t + 1;
    for (int i = 0; i < N_HANDLES; i++) workers[t].handles[i] = ruda_handle_clone(&shared[i]);
  }
  for (int i = 0; i < N_HANDLES; i++) ruda_handle_release(&shared[i]);
  pthread_t th[N_THREADS];
  for (int t = 0; t < N_THREADS; t++)
    ASSERT_EQ(pthread_create(&th[t], NULL, worker_main, &workers[t]), 0);
  /* The device thread keeps allocating and looking at usage meanwhile. */
  for (int r = 0; r < 2000; r++) {
    ruda_handle_t h;
    ALLOC(mm, 32 + (uint64_t)(r % 7) * 1000, &h);
    ruda_memory_usage_t u = ruda__memory_usage(mm);
    ASSERT_UGE(u.number_allocs, 1);
    ASSERT_ULE(u.number_allocs, N_HANDLES + 1);
    ruda_handle_release(&h);
  }
  for (int t = 0; t < N_THREADS; t++) ASSERT_EQ(pthread_join(th[t], NULL), 0);
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, 0);
  ASSERT_UEQ(u.bytes_in_use, 0);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ruda__memory_manager_destroy(mm);
}

static void *release_half(void *arg) {
  ruda_handle_t *hs = arg;
  for (int i = 0; i < N_HANDLES; i += 2) ruda_handle_release(&hs[i]);
  return NULL;
}

TEST(threads_release_unbound_and_bound) {
  /* Handles released on another thread, some before the bind happens. */
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  for (int round = 0; round < 50; round++) {
    ruda_handle_t hs[N_HANDLES];
    ruda_binding_t task[N_HANDLES];
    for (int i = 0; i < N_HANDLES; i++) {
      hs[i] = ruda__handle_wrap(ruda__memory_new(), 128, (ruda_stream_id_t){0});
      task[i] = ruda_handle_binding(&hs[i]); /* what a queued task holds */
    }
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, release_half, hs), 0);
    for (int i = 0; i < N_HANDLES; i++) {
      ASSERT_OK(ruda__memory_alloc(mm, ruda__binding_memory(&task[i]), 128, (uint64_t)i));
      ruda_binding_release(&task[i]);
    }
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, N_HANDLES / 2);
    for (int i = 1; i < N_HANDLES; i += 2) ruda_handle_release(&hs[i]);
    ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
  }
  ASSERT_UEQ(cs.allocs, 1);
  ruda__memory_manager_destroy(mm);
}

/* ---- The table under concurrency ---- */

enum { T_THREADS = 4, T_ROUNDS = 20000, T_LIVE = 8 };

static void *table_worker(void *arg) {
  int *failures = arg;
  ruda_handle_t live[T_LIVE], stale[T_LIVE];
  memset(live, 0, sizeof live);
  memset(stale, 0, sizeof stale);
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int r = 0; r < T_ROUNDS; r++) {
    int i = (int)((unsigned)rand_r(&seed) % T_LIVE);
    if (!ruda_handle_is_empty(&live[i])) {
      /* Live handles stay valid whatever other threads recycle. */
      if (ruda__handle_memory(&live[i]) == NULL) (*failures)++;
      stale[i] = live[i];
      ruda_handle_release(&live[i]);
    }
    live[i] = ruda__handle_wrap(ruda__memory_new(), 16 + (uint64_t)i, (ruda_stream_id_t){0});
    if (ruda_handle_is_empty(&live[i])) (*failures)++;
    /* A stale copy never comes back to life, even when its slot was just
     * handed out again (to this thread or another). */
    ruda_handle_t c = ruda_handle_clone(&stale[i]);
    if (!ruda_handle_is_empty(&c)) {
      (*failures)++;
      ruda_handle_release(&c);
    }
    if (stale[i].id == live[i].id && stale[i].id) (*failures)++;
  }
  for (int i = 0; i < T_LIVE; i++) ruda_handle_release(&live[i]);
  return NULL;
}

TEST(table_recycles_slots_safely_across_threads) {
  pthread_t th[T_THREADS];
  int failures[T_THREADS] = {0};
  for (int t = 0; t < T_THREADS; t++)
    ASSERT_EQ(pthread_create(&th[t], NULL, table_worker, &failures[t]), 0);
  for (int t = 0; t < T_THREADS; t++) ASSERT_EQ(pthread_join(th[t], NULL), 0);
  for (int t = 0; t < T_THREADS; t++) ASSERT_EQ(failures[t], 0);
}
