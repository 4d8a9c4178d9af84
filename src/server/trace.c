/* The timeline trace (see trace.h). */
#include "server/trace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRACE_BATCH 8192
#define TRACE_NAME_LEN 96
#define TRACE_CAT_LEN 16
#define TRACE_MAX_TRACKS 1024

typedef enum { EV_SLICE = 0, EV_COUNTER = 1 } event_kind_t;

typedef struct trace_event {
  uint8_t kind;
  uint16_t type_id, index_id;
  uint64_t stream;
  uint64_t start_ns, end_ns, value;
  char cat[TRACE_CAT_LEN];
  char name[TRACE_NAME_LEN];
} trace_event_t;

typedef struct trace_batch {
  trace_event_t *events;
  size_t len;
} trace_batch_t;

atomic_bool ruda__trace_enabled;

/* Events: the batch being filled, plus a spare for when it is full. */
static pthread_mutex_t g_ev_lock = PTHREAD_MUTEX_INITIALIZER;
static trace_event_t *g_events;
static size_t g_len;
static trace_event_t *g_spare;
static uint64_t g_dropped;
static bool g_closed; /* shut down: drop everything from now on */

/* Output: the file and the tracks already named. */
static pthread_mutex_t g_io_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_file;
static bool g_first_event = true;
static uint64_t g_t0_ns;
static struct {
  uint32_t pid;
  uint64_t tid;
  bool thread; /* false: the process entry */
} g_named[TRACE_MAX_TRACKS];
static size_t g_num_named;

static uint64_t trace_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *device_type_name(uint16_t type_id) {
  switch (type_id) {
    case RUDA_DEVICE_TYPE_CPU: return "cpu";
    case RUDA_DEVICE_TYPE_CUDA: return "cuda";
    case RUDA_DEVICE_TYPE_OPENCL: return "opencl";
    default: return "device";
  }
}

/* ---- Formatting (under g_io_lock) ---- */

static void write_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (c < 0x20) {
          fprintf(f, "\\u%04x", c);
        } else {
          fputc((int)c, f);
        }
    }
  }
  fputc('"', f);
}

static void begin_event(FILE *f) {
  fputs(g_first_event ? "\n" : ",\n", f);
  g_first_event = false;
}

/* Microseconds since the trace started, with nanosecond digits. */
static void write_us(FILE *f, uint64_t ns) {
  fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

static uint64_t rel_ns(uint64_t ts) { return ts > g_t0_ns ? ts - g_t0_ns : 0; }

/* Names the device's process and the stream's thread the first time they
 * appear. A full table just stops naming (the events still show). */
static void name_track(FILE *f, const trace_event_t *e, uint32_t pid) {
  bool have_process = false, have_thread = e->kind != EV_SLICE;
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
    begin_event(f);
    fprintf(f,
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
            ",\"tid\":0,\"args\":{\"name\":\"%s:%u\"}}",
            pid, device_type_name(e->type_id), (unsigned)e->index_id);
    begin_event(f);
    fprintf(f,
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRIu32
            ",\"tid\":0,\"args\":{\"sort_index\":%" PRIu32 "}}",
            pid, pid);
  }
  if (!have_thread && g_num_named < TRACE_MAX_TRACKS) {
    g_named[g_num_named].pid = pid;
    g_named[g_num_named].tid = e->stream;
    g_named[g_num_named].thread = true;
    ++g_num_named;
    begin_event(f);
    fprintf(f,
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
            ",\"args\":{\"name\":\"stream %" PRIu64 "\"}}",
            pid, e->stream, e->stream);
  }
}

static void write_event(FILE *f, const trace_event_t *e) {
  ruda_device_id_t dev = {e->type_id, e->index_id};
  uint32_t pid = ruda__trace_pid(dev);
  name_track(f, e, pid);
  begin_event(f);
  if (e->kind == EV_SLICE) {
    uint64_t start = rel_ns(e->start_ns);
    uint64_t end = rel_ns(e->end_ns);
    fputs("{\"ph\":\"X\",\"cat\":", f);
    write_json_string(f, e->cat);
    fputs(",\"name\":", f);
    write_json_string(f, e->name);
    fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64 ",\"ts\":", pid, e->stream);
    write_us(f, start);
    fputs(",\"dur\":", f);
    write_us(f, end > start ? end - start : 0);
    if (e->value > 0) fprintf(f, ",\"args\":{\"bytes\":%" PRIu64 "}", e->value);
    fputc('}', f);
  } else {
    fputs("{\"ph\":\"C\",\"name\":", f);
    write_json_string(f, e->name);
    fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":0,\"ts\":", pid);
    write_us(f, rel_ns(e->start_ns));
    fprintf(f, ",\"args\":{\"bytes\":%" PRIu64 "}}", e->value);
  }
}

static void write_batch(const trace_event_t *events, size_t len) {
  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    for (size_t i = 0; i < len; ++i) write_event(g_file, &events[i]);
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

static void push(const trace_event_t *e) {
  trace_event_t *full = NULL;
  size_t full_len = 0;

  pthread_mutex_lock(&g_ev_lock);
  if (g_closed) goto out_unlock;
  if (!g_events) {
    g_events = malloc(TRACE_BATCH * sizeof *g_events);
    if (!g_events) {
      ++g_dropped;
      goto out_unlock;
    }
  }
  g_events[g_len++] = *e;
  if (g_len == TRACE_BATCH) {
    full = g_events;
    full_len = g_len;
    g_events = g_spare; /* NULL: allocated on the next event */
    g_spare = NULL;
    g_len = 0;
  }
out_unlock:
  pthread_mutex_unlock(&g_ev_lock);

  if (full) {
    write_batch(full, full_len);
    pthread_mutex_lock(&g_ev_lock);
    if (!g_spare && !g_closed) {
      g_spare = full;
      full = NULL;
    }
    pthread_mutex_unlock(&g_ev_lock);
    free(full);
  }
}

void ruda__trace_slice(ruda_device_id_t dev, uint64_t stream, const char *category,
                       const char *name, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bytes) {
  if (!ruda__trace_on()) return;
  trace_event_t e;
  e.kind = EV_SLICE;
  e.type_id = dev.type_id;
  e.index_id = dev.index_id;
  e.stream = stream;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.value = bytes;
  copy_text(e.cat, sizeof e.cat, category);
  copy_text(e.name, sizeof e.name, name ? name : "unnamed");
  push(&e);
}

void ruda__trace_counter(ruda_device_id_t dev, const char *name, uint64_t ts_ns,
                         uint64_t value) {
  if (!ruda__trace_on()) return;
  trace_event_t e;
  e.kind = EV_COUNTER;
  e.type_id = dev.type_id;
  e.index_id = dev.index_id;
  e.stream = 0;
  e.start_ns = ts_ns;
  e.end_ns = ts_ns;
  e.value = value;
  e.cat[0] = '\0';
  copy_text(e.name, sizeof e.name, name ? name : "counter");
  push(&e);
}

/* ---- Lifetime ---- */

bool ruda__trace_start(const char *path) {
  if (!path || !*path) return false;
  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    pthread_mutex_unlock(&g_io_lock);
    return true;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    pthread_mutex_unlock(&g_io_lock);
    fprintf(stderr, "ruda: cannot open the trace file '%s'; tracing stays off\n", path);
    return false;
  }
  /* A large stdio buffer: batches are written with few system calls. */
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  fputs("{\"traceEvents\":[", f);
  g_file = f;
  g_first_event = true;
  g_num_named = 0;
  g_t0_ns = trace_clock_ns();
  pthread_mutex_lock(&g_ev_lock);
  g_closed = false;
  g_len = 0;
  g_dropped = 0;
  pthread_mutex_unlock(&g_ev_lock);
  atomic_store_explicit(&ruda__trace_enabled, true, memory_order_release);
  pthread_mutex_unlock(&g_io_lock);
  return true;
}

void ruda__trace_shutdown(void) {
  atomic_store_explicit(&ruda__trace_enabled, false, memory_order_relaxed);

  pthread_mutex_lock(&g_ev_lock);
  trace_event_t *rest = g_events;
  size_t rest_len = g_len;
  uint64_t dropped = g_dropped;
  g_events = NULL;
  g_len = 0;
  g_closed = true;
  trace_event_t *spare = g_spare;
  g_spare = NULL;
  pthread_mutex_unlock(&g_ev_lock);

  if (rest) write_batch(rest, rest_len);
  free(rest);
  free(spare);

  pthread_mutex_lock(&g_io_lock);
  if (g_file) {
    fprintf(g_file,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"ruda\","
            "\"dropped_events\":%" PRIu64 "}}\n",
            dropped);
    fclose(g_file);
    g_file = NULL;
  }
  pthread_mutex_unlock(&g_io_lock);
}

__attribute__((constructor)) static void trace_init_from_env(void) {
  /* Registered first, so it runs after every later atexit hook (the
   * client's shutdown still records its final events). */
  atexit(ruda__trace_shutdown);
  const char *path = getenv("RUDA_TRACE");
  if (path && *path) ruda__trace_start(path);
}
