/* The world and process groups (include/ruda/mpi.h): MPI start and end,
 * launcher detection, local ranks, splitting, device choice, and the
 * registry that ruda_world_finalize walks.
 *
 * Each group holds two duplicates of its MPI communicator: `comm` for the
 * operations, which device workers run, and `ctl` for what callers run
 * themselves (barriers, the NCCL id's broadcast), so that a caller's call
 * never meets a worker's on one communicator. Both return errors instead
 * of aborting (MPI_ERRORS_RETURN).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "client/collective.h"
#include "comm/cpu_collective.h"
#include "mpi/mpi_internal.h"
#include "ruda/client.h"

static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
static ruda_group_t *world;      /* the registry's reference */
static ruda_group_t *live;       /* every group not yet freed */
static bool started_mpi, finalized, atexit_done;

/* f16 and bf16 reductions: sum, min, max each. */
static MPI_Op half_ops[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                                {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};

/* ---- Launchers ---- */

const char *ruda_world_launcher(void) {
  static const struct { const char *var, *also, *name; } known[] = {
      {"OMPI_COMM_WORLD_SIZE", NULL, "Open MPI"},
      {"PMIX_RANK", NULL, "PMIx"},
      {"PMI_SIZE", NULL, "PMI"},
      {"MV2_COMM_WORLD_SIZE", NULL, "MVAPICH"},
      {"SLURM_STEP_ID", "SLURM_PROCID", "Slurm"},
      {"PALS_RANKID", NULL, "PALS"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const char *v = getenv(known[i].var);
    if (!v || !*v) continue;
    if (known[i].also && !getenv(known[i].also)) continue;
    return known[i].name;
  }
  return NULL;
}

/* ---- Half-precision reductions for MPI ---- */

#define DEFINE_HALF_OP(NAME, TYPE, OP)                                               \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt) {              \
    (void)dt;                                                                        \
    const void *src[2] = {in, inout};                                                \
    void *dst[1] = {inout};                                                          \
    ruda__cpu_reduce(TYPE, OP, src, 2, dst, 1, (size_t)*len);                        \
  }
/* Sum, min and max of one type: T_sum, T_min, T_max. */
#define DEFINE_HALF_OPS(T, TYPE)                 \
  DEFINE_HALF_OP(T##_sum, TYPE, RUDA_REDUCE_SUM) \
  DEFINE_HALF_OP(T##_min, TYPE, RUDA_REDUCE_MIN) \
  DEFINE_HALF_OP(T##_max, TYPE, RUDA_REDUCE_MAX)
DEFINE_HALF_OPS(f16, RUDA_ELEM_F16)
DEFINE_HALF_OPS(bf16, RUDA_ELEM_BF16)

static int create_half_ops(void) {
  MPI_User_function *fns[2][3] = {{f16_sum, f16_min, f16_max}, {bf16_sum, bf16_min, bf16_max}};
  for (int t = 0; t < 2; t++) {
    for (int o = 0; o < 3; o++) {
      int rc = MPI_Op_create(fns[t][o], 1, &half_ops[t][o]);
      if (rc != MPI_SUCCESS) return rc;
    }
  }
  return MPI_SUCCESS;
}

MPI_Op ruda__mpi_half_op(ruda_elem_type_t t, ruda_reduce_op_t op) {
  int ti = t == RUDA_ELEM_F16 ? 0 : t == RUDA_ELEM_BF16 ? 1 : -1;
  int oi = op == RUDA_REDUCE_MIN ? 1 : op == RUDA_REDUCE_MAX ? 2 : 0;
  return ti < 0 ? MPI_OP_NULL : half_ops[ti][oi];
}

/* ---- Groups ---- */

static uint64_t random_id(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
    close(fd);
  }
  if (v == 0) v = ruda__now_ns() ^ ((uint64_t)getpid() << 32);
  return v | 1; /* never 0 */
}

/* A group over `from` (duplicated); collective over `from`. */
static ruda_status_t group_new(MPI_Comm from, ruda_group_t **out) {
  *out = NULL;
  ruda_group_t *g = ruda__calloc(1, sizeof *g);
  if (!g) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *g);
  g->comm = g->ctl = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(from, &g->comm);
  const char *call = "MPI_Comm_dup";
  if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(from, &g->ctl);
  if (rc == MPI_SUCCESS) {
    call = "MPI_Comm_set_errhandler";
    rc = MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(g->ctl, MPI_ERRORS_RETURN);
  }
  int rank = 0, size = 1, lrank = 0, lsize = 1;
  if (rc == MPI_SUCCESS) {
    call = "MPI_Comm_rank";
    rc = MPI_Comm_rank(g->ctl, &rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(g->ctl, &size);
  }
  if (rc == MPI_SUCCESS) {
    /* The ranks on this machine: those that share memory with this one. */
    MPI_Comm node = MPI_COMM_NULL;
    call = "MPI_Comm_split_type";
    ruda__mpi_watch_begin("MPI_Comm_split_type (finding the local ranks)", NULL, 0, 0);
    rc = MPI_Comm_split_type(g->ctl, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    ruda__mpi_watch_end();
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(node, &lrank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &lsize);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  }
  if (rc == MPI_SUCCESS) {
    g->id = rank == 0 ? random_id() : 0;
    call = "MPI_Bcast";
    ruda__mpi_watch_begin("MPI_Bcast of a new group's id", NULL, 0, 0);
    rc = MPI_Bcast(&g->id, 1, MPI_UINT64_T, 0, g->ctl);
    ruda__mpi_watch_end();
  }
  if (rc != MPI_SUCCESS) {
    ruda_status_t e = ruda__mpi_error(RUDA_ERR_SERVER_GENERIC, rc, call, "creating a group");
    if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
    if (g->ctl != MPI_COMM_NULL) MPI_Comm_free(&g->ctl);
    ruda__free(g);
    return e;
  }
  g->rank = (uint32_t)rank;
  g->size = (uint32_t)size;
  g->local_rank = (uint32_t)lrank;
  g->local_size = (uint32_t)lsize;
  atomic_init(&g->refs, 1);
  pthread_mutex_init(&g->lock, NULL);
  pthread_mutex_lock(&world_lock);
  g->next = live;
  if (live) live->prev = g;
  live = g;
  pthread_mutex_unlock(&world_lock);
  *out = g;
  return NULL;
}

/* Keeps the first error in *first, dropping RUDA_ERR_UNAVAILABLE (after
 * ruda_shutdown() nothing is queued and nothing needs destroying). */
static void keep_first(ruda_status_t *first, ruda_status_t s) {
  if (s && ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    ruda_status_free(s);
    s = NULL;
  }
  if (!*first) *first = s;
  else ruda_status_free(s);
}

/* Waits for what the group's devices queued (their MPI jobs still run). */
static void group_drain(ruda_group_t *g, ruda_status_t *first) {
  for (size_t i = 0; i < g->nclients; i++) keep_first(first, ruda_client_sync(g->clients[i]));
}

/* Destroys the group's NCCL communicators and its MPI communicators, and
 * lets go of its clients. Called without world_lock; g is out of the
 * registry or dead, and drained. */
static void group_teardown(ruda_group_t *g, ruda_status_t *first) {
  for (size_t i = 0; i < g->nclients; i++) {
    if (g->nccl[i]) keep_first(first, ruda__client_comm_destroy(g->clients[i], g->id));
    g->nccl[i] = false;
    ruda_client_release(g->clients[i]);
    g->clients[i] = NULL;
  }
  g->nclients = 0;
  if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
  if (g->ctl != MPI_COMM_NULL) MPI_Comm_free(&g->ctl);
}

static void unlink_locked(ruda_group_t *g) {
  if (g->prev) g->prev->next = g->next;
  else if (live == g) live = g->next;
  if (g->next) g->next->prev = g->prev;
  g->next = g->prev = NULL;
}

ruda_group_t *ruda_group_retain(ruda_group_t *g) {
  if (g) atomic_fetch_add(&g->refs, 1);
  return g;
}

void ruda_group_release(ruda_group_t *g) {
  if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
  pthread_mutex_lock(&world_lock);
  bool dead = g->dead;
  if (!dead) unlink_locked(g);
  pthread_mutex_unlock(&world_lock);
  ruda_status_t err = NULL;
  if (!dead) {
    group_drain(g, &err);
    group_teardown(g, &err);
  }
  ruda_status_free(err);
  pthread_mutex_destroy(&g->lock);
  ruda__free(g);
}

ruda_status_t ruda__group_check(const ruda_group_t *g, const char *fn) {
  if (!g) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: NULL group", fn);
  if (g->dead) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s: the world was finalized "
                              "(ruda_world_finalize)", fn);
  }
  return NULL;
}

static bool group_find_locked(const ruda_group_t *g, ruda_device_id_t id, size_t *out_index) {
  for (size_t i = 0; i < g->nclients; i++) {
    ruda_device_id_t k = ruda_client_device(g->clients[i]);
    if (k.type_id == id.type_id && k.index_id == id.index_id) {
      *out_index = i;
      return true;
    }
  }
  return false;
}

ruda_status_t ruda__group_use(ruda_group_t *g, ruda_client_t *c, size_t *out_index,
                              ruda__comm_caps_t *out_caps) {
  ruda_device_id_t id = ruda_client_device(c);
  pthread_mutex_lock(&g->lock);
  bool found = group_find_locked(g, id, out_index);
  if (found) *out_caps = g->caps[*out_index];
  pthread_mutex_unlock(&g->lock);
  if (found) return NULL;
  /* First use by this device: what it offers, asked outside the lock. */
  ruda__comm_caps_t caps;
  ruda_status_t s = ruda__client_comm_caps(c, &caps);
  if (s) return s;
  pthread_mutex_lock(&g->lock);
  if (!group_find_locked(g, id, out_index)) {
    if (g->nclients == RUDA__GROUP_MAX_CLIENTS) {
      pthread_mutex_unlock(&g->lock);
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "a group is used by at most %d devices of a process (split it)",
                                RUDA__GROUP_MAX_CLIENTS);
    }
    *out_index = g->nclients;
    g->caps[g->nclients] = caps;
    g->clients[g->nclients++] = ruda_client_retain(c);
  }
  *out_caps = g->caps[*out_index];
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

uint32_t ruda_group_rank(const ruda_group_t *g) { return g ? g->rank : 0; }
uint32_t ruda_group_size(const ruda_group_t *g) { return g ? g->size : 0; }
uint32_t ruda_group_local_rank(const ruda_group_t *g) { return g ? g->local_rank : 0; }
uint32_t ruda_group_local_size(const ruda_group_t *g) { return g ? g->local_size : 0; }

/* ---- The world ---- */

static void finalize_at_exit(void) {
  ruda_status_free(ruda_world_finalize());
}

ruda_status_t ruda_world_init(int *argc, char ***argv, ruda_group_t **out) {
  if (!out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_world_init: NULL out");
  *out = NULL;
  pthread_mutex_lock(&world_lock);
  if (finalized) {
    pthread_mutex_unlock(&world_lock);
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_world_init: the world was finalized already");
  }
  if (world) {
    *out = ruda_group_retain(world);
    pthread_mutex_unlock(&world_lock);
    return NULL;
  }
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) {
      pthread_mutex_unlock(&world_lock);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "MPI_Init_thread failed (code %d)", rc);
    }
    started_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    pthread_mutex_unlock(&world_lock);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "ruda's MPI transport needs MPI_THREAD_MULTIPLE (device workers "
                              "call MPI); this MPI gives thread level %d%s",
                              provided,
                              inited ? " (the program initialized MPI itself: ask for "
                                       "MPI_THREAD_MULTIPLE in MPI_Init_thread)"
                                     : "");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ruda_status_t s = ruda__mpi_watchdog_start((uint32_t)rank, (uint32_t)size);
  int rc = s ? MPI_SUCCESS : create_half_ops();
  if (!s && rc != MPI_SUCCESS) s = ruda__mpi_error(RUDA_ERR_UNAVAILABLE, rc, "MPI_Op_create", NULL);
  pthread_mutex_unlock(&world_lock);
  ruda_group_t *g = NULL;
  if (!s) s = group_new(MPI_COMM_WORLD, &g);
  if (s) return s;
  pthread_mutex_lock(&world_lock);
  world = g;
  if (started_mpi && !atexit_done) {
    atexit_done = true;
    atexit(finalize_at_exit);
  }
  *out = ruda_group_retain(world);
  pthread_mutex_unlock(&world_lock);
  return NULL;
}

ruda_status_t ruda_world_finalize(void) {
  pthread_mutex_lock(&world_lock);
  if (finalized || !world) {
    finalized = true;
    pthread_mutex_unlock(&world_lock);
    return NULL;
  }
  finalized = true;
  ruda_group_t *list = live;
  live = NULL;
  ruda_group_t *w = world;
  world = NULL;
  /* A reference each, so that no group is freed under this walk by a job
   * that lets go of the last one. */
  for (ruda_group_t *g = list; g; g = g->next) atomic_fetch_add(&g->refs, 1);
  pthread_mutex_unlock(&world_lock);
  /* Queued jobs run first (on every rank: they are collective), then
   * every live group goes dead and its resources go, in the registry's
   * order (creation order reversed), the same on every rank. */
  ruda_status_t err = NULL;
  for (ruda_group_t *g = list; g; g = g->next) group_drain(g, &err);
  pthread_mutex_lock(&world_lock);
  for (ruda_group_t *g = list; g; g = g->next) g->dead = true;
  pthread_mutex_unlock(&world_lock);
  for (ruda_group_t *g = list; g; g = g->next) group_teardown(g, &err);
  for (ruda_group_t *g = list, *next; g; g = next) {
    next = g->next;
    ruda_group_release(g); /* dead: frees only the struct when last */
  }
  ruda_group_release(w);
  for (int t = 0; t < 2; t++) {
    for (int o = 0; o < 3; o++) {
      if (half_ops[t][o] != MPI_OP_NULL) MPI_Op_free(&half_ops[t][o]);
    }
  }
  /* MPI_Finalize is not watched: waiting there for peers that still
   * compute is normal. The watchdog keeps guarding the peers' own calls. */
  ruda__mpi_watchdog_stop();
  if (started_mpi) MPI_Finalize();
  return err;
}

ruda_status_t ruda_group_split(ruda_group_t *g, int color, int key, ruda_group_t **out) {
  if (!out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_group_split: NULL out");
  *out = NULL;
  ruda_status_t s = ruda__group_check(g, "ruda_group_split");
  if (s) return s;
  if (color < RUDA_GROUP_NO_COLOR) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_group_split: color %d (>= 0, or RUDA_GROUP_NO_COLOR)", color);
  }
  MPI_Comm part = MPI_COMM_NULL;
  ruda__mpi_watch_begin("MPI_Comm_split", NULL, 0, g->size);
  int rc = MPI_Comm_split(g->ctl, color == RUDA_GROUP_NO_COLOR ? MPI_UNDEFINED : color, key, &part);
  ruda__mpi_watch_end();
  if (rc != MPI_SUCCESS) return ruda__mpi_error(RUDA_ERR_SERVER_GENERIC, rc, "MPI_Comm_split", NULL);
  if (part == MPI_COMM_NULL) return NULL;
  s = group_new(part, out);
  MPI_Comm_free(&part);
  return s;
}

ruda_status_t ruda_group_barrier(ruda_group_t *g) {
  ruda_status_t s = ruda__group_check(g, "ruda_group_barrier");
  if (s) return s;
  ruda__mpi_watch_begin("MPI_Barrier", NULL, 0, g->size);
  int rc = MPI_Barrier(g->ctl);
  ruda__mpi_watch_end();
  return rc == MPI_SUCCESS ? NULL : ruda__mpi_error(RUDA_ERR_SERVER_GENERIC, rc, "MPI_Barrier", NULL);
}

ruda_status_t ruda_group_device(const ruda_group_t *g, const char *name, ruda_device_id_t *out) {
  if (!g || !out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_group_device: NULL argument");
  if (!name || !*name) name = getenv("RUDA_DEVICE");
  if (!name || !*name) {
    uint32_t n = 0;
    ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
    ruda_status_free(s);
    name = n > 0 ? "cuda" : "cpu";
  }
  ruda_device_id_t id;
  ruda_status_t s = ruda_device_parse(name, &id);
  if (s) return s;
  if (!strchr(name, ':')) {
    uint32_t n = 0;
    s = ruda_device_count(id.type_id, &n);
    if (s) return s;
    if (n == 0) {
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "ruda_group_device: no %s device", name);
    }
    id.index_id = (uint16_t)(g->local_rank % n);
  }
  *out = id;
  return NULL;
}
