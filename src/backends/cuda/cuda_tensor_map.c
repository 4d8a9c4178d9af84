/* Tensor maps (TMA descriptors): encoding a ruda_tensor_map_meta_t with
 * cuTensorMapEncodeTiled / Im2col / Im2colWide, and the checks that turn a
 * rejected encoding into a precise LaunchError::Unknown.
 *
 * The checks are plain C (no CUDA headers) so they are unit-tested
 * everywhere. Dimensions are given outermost-first in ruda (row-major
 * shapes) and reversed for the driver, which wants the innermost first.
 */
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"

#define UNKNOWN(...) ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "Invalid tensor map: " __VA_ARGS__)

static uint32_t swizzle_span(ruda_tensor_map_swizzle_t s) {
  switch (s) {
    case RUDA_TENSOR_MAP_SWIZZLE_B32: return 32;
    case RUDA_TENSOR_MAP_SWIZZLE_B64: return 64;
    case RUDA_TENSOR_MAP_SWIZZLE_B128:
    case RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B:
    case RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B_FLIP_8B:
    case RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_64B: return 128;
    default: return 0;
  }
}

/* The pixel limits both im2col forms share. */
static ruda_status_t check_im2col_pixels(const ruda_tensor_map_meta_t *m) {
  if (m->format.channels_per_pixel < 1 || m->format.channels_per_pixel > 256)
    return UNKNOWN("channels per pixel is %u; must be between 1 and 256",
                   m->format.channels_per_pixel);
  if (m->format.pixels_per_column < 1 || m->format.pixels_per_column > 1024)
    return UNKNOWN("pixels per column is %u; must be between 1 and 1024",
                   m->format.pixels_per_column);
  return NULL;
}

ruda_status_t ruda__cuda_tensor_map_check(const ruda_tensor_map_meta_t *m, uint64_t address,
                                          int cuda_version) {
  if (m == NULL) return UNKNOWN("no tensor map description");
  const uint32_t rank = m->metadata.shape.rank;
  const bool interleaved = m->interleave != RUDA_TENSOR_MAP_INTERLEAVE_NONE;
  const size_t elem = ruda_storage_type_size(m->storage_ty);
  const ruda_elem_type_t et = m->storage_ty.elem;

  if ((unsigned)m->format.kind > RUDA_TENSOR_MAP_IM2COL_WIDE)
    return UNKNOWN("unknown format %d", (int)m->format.kind);
  if ((unsigned)m->swizzle > RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_64B)
    return UNKNOWN("unknown swizzle %d", (int)m->swizzle);
  if ((unsigned)m->interleave > RUDA_TENSOR_MAP_INTERLEAVE_B32)
    return UNKNOWN("unknown interleave %d", (int)m->interleave);
  if ((unsigned)m->prefetch > RUDA_TENSOR_MAP_PREFETCH_B256)
    return UNKNOWN("unknown prefetch %d", (int)m->prefetch);
  if (elem == 0) return UNKNOWN("element type %d has no size", (int)et);

  const uint64_t align = interleaved ? 32 : 16;
  if (address % align != 0)
    return UNKNOWN("global address 0x%llx must be aligned to %llu bytes%s",
                   (unsigned long long)address, (unsigned long long)align,
                   interleaved ? " when interleaved" : "");
  if (rank < 1 || rank > 5) return UNKNOWN("tensor rank %u must be between 1 and 5", rank);
  if (interleaved && rank < 3)
    return UNKNOWN("tensor rank %u must be at least 3 when interleaved", rank);
  if (m->metadata.strides.rank != rank)
    return UNKNOWN("strides have rank %u but the shape has rank %u", m->metadata.strides.rank,
                   rank);

  for (uint32_t i = 0; i < rank; i++) {
    uint64_t d = m->metadata.shape.dims[i];
    if (d == 0 || d > UINT32_MAX)
      return UNKNOWN("dimension %u is %llu; must be between 1 and 2^32-1", i,
                     (unsigned long long)d);
  }
  if (et == RUDA_ELEM_E2M1X2 && m->metadata.shape.dims[rank - 1] % 2 != 0)
    return UNKNOWN("packed fp4 needs an even innermost dimension, got %llu",
                   (unsigned long long)m->metadata.shape.dims[rank - 1]);

  const uint64_t stride_align = m->interleave == RUDA_TENSOR_MAP_INTERLEAVE_B32 ? 32 : 16;
  for (uint32_t i = 0; i + 1 < rank; i++) {
    uint64_t bytes = m->metadata.strides.values[i] * (uint64_t)elem;
    if (bytes % stride_align != 0)
      return UNKNOWN("stride of dimension %u is %llu bytes; must be a multiple of %llu", i,
                     (unsigned long long)bytes, (unsigned long long)stride_align);
    if (bytes >= (1ull << 40))
      return UNKNOWN("stride of dimension %u is %llu bytes; must be below 2^40", i,
                     (unsigned long long)bytes);
  }

  if (m->elem_stride.rank != 0) {
    if (m->elem_stride.rank != rank)
      return UNKNOWN("element strides have rank %u but the tensor has rank %u",
                     m->elem_stride.rank, rank);
    for (uint32_t i = 0; i < rank; i++) {
      uint64_t s = m->elem_stride.values[i];
      if (s < 1 || s > 8)
        return UNKNOWN("element stride of dimension %u is %llu; must be between 1 and 8", i,
                       (unsigned long long)s);
    }
    if (!interleaved && m->elem_stride.values[rank - 1] != 1)
      return UNKNOWN("the innermost element stride is %llu; must be 1 without interleave",
                     (unsigned long long)m->elem_stride.values[rank - 1]);
  }

  if (m->oob_fill == RUDA_OOB_FILL_NAN && !ruda_elem_type_is_float(et))
    return UNKNOWN("NaN out-of-bounds fill needs a float type, got %s", ruda_elem_type_name(et));

  if (m->swizzle >= RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B && cuda_version < 12080)
    return UNKNOWN("swizzle atoms need CUDA 12.8 or newer (driver is %d.%d)",
                   cuda_version / 1000, (cuda_version % 1000) / 10);

  if (m->interleave == RUDA_TENSOR_MAP_INTERLEAVE_B32 &&
      m->swizzle != RUDA_TENSOR_MAP_SWIZZLE_B32)
    return UNKNOWN("32-byte interleave requires 32-byte swizzle");

  switch (m->format.kind) {
    case RUDA_TENSOR_MAP_TILED: {
      const ruda_shape_t *t = &m->format.tile_size;
      if (t->rank != rank)
        return UNKNOWN("tile rank %u must equal the tensor rank %u", t->rank, rank);
      for (uint32_t i = 0; i < rank; i++)
        if (t->dims[i] < 1 || t->dims[i] > 256)
          return UNKNOWN("tile dimension %u is %llu; must be between 1 and 256", i,
                         (unsigned long long)t->dims[i]);
      if (!interleaved) {
        uint64_t inner = t->dims[rank - 1] * (uint64_t)elem;
        uint32_t span = swizzle_span(m->swizzle);
        if (span != 0 && inner > span)
          return UNKNOWN("the innermost tile is %llu bytes; must be at most the swizzle "
                         "span of %u bytes",
                         (unsigned long long)inner, span);
        if (span == 0 && inner % 16 != 0)
          return UNKNOWN("the innermost tile is %llu bytes; must be a multiple of 16 bytes",
                         (unsigned long long)inner);
      }
      break;
    }
    case RUDA_TENSOR_MAP_IM2COL: {
      if (rank < 3 || rank > 5)
        return UNKNOWN("im2col needs a tensor rank between 3 and 5, got %u", rank);
      if (m->format.num_corners != rank - 2)
        return UNKNOWN("im2col corners have %u entries; must be %u (rank - 2)",
                       m->format.num_corners, rank - 2);
      int32_t lo = rank == 3 ? -32768 : rank == 4 ? -128 : -16;
      int32_t hi = rank == 3 ? 32767 : rank == 4 ? 127 : 15;
      for (uint32_t i = 0; i < m->format.num_corners; i++) {
        int32_t a = m->format.pixel_box_lower_corner[i];
        int32_t b = m->format.pixel_box_upper_corner[i];
        if (a < lo || a > hi || b < lo || b > hi)
          return UNKNOWN("im2col corner %u is (%d, %d); must be within [%d, %d] for rank %u",
                         i, a, b, lo, hi, rank);
      }
      return check_im2col_pixels(m);
    }
    case RUDA_TENSOR_MAP_IM2COL_WIDE:
      if (cuda_version < 12080)
        return UNKNOWN("Im2colWide needs CUDA 12.8 or newer (driver is %d.%d)",
                       cuda_version / 1000, (cuda_version % 1000) / 10);
      if (rank < 3 || rank > 5)
        return UNKNOWN("im2col needs a tensor rank between 3 and 5, got %u", rank);
      return check_im2col_pixels(m);
  }
  return NULL;
}

#if defined(RUDA_HAVE_CUDA_HEADERS)

static bool data_type(ruda_storage_type_t st, int cuda_version, CUtensorMapDataType *out) {
  switch (st.elem) {
    case RUDA_ELEM_E4M3:
    case RUDA_ELEM_E5M2:
    case RUDA_ELEM_E2M3:
    case RUDA_ELEM_E3M2:
    case RUDA_ELEM_E2M1:
    case RUDA_ELEM_UE8M0:
    case RUDA_ELEM_I8:
    case RUDA_ELEM_U8: *out = CU_TENSOR_MAP_DATA_TYPE_UINT8; return true;
    case RUDA_ELEM_E2M1X2:
      if (cuda_version < 12080) return false;
      *out = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
      return true;
    case RUDA_ELEM_F16: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; return true;
    case RUDA_ELEM_BF16: *out = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; return true;
    case RUDA_ELEM_F32:
    case RUDA_ELEM_FLEX32: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; return true;
    case RUDA_ELEM_TF32: *out = CU_TENSOR_MAP_DATA_TYPE_TFLOAT32; return true;
    case RUDA_ELEM_F64: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; return true;
    case RUDA_ELEM_I16:
    case RUDA_ELEM_U16: *out = CU_TENSOR_MAP_DATA_TYPE_UINT16; return true;
    case RUDA_ELEM_I32: *out = CU_TENSOR_MAP_DATA_TYPE_INT32; return true;
    case RUDA_ELEM_I64: *out = CU_TENSOR_MAP_DATA_TYPE_INT64; return true;
    case RUDA_ELEM_U32:
    case RUDA_ELEM_BOOL: *out = CU_TENSOR_MAP_DATA_TYPE_UINT32; return true;
    case RUDA_ELEM_U64: *out = CU_TENSOR_MAP_DATA_TYPE_UINT64; return true;
    default: return false;
  }
}

ruda_status_t ruda__cuda_tensor_map_encode(const ruda__cuda_api_t *api,
                                           const ruda_tensor_map_meta_t *m, uint64_t address,
                                           CUtensorMap *out) {
  const uint32_t rank = m->metadata.shape.rank;
  if (rank < 1 || rank > 5 || m->metadata.strides.rank != rank)
    return ruda__cuda_tensor_map_check(m, address, api->driver_version);
  CUtensorMapDataType dt;
  if (!data_type(m->storage_ty, api->driver_version, &dt))
    return UNKNOWN("element type %s has no tensor-map data type on CUDA %d.%d",
                   ruda_elem_type_name(m->storage_ty.elem), api->driver_version / 1000,
                   (api->driver_version % 1000) / 10);
  const size_t elem = ruda_storage_type_size(m->storage_ty);
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t estride[5], box[5];
  int lower[3], upper[3];
  for (uint32_t i = 0; i < rank; i++) {
    uint32_t src = rank - 1 - i;
    gdim[i] = m->metadata.shape.dims[src];
    estride[i] = m->elem_stride.rank == rank ? (cuuint32_t)m->elem_stride.values[src] : 1;
    box[i] = m->format.tile_size.rank == rank ? (cuuint32_t)m->format.tile_size.dims[src] : 1;
  }
  for (uint32_t i = 0; i + 1 < rank; i++)
    gstride[i] = m->metadata.strides.values[rank - 2 - i] * (cuuint64_t)elem;

  static const CUtensorMapInterleave il[] = {CU_TENSOR_MAP_INTERLEAVE_NONE,
                                             CU_TENSOR_MAP_INTERLEAVE_16B,
                                             CU_TENSOR_MAP_INTERLEAVE_32B};
  static const CUtensorMapSwizzle sw[] = {
      CU_TENSOR_MAP_SWIZZLE_NONE,          CU_TENSOR_MAP_SWIZZLE_32B,
      CU_TENSOR_MAP_SWIZZLE_64B,           CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
      CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B};
  static const CUtensorMapL2promotion pf[] = {
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
  if ((unsigned)m->interleave > 2 || (unsigned)m->swizzle > 6 || (unsigned)m->prefetch > 3)
    return ruda__cuda_tensor_map_check(m, address, api->driver_version);
  CUtensorMapFloatOOBfill fill = m->oob_fill == RUDA_OOB_FILL_NAN
                                     ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                     : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  void *gaddr = (void *)(uintptr_t)address;
  CUresult r;
  const char *call;
  switch (m->format.kind) {
    case RUDA_TENSOR_MAP_TILED:
      call = "cuTensorMapEncodeTiled";
      if (api->cuTensorMapEncodeTiled == NULL) goto unsupported;
      r = api->cuTensorMapEncodeTiled(out, dt, rank, gaddr, gdim, gstride, box, estride,
                                      il[m->interleave], sw[m->swizzle], pf[m->prefetch], fill);
      break;
    case RUDA_TENSOR_MAP_IM2COL:
      call = "cuTensorMapEncodeIm2col";
      if (api->cuTensorMapEncodeIm2col == NULL) goto unsupported;
      if (m->format.num_corners > 3 || rank < 3)
        return ruda__cuda_tensor_map_check(m, address, api->driver_version);
      for (uint32_t i = 0; i < m->format.num_corners; i++) {
        lower[i] = m->format.pixel_box_lower_corner[m->format.num_corners - 1 - i];
        upper[i] = m->format.pixel_box_upper_corner[m->format.num_corners - 1 - i];
      }
      r = api->cuTensorMapEncodeIm2col(out, dt, rank, gaddr, gdim, gstride, lower, upper,
                                       m->format.channels_per_pixel,
                                       m->format.pixels_per_column, estride, il[m->interleave],
                                       sw[m->swizzle], pf[m->prefetch], fill);
      break;
    case RUDA_TENSOR_MAP_IM2COL_WIDE:
      call = "cuTensorMapEncodeIm2colWide";
      if (api->cuTensorMapEncodeIm2colWide == NULL || api->driver_version < 12080)
        goto unsupported;
      r = api->cuTensorMapEncodeIm2colWide(
          out, dt, rank, gaddr, gdim, gstride, m->format.pixel_box_lower_corner_width,
          m->format.pixel_box_upper_corner_width, m->format.channels_per_pixel,
          m->format.pixels_per_column, estride, il[m->interleave], CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
          sw[m->swizzle], pf[m->prefetch], fill);
      break;
    default:
      return ruda__cuda_tensor_map_check(m, address, api->driver_version);
  }
  if (r == CUDA_SUCCESS) return NULL;
  {
    ruda_status_t precise = ruda__cuda_tensor_map_check(m, address, api->driver_version);
    if (precise != NULL) return ruda_status_set_vendor(precise, call, ruda__cu_result_name(r), r);
    return ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call, "encoding a rank-%u tensor map",
                          rank);
  }
unsupported:
  return UNKNOWN("%s is not available in this CUDA driver (%d.%d)", call,
                 api->driver_version / 1000, (api->driver_version % 1000) / 10);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
