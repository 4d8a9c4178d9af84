/* The body of the tuned reductions (tuned_kernels.h includes it once per
 * candidate, after SUM_SHAPE and its RUDA_KERNEL(...)): the sum
 * of a ruda's `chunk` elements of x, SUM_UNITS units each accumulating
 * every SUM_UNITS-th element in a private (coalesced on a GPU, one vector
 * loop on a CPU), then a tree in shared memory. With
 * SUM_ATOMIC the ruda adds its sum to out[0] (one pass; out[0] was
 * zeroed before the launch), else it writes part[ruda] (the first of two
 * passes). SUM_LANES (when not 0) changes how a unit reads, and SUM_ILP
 * how many elements a unit reads per step of the strided form: see
 * below. */
{
  const uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  const uint64_t end = RUDA_MIN(begin + chunk, n);
#if SUM_LANES
  /* Each unit sums its own contiguous share of the chunk in SUM_LANES
   * partial sums, one per element of a group of SUM_LANES consecutive
   * ones: a loop a compiler vectorizes within the unit (on a CPU, and on
   * OpenCL devices that run a work-item's loop as a vector loop). */
  RUDA_UNITS(u) {
    float lane[SUM_LANES];
    for (uint32_t j = 0; j < SUM_LANES; j++) lane[j] = 0.0f;
    const uint64_t per = chunk / SUM_UNITS;
    const uint64_t ub = RUDA_MIN(begin + u.x * per, end), ue = RUDA_MIN(ub + per, end);
    const uint64_t uf = ub + (ue - ub) / SUM_LANES * SUM_LANES;
    for (uint64_t b = ub; b < uf; b += SUM_LANES)
      for (uint32_t j = 0; j < SUM_LANES; j++) lane[j] += x[b + j];
    for (uint64_t b = uf; b < ue; b++) lane[0] += x[b];
    float t = 0.0f;
    for (uint32_t j = 0; j < SUM_LANES; j++) t += lane[j];
    sh[u.x] = t;
  }
#else
  /* A step reads SUM_ILP elements per unit, SUM_UNITS apart (unit u.x
   * reads b + j * SUM_UNITS + u.x), into SUM_ILP independent accumulators
   * acc0, acc1, ... (SUM_EACH, tuned_kernels.h): on a GPU each thread has
   * SUM_ILP loads in flight and no add waits on the one before, each load
   * coalesced across the threads; on a CPU each accumulator is its own
   * vector loop over the units. The last, partial step: each unit adds
   * the elements at its positions that lie before `end`. */
  SUM_EACH(SUM__DECL)
  const uint64_t step = (uint64_t)SUM_UNITS * SUM_ILP;
  const uint64_t full = begin + (end > begin ? (end - begin) / step * step : 0);
  RUDA_UNITS_NOWAIT(u) {
    SUM_EACH(SUM__ZERO)
  }
  for (uint64_t b = begin; b < full; b += step) {
    RUDA_UNITS_NOWAIT(u) {
      SUM_EACH(SUM__ADD)
    }
  }
  RUDA_UNITS(u) {
    float t = -0.0f; /* x + -0.0f is x: with one accumulator, as before it */
    SUM_EACH(SUM__FOLD)
    sh[u.x] = t;
  }
#endif
  for (uint32_t s = SUM_UNITS / 2; s > 0; s /= 2) {
    RUDA_RANGE(uint32_t, i, 0, s) sh[i] += sh[i + s];
  }
#if SUM_ATOMIC
  RUDA_SINGLE_NOWAIT ruda_atomic_add_f32(&out[0], sh[0]);
#else
  RUDA_SINGLE_NOWAIT out[ruda_pos.x] = sh[0];
#endif
}
#undef SUM_SHAPE /* the next candidate defines its own */
