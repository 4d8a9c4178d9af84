/* Data-parallel training across MPI ranks (needs the ruda_mpi library):
 *
 *   mpirun -np 4 build/examples/example_mpi_data_parallel
 *
 * A linear model y = x . w (8 features) is fitted by gradient descent to
 * 8192 samples. Rank r of N holds samples [r*8192/N, (r+1)*8192/N) on its
 * device (cpu by default; RUDA_DEVICE=cuda uses a GPU per rank, picked by
 * the local rank, RUDA_DEVICE=opencl an OpenCL device). Every step each rank computes the mean-squared-error
 * gradient of its shard with a kernel (examples/kernels/mpi_data_parallel.h,
 * written once for every backend), the group all-reduces the gradients
 * with MEAN (equal shards: the mean of the shards' gradients is the
 * gradient of the whole data set), and each rank applies the same update.
 * At the end every rank gathers all ranks' weights and checks that they
 * are identical to its own, bit for bit, and close to the true weights.
 * Exit 0 when they are; rank 0 prints the loss before and after. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ruda/mpi.h>
#include <ruda/ruda.h>

#include "example_common.h"
#include "kernels/mpi_data_parallel.h"

enum { FEATURES = DP_FEATURES, SAMPLES = 8192, STEPS = 60 };
static const float LEARNING_RATE = 0.2f;

/* ---- Data: the same on every rank, whatever the number of ranks ---- */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static float uniform(uint64_t key) { return (float)(mix(key) >> 40) / (float)(1u << 24) * 2.0f - 1.0f; }

static float true_weight(int j) { return (float)(j + 1) * 0.25f * (j % 2 ? -1.0f : 1.0f); }

static void make_sample(uint64_t i, float *x, float *y) {
  float dot = 0;
  for (int j = 0; j < FEATURES; j++) {
    x[j] = uniform(i * FEATURES + (uint64_t)j);
    dot += x[j] * true_weight(j);
  }
  *y = dot + 0.01f * uniform(~i); /* a little noise */
}

/* ---- The program ---- */

/* The mean squared error of this rank's shard (host side). */
static double shard_loss(const float *x, const float *y, const float *w, uint64_t n) {
  double loss = 0;
  for (uint64_t i = 0; i < n; i++) {
    float r = -y[i];
    for (int f = 0; f < FEATURES; f++) r += x[i * FEATURES + (uint64_t)f] * w[f];
    loss += (double)r * r;
  }
  return loss / (double)n;
}

/* The mean of every rank's shard loss, through the group. */
static ruda_status_t mean_loss(ruda_group_t *g, ruda_client_t *c, double local, double *out) {
  ruda_handle_t h;
  ruda_status_t s = ruda_client_create_buffer(c, &local, sizeof local, &h);
  if (!s) s = ruda_group_all_reduce(g, c, &h, &h, RUDA_ELEM_F64, RUDA_REDUCE_MEAN);
  if (!s) s = ruda_client_read(c, &h, out, sizeof *out);
  ruda_handle_release(&h);
  return s;
}

int main(int argc, char **argv) {
  ruda_group_t *world = NULL;
  ruda_status_t s = ruda_world_init(&argc, &argv, &world);
  if (s) return example_fail("ruda_world_init", s);
  uint32_t rank = ruda_group_rank(world), size = ruda_group_size(world);
  if (SAMPLES % size) {
    if (rank == 0) fprintf(stderr, "error: %u ranks do not divide %d samples\n", size, SAMPLES);
    return 1;
  }
  /* cpu, unless RUDA_DEVICE names another (cuda: one GPU per local rank;
   * opencl) */
  ruda_device_id_t dev;
  ruda_client_t *c = NULL;
  if ((s = ruda_group_device(world, getenv("RUDA_DEVICE") ? NULL : "cpu", &dev)) ||
      (s = ruda_client_create(dev, &c))) {
    if (ruda_status_kind(s) != RUDA_ERR_UNAVAILABLE) return example_fail("opening the device", s);
    fprintf(stderr, "skip: rank %u: the device is unavailable here\n", rank);
    ruda_status_free(s);
    return 77; /* as the other examples (and CTest's skip) */
  }

  /* This rank's shard. */
  uint64_t n = SAMPLES / size, first = rank * n;
  float *x = malloc(n * FEATURES * sizeof *x), *y = malloc(n * sizeof *y);
  float w[FEATURES] = {0};
  if (!x || !y) return example_fail("shard", ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, n));
  for (uint64_t i = 0; i < n; i++) make_sample(first + i, &x[i * FEATURES], &y[i]);

  ruda_handle_t buf[4];
  ruda_kernel_t *k_gradient = NULL, *k_update = NULL;
  if ((s = RUDA_KERNEL_CREATE(gradient, &k_gradient)) ||
      (s = RUDA_KERNEL_CREATE(update, &k_update)) ||
      (s = ruda_client_create_buffer(c, x, n * FEATURES * sizeof *x, &buf[0])) ||
      (s = ruda_client_create_buffer(c, y, n * sizeof *y, &buf[1])) ||
      (s = ruda_client_create_buffer(c, w, sizeof w, &buf[2])) ||
      (s = ruda_client_empty(c, sizeof w, &buf[3]))) {
    return example_fail("setting up", s);
  }
  double loss0 = 0, loss1 = 0;
  if ((s = mean_loss(world, c, shard_loss(x, y, w, n), &loss0))) return example_fail("loss", s);

  for (int step = 0; step < STEPS; step++) {
    /* grad of the shard; the group's mean; the same update everywhere */
    ruda_count_t per_feature = ruda_count_static(FEATURES, 1, 1);
    if ((s = RUDA_LAUNCH(gradient, c, k_gradient, per_feature, &buf[0], &buf[1], &buf[2], &buf[3],
                         n)) ||
        (s = ruda_group_all_reduce(world, c, &buf[3], &buf[3], RUDA_ELEM_F32, RUDA_REDUCE_MEAN)) ||
        (s = RUDA_LAUNCH(update, c, k_update, per_feature, &buf[2], &buf[3], LEARNING_RATE))) {
      return example_fail("a training step", s);
    }
  }
  if ((s = ruda_client_read(c, &buf[2], w, sizeof w)))
    return example_fail("reading the weights", s);
  if ((s = mean_loss(world, c, shard_loss(x, y, w, n), &loss1))) return example_fail("loss", s);

  /* Every rank's weights, next to each other. */
  ruda_handle_t all;
  float *gathered = malloc(size * sizeof w);
  if (!gathered)
    return example_fail("gather", ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size * sizeof w));
  if ((s = ruda_client_empty(c, size * sizeof w, &all)) ||
      (s = ruda_group_all_gather(world, c, &buf[2], &all)) ||
      (s = ruda_client_read(c, &all, gathered, size * sizeof w))) {
    return example_fail("gathering the weights", s);
  }
  int bad = 0;
  for (uint32_t r = 0; r < size; r++) bad += memcmp(&gathered[r * FEATURES], w, sizeof w) != 0;
  double err = 0;
  for (int j = 0; j < FEATURES; j++) err = fmax(err, fabs((double)w[j] - true_weight(j)));
  bool ok = bad == 0 && err < 0.01 && loss1 < loss0 * 1e-3;
  if (rank == 0 || !ok) {
    printf("rank %u of %u on %s:%u: loss %.4f -> %.6f after %d steps; weights %s on all %u "
           "ranks; max |w - w_true| = %.5f: %s\n",
           rank, size, ruda_device_type_name(dev.type_id), dev.index_id, loss0, loss1, STEPS,
           bad ? "DIFFER" : "identical", size, err, ok ? "ok" : "FAILED");
  }

  for (int i = 0; i < 4; i++) ruda_handle_release(&buf[i]);
  ruda_handle_release(&all);
  ruda_kernel_release(k_gradient);
  ruda_kernel_release(k_update);
  ruda_client_release(c);
  ruda_group_release(world);
  free(gathered);
  free(x);
  free(y);
  s = ruda_world_finalize();
  if (s) return example_fail("ruda_world_finalize", s);
  return ok ? 0 : 1;
}
