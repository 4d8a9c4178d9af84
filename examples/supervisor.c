/* A supervisor that restarts its worker process when the worker's device
 * is lost.
 *
 * A device whose context a fault ended is lost: every call on it fails
 * with ServerError::DeviceLost, and ruda_device_recover() brings it back
 * only where the driver allows it. CUDA does not: its context stays dead
 * until the process exits. So a long-running service keeps its GPU work in
 * a worker process, and a supervisor starts a fresh worker, resuming where
 * the lost one stopped, when the worker reports the loss (its exit code).
 *
 *   example_supervisor                    supervises a worker on RUDA_DEVICE
 *                                         (default cpu), whose first life
 *                                         pretends to lose its device at job
 *                                         3, to show the restart
 *   RUDA_DEVICE=cuda:0 example_supervisor --fault
 *                                         the first life's job 3 launches a
 *                                         kernel that writes out of bounds:
 *                                         a real device loss on drivers that
 *                                         cannot reset the context
 *
 * The worker is this program run as `example_supervisor --worker FIRST
 * MODE`: it runs jobs FIRST..JOBS-1 and exits 0, or 100 + J when its
 * device was lost at job J. Exit 0 when every job ran, 1 otherwise. */
#include "example_common.h"

#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { JOBS = 6, EXIT_LOST = 100, MAX_LIVES = 3 };

/* A job: a buffer written and read back. */
static ruda_status_t run_job(ruda_client_t *c, int job) {
  uint32_t in[256], out[256];
  for (int i = 0; i < 256; i++) in[i] = (uint32_t)(job * 1000 + i);
  ruda_handle_t h;
  ruda_status_t s = ruda_client_create_buffer(c, in, sizeof in, &h);
  if (s) return s;
  s = ruda_client_read(c, &h, out, sizeof out);
  ruda_handle_release(&h);
  if (!s && memcmp(in, out, sizeof in) != 0) {
    s = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "job %d read back wrong data", job);
  }
  return s;
}

/* A CUDA kernel that writes 1 TiB past its buffer: an illegal address. */
static ruda_status_t fault_job(ruda_client_t *c) {
  static const char src[] =
      "extern \"C\" __global__ void oob_write(unsigned int *out, const unsigned long long *info) {\n"
      "  out[info[0] + threadIdx.x] = 1u;\n"
      "}\n";
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, src);
  ruda_kernel_desc_t d = {.name = "oob_write", .ruda_dim = {32, 1, 1}, .code = &code, .num_code = 1};
  ruda_kernel_t *k = NULL;
  ruda_handle_t h;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  if (!s) s = ruda_client_empty(c, 128, &h);
  if (s) {
    ruda_kernel_release(k);
    return s;
  }
  uint64_t info[1] = {1ull << 38};
  ruda_kernel_args_t a = {&h, 1, NULL, 0, {info, 1, 1}};
  s = ruda_client_launch_unchecked(c, k, ruda_count_static(1, 1, 1), &a);
  if (!s) s = ruda_client_sync(c);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  return s;
}

static int worker(int first, const char *mode) {
  const char *name;
  ruda_client_t *c = example_open(&name);
  for (int job = first; job < JOBS; job++) {
    ruda_status_t s = NULL;
    if (job == 3 && strcmp(mode, "first") == 0) {
      s = ruda_status_create(RUDA_ERR_SERVER_DEVICE_LOST,
                             "%s is lost (pretended by the example's first worker)", name);
    } else if (job == 3 && strcmp(mode, "first-fault") == 0) {
      s = fault_job(c);
      if (!s) s = run_job(c, job);
    } else {
      s = run_job(c, job);
    }
    if (s) {
      /* The fault itself may come first; the device is lost when a call
       * says so, or when ruda_device_recover cannot bring it back. */
      bool lost = ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST) != NULL;
      if (!lost) {
        ruda_status_t again = run_job(c, job);
        lost = again && ruda_status_find(again, RUDA_ERR_SERVER_DEVICE_LOST);
        ruda_status_t r = ruda_device_recover(ruda_client_device(c));
        if (r && ruda_status_kind(r) == RUDA_ERR_UNAVAILABLE) lost = true;
        ruda_status_free(r);
        ruda_status_free(again);
      }
      if (lost) {
        printf("worker %d: job %d: the device is lost; exiting for a restart\n", (int)getpid(), job);
        fflush(stdout);
        ruda_status_free(s);
        ruda_client_release(c);
        return EXIT_LOST + job;
      }
      return example_fail("a job", s);
    }
    printf("worker %d: job %d done on %s\n", (int)getpid(), job, name);
    fflush(stdout);
  }
  ruda_client_release(c);
  return 0;
}

/* Starts `self --worker first mode`; its exit code, or -1. */
static int run_worker(const char *self, int first, const char *mode) {
  char first_text[16];
  snprintf(first_text, sizeof first_text, "%d", first);
  char *argv[] = {(char *)self, "--worker", first_text, (char *)mode, NULL};
  pid_t pid;
  if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--worker") == 0) return worker(atoi(argv[2]), argv[3]);
  bool fault = argc == 2 && strcmp(argv[1], "--fault") == 0;
  const char *self = "/proc/self/exe";
  /* A restart resumes from the job the lost worker was running (jobs are
   * idempotent here). */
  int first = 0;
  const char *mode = fault ? "first-fault" : "first";
  for (int life = 1; life <= MAX_LIVES; life++) {
    int rc = run_worker(self, first, mode);
    if (rc == 0) {
      printf("supervisor: every job ran (%d worker%s)\n", life, life == 1 ? "" : "s");
      return 0;
    }
    if (rc == 77) return 77; /* the device is absent here */
    if (rc < EXIT_LOST || rc >= EXIT_LOST + JOBS) {
      fprintf(stderr, "supervisor: the worker failed (exit %d)\n", rc);
      return 1;
    }
    first = rc - EXIT_LOST;
    printf("supervisor: the worker lost its device at job %d; starting a new one from there\n",
           first);
    fflush(stdout);
    mode = "again";
  }
  fprintf(stderr, "supervisor: the device was lost %d times; giving up\n", MAX_LIVES);
  return 1;
}
