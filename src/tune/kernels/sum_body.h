/* The body of the tuned reductions (tuned_kernels.h includes it once per
 * candidate, after SUM_SHAPE and its RUDA_KERNEL(...)): the sum
 * of a ruda's `chunk` elements of x, SUM_UNITS units each accumulating
 * every SUM_UNITS-th element in a private (coalesced on a GPU, one vector
 * loop on a CPU), then a tree in shared memory. With
 * SUM_ATOMIC the ruda adds its sum to out[0] (one pass; out[0] was
 * zeroed before the launch), else it writes part[ruda] (the first of two
 * passes). SUM_LANES (when not 0) changes how a unit reads: see below. */
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
  RUDA_PRIVATE(float, acc);
  const uint64_t full = begin + (end > begin ? (end - begin) / SUM_UNITS * SUM_UNITS : 0);
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0f;
  for (uint64_t b = begin; b < full; b += SUM_UNITS) {
    RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) += x[b + u.x];
  }
  RUDA_UNITS(u) sh[u.x] = RUDA_PRIV(u, acc) + (full + u.x < end ? x[full + u.x] : 0.0f);
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
