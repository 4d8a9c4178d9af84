/* The timeline trace (see trace.h). */
#include "base/alloc.h"
#include "server/trace.h"
#include "ruda/profiling.h"

#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRACE_BATCH 8192
#define TRACE_NAME_LEN 96
#define TRACE_MAX_TRACKS 1024

typedef enum { EV_SLICE = 0, EV_COUNTER = 1 } event_kind_t;

typedef struct trace_event {
  uint8_t kind;
  uint16_t type_id, index_id;
  uint64_t stream;
  uint64_t start_ns, end_ns, value;
  const char *cat; /* static storage (trace.h) */
  char name[TRACE_NAME_LEN];
} trace_event_t;

#define TRACE_MAX_PENDING 16 /* full batches queued for the writer */
#define TRACE_MAX_SPARES 2

ruda__trace_flag_t ruda__trace_flag;

/* Events. Threads append to the batch being filled under g_ev_lock; a full
 * batch goes to the writer thread's queue (or, when the writer is behind
 * or could not start, is written by the thread that filled it). */
_Alignas(64) static pthread_mutex_t g_ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ev_cond = PTHREAD_COND_INITIALIZER;
static trace_event_t *g_events;
static size_t g_len;
static trace_event_t *g_spares[TRACE_MAX_SPARES];
static size_t g_num_spares;
static trace_event_t *g_pending[TRACE_MAX_PENDING];
static size_t g_num_pending;
static size_t g_inline_writers; /* threads writing a batch themselves */
static uint64_t g_dropped;
static bool g_closed = true; /* no file: drop everything */
static bool g_writer_running, g_writer_stop;
static pthread_t g_writer;

/* Output: the file and the tracks already named. */
_Alignas(64) static pthread_mutex_t g_io_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_file;
static bool g_first_event = true;
static uint64_t g_t0_ns;
static struct {
  uint32_t pid;
  uint64_t tid;
  bool thread; /* false: the process entry */
} g_named[TRACE_MAX_TRACKS];
static size_t g_num_named;

/* This process's rank in an MPI (or Slurm) job, from the launcher's
 * environment, or -1 outside one. Read when a trace opens. */
static long g_rank = -1;

static long launcher_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                     "MV2_COMM_WORLD_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (!v || !*v) continue;
    char *end = NULL;
    long r = strtol(v, &end, 10);
    if (end && *end == '\0' && r >= 0 && r < 1000000) return r;
  }
  return -1;
}

/* The file name for `path`: %r becomes the rank (0 outside a job), %p the
 * process id, %% a '%'. In a job, a path without %r gets ".rank<r>" before
 * its extension (trace.json -> trace.rank1.json), so that ranks never
 * write one file. False when the result does not fit. */
static bool expand_path(const char *path, long rank, char *out, size_t cap) {
  size_t used = 0;
  bool has_rank = false;
  for (const char *p = path; *p; p++) {
    char piece[32];
    const char *add = piece;
    if (p[0] == '%' && p[1] == 'r') {
      snprintf(piece, sizeof piece, "%ld", rank < 0 ? 0 : rank);
      has_rank = true;
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      snprintf(piece, sizeof piece, "%ld", (long)getpid());
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      add = "%";
      p++;
    } else {
      piece[0] = *p;
      piece[1] = '\0';
    }
    size_t n = strlen(add);
    if (used + n >= cap) return false;
    memcpy(out + used, add, n);
    used += n;
  }
  out[used] = '\0';
  if (rank < 0 || has_rank) return true;
  const char *slash = strrchr(out, '/');
  char *dot = strrchr(slash ? slash + 1 : out, '.');
  char tag[32];
  int tn = snprintf(tag, sizeof tag, ".rank%ld", rank);
  if (tn < 0 || used + (size_t)tn >= cap) return false;
  size_t at = dot && dot != (slash ? slash + 1 : out) ? (size_t)(dot - out) : used;
  memmove(out + at + tn, out + at, used - at + 1);
  memcpy(out + at, tag, (size_t)tn);
  return true;
}

/* A device's process id in the file: ruda__trace_pid, offset by the rank
 * in a job so that the ranks' files never share a pid. */
static uint32_t file_pid(ruda_device_id_t dev) {
  uint32_t pid = ruda__trace_pid(dev);
  return g_rank > 0 ? pid + (uint32_t)g_rank * 100000u : pid;
}

static uint64_t trace_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Formatting (under g_io_lock) ----
 * Events are formatted by hand into a growing text buffer, written with one
 * fwrite per batch: printf-style formatting costs several times more. */

_Alignas(64) static char *g_out;
static size_t g_out_len, g_out_cap;
static bool g_out_failed;

static bool out_reserve(size_t n) {
  if (g_out_len + n <= g_out_cap) return true;
  size_t cap = g_out_cap ? g_out_cap : 1 << 16;
  while (cap < g_out_len + n) cap *= 2;
  char *grown = ruda__realloc(g_out, cap);
  if (!grown) {
    g_out_failed = true;
    return false;
  }
  g_out = grown;
  g_out_cap = cap;
  return true;
}

static void out_mem(const char *s, size_t n) {
  if (!out_reserve(n)) return;
  memcpy(g_out + g_out_len, s, n);
  g_out_len += n;
}

#define OUT_LIT(s) out_mem((s), sizeof(s) - 1)

static void out_u64(uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  out_mem(tmp + sizeof tmp - n, n);
}

/* Microseconds with nanosecond digits: "1234.005". */
static void out_us(uint64_t ns) {
  char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                  (char)('0' + ns % 10)};
  out_u64(ns / 1000);
  out_mem(frac, 4);
}

/* Names are short: measuring first, then escaping in place, is cheaper
 * than a second buffer. */
static void out_json_string(const char *s) {
  size_t n = ruda__json_escape(s, NULL, 0);
  if (!out_reserve(n + 1)) return;
  ruda__json_escape(s, g_out + g_out_len, n + 1);
  g_out_len += n;
}

static void begin_event(void) {
  if (g_first_event) {
    OUT_LIT("\n");
  } else {
    OUT_LIT(",\n");
  }
  g_first_event = false;
}

static uint64_t rel_ns(uint64_t ts) { return ts > g_t0_ns ? ts - g_t0_ns : 0; }

/* Names the device's process and the stream's thread the first time they
 * appear. A full table just stops naming (the events still show). */
static void name_track(const trace_event_t *e, uint32_t pid) {
  static uint32_t last_pid = UINT32_MAX;
  static uint64_t last_tid = UINT64_MAX;
  bool is_slice = e->kind == EV_SLICE;
  if (g_num_named == 0) last_pid = UINT32_MAX; /* a new file */
  if (pid == last_pid && (!is_slice || e->stream == last_tid)) return;
  bool have_process = false, have_thread = !is_slice;
  for (size_t i = 0; i < g_num_named; ++i) {
    if (g_named[i].pid != pid) continue;
    if (!g_named[i].thread) have_process = true;
    if (g_named[i].thread && g_named[i].tid == e->stream) have_thread = true;
  }
  if (!have_process && g_num_named < TRACE_MAX_TRACKS) {
    g_named[g_num_named].pid = pid;
    g_named[g_num_named].tid = 0;
    g_named[g_num_named].thread = false;
    ++g_num_named;
    /* The backend registry's name ("cpu:0", "opencl:1"), after the rank
     * in a job ("rank 1 cpu:0"). */
    char dev_name[64], name[96];
    ruda_device_id_format((ruda_device_id_t){e->type_id, e->index_id}, dev_name,
                          sizeof dev_name);
    if (g_rank >= 0) {
      snprintf(name, sizeof name, "rank %ld %s", g_rank, dev_name);
    } else {
      snprintf(name, sizeof name, "%s", dev_name);
    }
    begin_event();
    OUT_LIT("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out_u64(pid);
    OUT_LIT(",\"tid\":0,\"args\":{\"name\":");
    out_json_string(name);
    OUT_LIT("}}");
    begin_event();
    OUT_LIT("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
    out_u64(pid);
    OUT_LIT(",\"tid\":0,\"args\":{\"sort_index\":");
    out_u64(pid);
    OUT_LIT("}}");
  }
  if (!have_thread && g_num_named < TRACE_MAX_TRACKS) {
    g_named[g_num_named].pid = pid;
    g_named[g_num_named].tid = e->stream;
    g_named[g_num_named].thread = true;
    ++g_num_named;
    begin_event();
    OUT_LIT("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
    out_u64(pid);
    OUT_LIT(",\"tid\":");
    out_u64(e->stream);
    OUT_LIT(",\"args\":{\"name\":\"stream ");
    out_u64(e->stream);
    OUT_LIT("\"}}");
  }
  if (is_slice && (have_thread || g_num_named < TRACE_MAX_TRACKS)) {
    last_pid = pid;
    last_tid = e->stream;
  }
}

static void write_event(const trace_event_t *e) {
  ruda_device_id_t dev = {e->type_id, e->index_id};
  uint32_t pid = file_pid(dev);
  name_track(e, pid);
  begin_event();
  if (e->kind == EV_SLICE) {
    uint64_t start = rel_ns(e->start_ns);
    uint64_t end = rel_ns(e->end_ns);
    OUT_LIT("{\"ph\":\"X\",\"cat\":");
    out_json_string(e->cat);
    OUT_LIT(",\"name\":");
    out_json_string(e->name);
    OUT_LIT(",\"pid\":");
    out_u64(pid);
    OUT_LIT(",\"tid\":");
    out_u64(e->stream);
    OUT_LIT(",\"ts\":");
    out_us(start);
    OUT_LIT(",\"dur\":");
    out_us(end > start ? end - start : 0);
    if (e->value > 0) {
      OUT_LIT(",\"args\":{\"bytes\":");
      out_u64(e->value);
      OUT_LIT("}");
    }
    OUT_LIT("}");
  } else {
    OUT_LIT("{\"ph\":\"C\",\"name\":");
    out_json_string(e->name);
    OUT_LIT(",\"pid\":");
    out_u64(pid);
    OUT_LIT(",\"tid\":0,\"ts\":");
    out_us(rel_ns(e->start_ns));
    OUT_LIT(",\"args\":{\"bytes\":");
    out_u64(e->value);
    OUT_LIT("}}");
  }
}

static void write_batch(const trace_event_t *events, size_t len) {
  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    g_out_len = 0;
    for (size_t i = 0; i < len; ++i) write_event(&events[i]);
    if (!g_out_failed) fwrite(g_out, 1, g_out_len, g_file);
    g_out_failed = false;
    g_out_len = 0;
    fflush(g_file);
  }
  pthread_mutex_unlock(&g_io_lock);
}

/* ---- Recording ---- */

static void copy_text(char *dst, size_t cap, const char *src) {
  if (!src) src = "";
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Keeps a written batch for reuse, or frees it. Under g_ev_lock. */
static void recycle_locked(trace_event_t *batch) {
  if (!g_closed && g_num_spares < TRACE_MAX_SPARES) {
    g_spares[g_num_spares++] = batch;
  } else {
    ruda__free(batch);
  }
}

/* Appends one event, filled in place in the batch (one copy of the
 * name, under the short event lock; the category is a pointer). */
static void push(uint8_t kind, ruda_device_id_t dev, uint64_t stream, const char *cat,
                 const char *name, uint64_t start_ns, uint64_t end_ns, uint64_t value) {
  trace_event_t *inline_batch = NULL;

  pthread_mutex_lock(&g_ev_lock);
  if (g_closed) goto out_unlock;
  if (!g_events) {
    g_events = g_num_spares ? g_spares[--g_num_spares]
                            : ruda__malloc(TRACE_BATCH * sizeof *g_events);
    if (!g_events) {
      ++g_dropped;
      goto out_unlock;
    }
  }
  trace_event_t *e = &g_events[g_len++];
  e->kind = kind;
  e->type_id = dev.type_id;
  e->index_id = dev.index_id;
  e->stream = stream;
  e->start_ns = start_ns;
  e->end_ns = end_ns;
  e->value = value;
  e->cat = cat ? cat : "";
  copy_text(e->name, sizeof e->name, name);
  if (g_len == TRACE_BATCH) {
    if (g_writer_running && g_num_pending < TRACE_MAX_PENDING) {
      g_pending[g_num_pending++] = g_events;
      pthread_cond_broadcast(&g_ev_cond);
    } else {
      inline_batch = g_events;
      ++g_inline_writers;
    }
    g_events = NULL;
    g_len = 0;
  }
out_unlock:
  pthread_mutex_unlock(&g_ev_lock);

  if (inline_batch) {
    write_batch(inline_batch, TRACE_BATCH);
    pthread_mutex_lock(&g_ev_lock);
    recycle_locked(inline_batch);
    --g_inline_writers;
    pthread_cond_broadcast(&g_ev_cond);
    pthread_mutex_unlock(&g_ev_lock);
  }
}

/* The writer: formats and writes full batches in the order they filled. */
static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_ev_lock);
  for (;;) {
    while (g_num_pending == 0 && !g_writer_stop) pthread_cond_wait(&g_ev_cond, &g_ev_lock);
    if (g_num_pending == 0) break;
    trace_event_t *batch = g_pending[0];
    memmove(g_pending, g_pending + 1, (g_num_pending - 1) * sizeof *g_pending);
    --g_num_pending;
    pthread_mutex_unlock(&g_ev_lock);
    write_batch(batch, TRACE_BATCH);
    pthread_mutex_lock(&g_ev_lock);
    recycle_locked(batch);
  }
  pthread_mutex_unlock(&g_ev_lock);
  return NULL;
}

void ruda__trace_slice(ruda_device_id_t dev, uint64_t stream, const char *category,
                       const char *name, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bytes) {
  if (!ruda__trace_on()) return;
  push(EV_SLICE, dev, stream, category, name ? name : "unnamed", start_ns, end_ns, bytes);
}

void ruda__trace_counter(ruda_device_id_t dev, const char *name, uint64_t ts_ns,
                         uint64_t value) {
  if (!ruda__trace_on()) return;
  push(EV_COUNTER, dev, 0, "", name ? name : "counter", ts_ns, ts_ns, value);
}

/* ---- Lifetime ---- */

/* Opens the file and starts the writer: 0, or the errno of fopen. A trace
 * already running is left as it is (0). */
static int trace_open(const char *path) {
  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    pthread_mutex_unlock(&g_io_lock);
    return 0;
  }
  long rank = launcher_rank();
  char file[4096];
  if (!expand_path(path, rank, file, sizeof file)) {
    pthread_mutex_unlock(&g_io_lock);
    return ENAMETOOLONG;
  }
  FILE *f = fopen(file, "w");
  if (!f) {
    int err = errno ? errno : EIO;
    pthread_mutex_unlock(&g_io_lock);
    return err;
  }
  fputs("{\"traceEvents\":[", f);
  g_file = f;
  g_rank = rank;
  g_first_event = true;
  g_num_named = 0;
  g_t0_ns = trace_clock_ns();

  pthread_mutex_lock(&g_ev_lock);
  g_closed = false;
  g_len = 0;
  g_dropped = 0;
  g_writer_stop = false;
  /* Without a writer thread, full batches are written inline. */
  g_writer_running = pthread_create(&g_writer, NULL, writer_main, NULL) == 0;
  pthread_mutex_unlock(&g_ev_lock);

  atomic_store_explicit(&ruda__trace_flag.on, true, memory_order_release);
  pthread_mutex_unlock(&g_io_lock);
  return 0;
}

bool ruda__trace_start(const char *path) {
  if (!path || !*path) return false;
  int err = trace_open(path);
  if (err) {
    fprintf(stderr, "ruda: cannot open the trace file '%s' (%s); tracing stays off\n", path,
            strerror(err));
  }
  return err == 0;
}

ruda_status_t ruda_trace_start(const char *path) {
  if (!path || !*path) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_trace_start: no file name");
  }
  int err = trace_open(path);
  if (err) {
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "cannot open the trace file '%s' (%s); tracing stays off", path,
                              strerror(err));
  }
  return NULL;
}

void ruda_trace_stop(void) { ruda__trace_shutdown(); }

bool ruda_trace_active(void) { return ruda__trace_on(); }

void ruda__trace_shutdown(void) {
  atomic_store_explicit(&ruda__trace_flag.on, false, memory_order_relaxed);

  pthread_mutex_lock(&g_ev_lock);
  g_closed = true;
  trace_event_t *rest = g_events;
  size_t rest_len = g_len;
  g_events = NULL;
  g_len = 0;
  bool join = g_writer_running;
  g_writer_running = false;
  g_writer_stop = true;
  pthread_cond_broadcast(&g_ev_cond);
  /* Batches being written by the threads that filled them land first. */
  while (g_inline_writers) pthread_cond_wait(&g_ev_cond, &g_ev_lock);
  uint64_t dropped = g_dropped;
  pthread_mutex_unlock(&g_ev_lock);

  if (join) pthread_join(g_writer, NULL); /* it drains the queue first */
  if (rest) write_batch(rest, rest_len);
  ruda__free(rest);

  pthread_mutex_lock(&g_ev_lock);
  while (g_num_spares) ruda__free(g_spares[--g_num_spares]);
  pthread_mutex_unlock(&g_ev_lock);

  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    fprintf(g_file,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"ruda\","
            "\"dropped_events\":%" PRIu64 "}}\n",
            dropped);
    fclose(g_file);
    g_file = NULL;
  }
  ruda__free(g_out);
  g_out = NULL;
  g_out_len = g_out_cap = 0;
  pthread_mutex_unlock(&g_io_lock);
}

__attribute__((constructor)) static void trace_init_from_env(void) {
  /* Registered first, so it runs after every later atexit hook (the
   * client's shutdown still records its final events). */
  atexit(ruda__trace_shutdown);
  const char *path = getenv("RUDA_TRACE");
  if (path && *path) ruda__trace_start(path);
}
