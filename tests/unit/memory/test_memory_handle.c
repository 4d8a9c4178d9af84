/* Handles, bindings and descriptor reference counting, including clones and
 * releases from several threads while the device thread drains frees. */
#include <pthread.h>

#include "memory_test_util.h"

TEST(new_descriptor_counts) {
  ruda_memory_t *m = ruda__memory_new();
  ASSERT_NOT_NULL(m);
  ruda_memory_t *m2 = ruda__memory_new();
  ASSERT_UGT(ruda__memory_id(m2), ruda__memory_id(m));
  ruda_handle_t h = {m, 0, 0, 100, {7}};
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ASSERT_UEQ(ruda_handle_memory_id(&h), ruda__memory_id(m));
  ASSERT_UEQ(atomic_load(&m->total_refs), 1);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 1);
  ruda_handle_t c = ruda_handle_clone(&h);
  ASSERT_UEQ(atomic_load(&m->total_refs), 2);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 2);
  /* Unbound: the pool holds nothing, two user handles still allow can_mut
   * (<= 2), three do not. */
  ruda_handle_t c2 = ruda_handle_clone(&h);
  ASSERT_FALSE(ruda_handle_can_mut(&h));
  ruda_binding_t b = ruda_handle_binding(&h);
  ASSERT_UEQ(atomic_load(&m->total_refs), 4);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 3);
  ruda_binding_t b2 = ruda_handle_into_binding(&c2);
  ASSERT_NULL(c2.memory);
  ASSERT_UEQ(atomic_load(&m->total_refs), 4);
  ASSERT_UEQ(atomic_load(&m->handle_refs), 2);
  ruda_binding_t b3 = ruda_binding_clone(&b);
  ASSERT_UEQ(atomic_load(&m->total_refs), 5);
  ruda_binding_release(&b);
  ruda_binding_release(&b2);
  ruda_binding_release(&b3);
  ASSERT_NULL(b.memory);
  ruda_handle_release(&c);
  ASSERT_UEQ(atomic_load(&m->total_refs), 1);
  ruda_handle_release(&h); /* frees the descriptor (ASan checks the rest) */
  ruda_handle_release(&h); /* empty: no-op */
  ruda_handle_release(NULL);
  ruda_binding_release(NULL);
  ruda__memory_release_handle(m2);
}

TEST(empty_handle) {
  ruda_handle_t h;
  memset(&h, 0, sizeof h);
  ASSERT_FALSE(ruda_handle_can_mut(&h));
  ASSERT_UEQ(ruda_handle_memory_id(&h), 0);
  ruda_handle_t c = ruda_handle_clone(&h);
  ASSERT_NULL(c.memory);
  ruda_binding_t b = ruda_handle_binding(&h);
  ASSERT_NULL(b.memory);
}

TEST(offsets_add_and_size_in_used) {
  ruda_memory_t *m = ruda__memory_new();
  ruda_handle_t h = {m, 0, 0, 1000, {0}};
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

TEST(bound_handle_can_mut_counts_pool_copy) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 0, NULL);
  ruda_handle_t h;
  ALLOC(mm, 64, &h);
  /* Pool copy + one user handle. */
  ASSERT_UEQ(atomic_load(&h.memory->handle_refs), 2);
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ruda_handle_t c = ruda_handle_clone(&h);
  ASSERT_FALSE(ruda_handle_can_mut(&h));
  ruda_handle_release(&c);
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ruda_handle_release(&h);
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
  ruda__memory_manager_destroy(mm);
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
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 0, NULL);
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
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 0, NULL);
  for (int round = 0; round < 50; round++) {
    ruda_handle_t hs[N_HANDLES];
    ruda_binding_t task[N_HANDLES];
    for (int i = 0; i < N_HANDLES; i++) {
      memset(&hs[i], 0, sizeof hs[i]);
      hs[i].memory = ruda__memory_new();
      hs[i].size = 128;
      task[i] = ruda_handle_binding(&hs[i]); /* what a queued task holds */
    }
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, release_half, hs), 0);
    for (int i = 0; i < N_HANDLES; i++) {
      ASSERT_OK(ruda__memory_alloc(mm, task[i].memory, 128, (uint64_t)i));
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
