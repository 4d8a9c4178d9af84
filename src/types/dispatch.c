/* Dispatch: ruda dims, ruda counts and their selection, execution modes. */
#include <stdio.h>

#include "ruda/types.h"

ruda_dim_t ruda_dim_new_1d(uint32_t x) { return (ruda_dim_t){x, 1, 1}; }
ruda_dim_t ruda_dim_new_2d(uint32_t x, uint32_t y) {
  return (ruda_dim_t){x, y, 1};
}
ruda_dim_t ruda_dim_new_3d(uint32_t x, uint32_t y, uint32_t z) {
  return (ruda_dim_t){x, y, z};
}

RUDA__HOT
uint64_t ruda_dim_num_elems(ruda_dim_t d) {
  /* Two u32 factors always fit in u64; the third may not. */
  uint64_t xyz;
  if (__builtin_mul_overflow((uint64_t)d.x * d.y, (uint64_t)d.z, &xyz)) return UINT64_MAX;
  return xyz;
}

bool ruda_dim_can_contain(ruda_dim_t a, ruda_dim_t b) {
  return a.x >= b.x && a.y >= b.y && a.z >= b.z;
}

static uint32_t floor_log2_u32(uint32_t v) {
  uint32_t r = 0;
  while (v >>= 1) r++;
  return r;
}

ruda_dim_t ruda_dim_for_units(const ruda_device_properties_t *p,
                              uint32_t working_units) {
  if (p == NULL) return ruda_dim_new_1d(1);
  /* A zero plane size (properties not filled in) would divide by zero;
   * treat it as one unit per plane. */
  uint32_t plane = p->hardware.plane_size_max ? p->hardware.plane_size_max : 1;
  uint32_t planes;
  if (p->hardware.num_cpu_cores != 0) {
    uint32_t cores = p->hardware.num_cpu_cores;
    planes = cores < working_units ? cores : working_units;
  } else {
    uint32_t per_plane = working_units / plane;
    if (per_plane < 1) per_plane = 1;
    uint32_t e = floor_log2_u32(per_plane);
    planes = 1u << (e < 3 ? e : 3);
  }
  uint32_t limit = p->hardware.max_units_per_ruda / plane;
  uint32_t y = limit < planes ? limit : planes;
  if (y < 1) y = 1;
  return ruda_dim_new_3d(plane, y, 1);
}

RUDA__HOT
bool ruda_count3_is_empty(ruda_count3_t c) {
  return c.x == 0 || c.y == 0 || c.z == 0;
}

size_t ruda_count3_format(ruda_count3_t c, char *buf, size_t cap) {
  int n = snprintf(buf, buf ? cap : 0, "(%u, %u, %u)", (unsigned)c.x,
                   (unsigned)c.y, (unsigned)c.z);
  return n < 0 ? 0 : (size_t)n;
}

ruda_count3_t ruda_count_spread(const uint32_t max[3], uint32_t num_rudas) {
  /* Computed in 64 bits: halving x up to 32 times doubles y as often, which
   * can exceed u32 before y itself is halved. */
  uint64_t c[3] = {num_rudas, 1, 1};
  for (int i = 0; i < 2; i++) {
    /* A zero limit cannot be met (ceil(1/2) is 1); one is the closest. */
    uint64_t limit = max ? max[i] : 1;
    if (limit == 0) limit = 1;
    if (c[i] <= limit) break;
    do {
      c[i] = (c[i] + 1) / 2;
      c[i + 1] *= 2;
    } while (c[i] > limit);
  }
  /* z is never checked against max[2]: it is the last axis, so there is
   * nowhere left to move the remainder, and the launch-time count check
   * refuses a count above the device's limit. It exceeds u32 only for
   * limits so small that no device has them; saturate rather than wrap. */
  ruda_count3_t out = {(uint32_t)c[0], (uint32_t)c[1],
                       c[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)c[2]};
  return out;
}

ruda_count_selection_t ruda_count_selection_new(const ruda_device_properties_t *p,
                                                uint32_t num_rudas) {
  static const uint32_t kNoLimit[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  const uint32_t *max = p ? p->hardware.max_ruda_count : kNoLimit;
  ruda_count_selection_t sel;
  sel.count = ruda_count_spread(max, num_rudas);
  sel.actual = (uint64_t)sel.count.x * sel.count.y * sel.count.z;
  sel.exact = sel.actual == num_rudas;
  return sel;
}

ruda_execution_mode_t ruda_bounds_check_to_mode(ruda_bounds_check_mode_t m) {
  switch (m) {
    case RUDA_BOUNDS_ENFORCE:
      return RUDA_EXEC_CHECKED;
    case RUDA_BOUNDS_VALIDATE:
      return RUDA_EXEC_VALIDATE;
    case RUDA_BOUNDS_AUTO:
      return RUDA_EXEC_UNCHECKED;
  }
  /* An out-of-range value: the safe choice. */
  return RUDA_EXEC_CHECKED;
}

const char *ruda_execution_mode_name(ruda_execution_mode_t m) {
  switch (m) {
    case RUDA_EXEC_CHECKED:
      return "Checked";
    case RUDA_EXEC_VALIDATE:
      return "Validate";
    case RUDA_EXEC_UNCHECKED:
      return "Unchecked";
  }
  return "invalid";
}
