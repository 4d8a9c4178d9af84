/* ruda/types.h: plain data types shared by every layer.
 *
 * Element types, shapes and strides, device and stream ids, device
 * properties with their stable checksum, dispatch counts and dims, execution
 * and bounds-check modes, tensor-map descriptions, memory layout
 * descriptors, profiling tokens and kernel ids.
 *
 * Everything here is a value type: no function allocates unless it says so,
 * and every function is thread-safe unless it says otherwise.
 */
#ifndef RUDA_TYPES_H
#define RUDA_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* ------------------------------------------------------------------------ */
/* Element and storage types                                                */
/* ------------------------------------------------------------------------ */

/* Element types. Values are stable (they feed hashes and checksums). */
typedef enum ruda_elem_type {
  RUDA_ELEM_F64 = 0,
  RUDA_ELEM_F32 = 1,
  RUDA_ELEM_TF32 = 2,   /* stored as 32 bits */
  RUDA_ELEM_FLEX32 = 3, /* f32 storage, may compute in lower precision */
  RUDA_ELEM_F16 = 4,
  RUDA_ELEM_BF16 = 5,
  RUDA_ELEM_E4M3 = 6,   /* fp8 */
  RUDA_ELEM_E5M2 = 7,   /* fp8 */
  RUDA_ELEM_E2M3 = 8,   /* fp6, stored in a byte */
  RUDA_ELEM_E3M2 = 9,   /* fp6, stored in a byte */
  RUDA_ELEM_E2M1 = 10,  /* fp4, stored in a byte */
  RUDA_ELEM_E2M1X2 = 11,/* two fp4 packed in a byte */
  RUDA_ELEM_UE8M0 = 12, /* scale factor, one byte */
  RUDA_ELEM_I8 = 13,
  RUDA_ELEM_I16 = 14,
  RUDA_ELEM_I32 = 15,
  RUDA_ELEM_I64 = 16,
  RUDA_ELEM_U8 = 17,
  RUDA_ELEM_U16 = 18,
  RUDA_ELEM_U32 = 19,
  RUDA_ELEM_U64 = 20,
  RUDA_ELEM_BOOL = 21,  /* stored as u32 (whole-word accesses) */
  RUDA_ELEM_COUNT_ = 22
} ruda_elem_type_t;

/* Size in bytes of one stored element; 0 for an invalid value. */
size_t ruda_elem_type_size(ruda_elem_type_t t);
/* Logical width in bits of one value (4 for e2m1, 6 for e2m3/e3m2, 8 for
 * e2m1x2, 32 for bool); 0 for an invalid value. */
size_t ruda_elem_type_size_bits(ruda_elem_type_t t);
/* Lower-case name ("f32", "bf16", "e4m3", "bool"); "invalid" otherwise. */
const char *ruda_elem_type_name(ruda_elem_type_t t);
bool ruda_elem_type_is_float(ruda_elem_type_t t);
bool ruda_elem_type_is_signed_int(ruda_elem_type_t t);
bool ruda_elem_type_is_unsigned_int(ruda_elem_type_t t);
/* Parses a name produced by ruda_elem_type_name(). */
bool ruda_elem_type_parse(const char *name, ruda_elem_type_t *out);

/* A storage type: a scalar, an atomic, or a packed group of
 * `packing` scalars in one storage word. */
typedef enum ruda_storage_kind {
  RUDA_STORAGE_SCALAR = 0,
  RUDA_STORAGE_ATOMIC = 1,
  RUDA_STORAGE_PACKED = 2,
} ruda_storage_kind_t;

typedef struct ruda_storage_type {
  ruda_storage_kind_t kind;
  ruda_elem_type_t elem;
  uint32_t packing; /* 1 unless kind == RUDA_STORAGE_PACKED */
} ruda_storage_type_t;

/* Bytes one storage word takes: the element's size for Scalar and Atomic;
 * for Packed, the bits of `packing` elements rounded up to whole bytes
 * (Packed(e2m1, 2) is 1, Packed(f16, 2) is 4). 0 for an invalid element or
 * a packing of 0. */
size_t ruda_storage_type_size(ruda_storage_type_t t);

/* Width of indices and addresses inside a kernel. */
typedef enum ruda_address_type {
  RUDA_ADDRESS_U32 = 0,
  RUDA_ADDRESS_U64 = 1,
} ruda_address_type_t;

/* ------------------------------------------------------------------------ */
/* Shapes, strides, metadata                                                */
/* ------------------------------------------------------------------------ */

#define RUDA_MAX_RANK 8

typedef struct ruda_shape {
  uint32_t rank;
  uint64_t dims[RUDA_MAX_RANK];
} ruda_shape_t;

typedef struct ruda_strides {
  uint32_t rank;
  uint64_t values[RUDA_MAX_RANK]; /* in elements */
} ruda_strides_t;

typedef struct ruda_metadata {
  ruda_shape_t shape;
  ruda_strides_t strides;
} ruda_metadata_t;

/* Builds a shape from `rank` dims; rank > RUDA_MAX_RANK gives
 * RUDA_ERR_INVALID_ARGUMENT. */
ruda_status_t ruda_shape_init(ruda_shape_t *out, uint32_t rank,
                              const uint64_t *dims);
/* A rank-1 or rank-2 shape by value (unused dims are 0). Pure: no
 * allocation, no failure, callable from any thread. */
ruda_shape_t ruda_shape_1d(uint64_t n);
ruda_shape_t ruda_shape_2d(uint64_t rows, uint64_t cols);
/* Product of the dims (1 for rank 0), saturating at UINT64_MAX. */
uint64_t ruda_shape_num_elems(const ruda_shape_t *s);
/* Row-major contiguous strides for `s` (exact: a dim of size 1 must still
 * have the row-major stride), by value; rank 0 for a NULL `s`, a rank
 * above RUDA_MAX_RANK is clamped. Pure: no allocation, no failure, callable
 * from any thread. */
ruda_strides_t ruda_strides_contiguous(const ruda_shape_t *s);
bool ruda_strides_is_contiguous(const ruda_shape_t *s, const ruda_strides_t *st);
/* True when the strides are row-major with padding on the last dimension's
 * rows only (the pitched layouts of ruda's policies): stride[rank-1] == 1,
 * stride[rank-2] >= dims[rank-1], and every outer stride[i] ==
 * stride[i+1] * dims[i+1]. Contiguous strides are pitched. */
bool ruda_strides_is_pitched(const ruda_shape_t *s, const ruda_strides_t *st);
/* num_elems(s) * elem_size in *out; false (and *out untouched) when the
 * product does not fit in 64 bits or s is NULL. Pure; thread-safe. */
bool ruda_shape_num_bytes(const ruda_shape_t *s, uint64_t elem_size, uint64_t *out);
/* The bytes a strided view spans from its first element:
 *   (1 + sum over i of (dims[i] - 1) * strides[i]) * elem_size,
 * 0 when a dim is 0. Every step is overflow-checked: false (and *out
 * untouched) when a term or the total does not fit in 64 bits, when the
 * ranks of `s` and `st` differ or exceed RUDA_MAX_RANK, or when an argument
 * is NULL. A view may be read or written only when this extent fits the
 * memory behind it; the client and every backend check copies with it.
 * Pure; thread-safe. */
bool ruda_shape_extent(const ruda_shape_t *s, const ruda_strides_t *st, uint64_t elem_size,
                       uint64_t *out);

/* ------------------------------------------------------------------------ */
/* Devices and streams                                                      */
/* ------------------------------------------------------------------------ */

/* Backend type ids (DeviceId.type_id). */
enum {
  RUDA_DEVICE_TYPE_CPU = 0,
  RUDA_DEVICE_TYPE_CUDA = 1,
  RUDA_DEVICE_TYPE_OPENCL = 2,
};

typedef struct ruda_device_id {
  uint16_t type_id;
  uint16_t index_id;
} ruda_device_id_t;

/* Orders by (type_id, index_id): <0, 0, >0. */
int ruda_device_id_cmp(ruda_device_id_t a, ruda_device_id_t b);
bool ruda_device_id_eq(ruda_device_id_t a, ruda_device_id_t b);
/* "cpu:0", "cuda:1", "opencl:0": the type's name as ruda_device_type_name
 * gives it ("device-type-7:0" for an unknown type), then the index;
 * snprintf semantics (writes at most `cap` bytes including the terminator
 * into the caller's `buf`, returns the length the whole text needs). Pure;
 * thread-safe. */
size_t ruda_device_id_format(ruda_device_id_t id, char *buf, size_t cap);
/* The name of a device type: "cpu", "cuda", "opencl" or the name of a
 * backend registered for it; NULL for an unknown type. Static storage;
 * thread-safe. */
const char *ruda_device_type_name(uint16_t type_id);
/* Parses "cpu", "cpu:0", "cuda", "cuda:1", "opencl:0" (no index: 0).
 * RUDA_ERR_INVALID_ARGUMENT on a malformed name. Thread-safe. */
ruda_status_t ruda_device_parse(const char *text, ruda_device_id_t *out);

typedef struct ruda_stream_id {
  uint64_t value;
} ruda_stream_id_t;

/* The calling thread's stream: on a thread's first call it takes the next
 * value of a process-wide counter starting at 0, so every OS thread is its
 * own stream unless ruda_stream_id_swap() set another. Thread-safe. */
ruda_stream_id_t ruda_stream_id_current(void);
/* Sets the calling thread's stream and returns the previous one (drawing
 * the thread's own first if it had none). Affects only the calling thread;
 * cannot fail. */
ruda_stream_id_t ruda_stream_id_swap(ruda_stream_id_t id);
/* A fresh stream id that no thread has yet (from the same counter).
 * Thread-safe; cannot fail. */
ruda_stream_id_t ruda_stream_id_next(void);

/* ------------------------------------------------------------------------ */
/* Device properties                                                        */
/* ------------------------------------------------------------------------ */

/* Feature bits (DeviceProperties.features). Only grows by appending. */
enum {
  RUDA_FEATURE_F16 = 1u << 0,
  RUDA_FEATURE_BF16 = 1u << 1,
  RUDA_FEATURE_F64 = 1u << 2,
  RUDA_FEATURE_ATOMIC_F32_ADD = 1u << 3,
  RUDA_FEATURE_ATOMIC_F64_ADD = 1u << 4,
  RUDA_FEATURE_ATOMIC_F16 = 1u << 5,
  RUDA_FEATURE_BARRIER = 1u << 6,
  RUDA_FEATURE_PIPELINE = 1u << 7,
  RUDA_FEATURE_PLANE_SYNC = 1u << 8,
  RUDA_FEATURE_GRID_CONSTANTS = 1u << 9,
  RUDA_FEATURE_LDMATRIX = 1u << 10,
  RUDA_FEATURE_COPY_ASYNC = 1u << 11,
  RUDA_FEATURE_FP8 = 1u << 12,
  RUDA_FEATURE_TMA = 1u << 13,
  RUDA_FEATURE_TENSOR_MAP = 1u << 14,
  RUDA_FEATURE_CLUSTERS = 1u << 15,
  RUDA_FEATURE_ELECT_SYNC = 1u << 16,
  RUDA_FEATURE_STMATRIX = 1u << 17,
  RUDA_FEATURE_TMA_IM2COL_WIDE = 1u << 18,
  RUDA_FEATURE_FP4_FP6 = 1u << 19,
  RUDA_FEATURE_DYNAMIC_COUNT = 1u << 20,
  RUDA_FEATURE_SHARED_MEMORY = 1u << 21,
  /* 64-bit integer atomics: add, min, max, exchange, compare-exchange. */
  RUDA_FEATURE_ATOMIC_I64 = 1u << 22,
};

typedef enum ruda_timing_method {
  RUDA_TIMING_SYSTEM = 0, /* host clock around execution plus a sync */
  RUDA_TIMING_DEVICE = 1, /* device timestamps */
} ruda_timing_method_t;

typedef struct ruda_memory_properties {
  uint64_t max_page_size; /* largest storage allocation a pool makes */
  uint64_t alignment;     /* offset alignment of slices */
} ruda_memory_properties_t;

typedef struct ruda_hardware_properties {
  uint32_t load_width;             /* bits */
  uint32_t plane_size_min;
  uint32_t plane_size_max;
  uint32_t max_bindings;
  uint64_t max_shared_memory_size; /* bytes per ruda */
  uint32_t max_ruda_count[3];
  uint32_t max_units_per_ruda;
  uint32_t max_ruda_dim[3];
  uint32_t num_streaming_multiprocessors; /* 0: unknown / not applicable */
  uint32_t num_cpu_cores;                 /* 0: not a CPU device */
  uint32_t num_tensor_cores;              /* 0: unknown */
  uint32_t min_tensor_cores_dim;          /* 0: unknown */
  uint32_t max_vector_size;               /* UINT32_MAX: unlimited */
  /* ruda's additions, 0 when unknown. */
  uint64_t total_memory;                  /* bytes */
  uint64_t cache_l1;                      /* bytes */
  uint64_t cache_l2;
  uint64_t cache_l3;
  uint32_t compute_capability;            /* major*10+minor (CUDA) */
  uint32_t warp_size;
} ruda_hardware_properties_t;

typedef struct ruda_device_properties {
  char name[128];
  uint64_t features; /* RUDA_FEATURE_* bits */
  ruda_memory_properties_t memory;
  ruda_hardware_properties_t hardware;
  ruda_timing_method_t timing_method;
} ruda_device_properties_t;

/* A stable 64-bit checksum of every field: identical across runs,
 * processes and machines with the same properties. The name counts up to
 * its terminator. Changes only when the serialization's version does. */
uint64_t ruda_device_properties_checksum(const ruda_device_properties_t *p);
/* True when every bit of `feature` is set (false for 0). */
bool ruda_device_properties_has(const ruda_device_properties_t *p,
                                uint64_t feature);

/* ------------------------------------------------------------------------ */
/* Dispatch: counts, dims, modes                                            */
/* ------------------------------------------------------------------------ */

typedef struct ruda_dim {
  uint32_t x, y, z;
} ruda_dim_t;

ruda_dim_t ruda_dim_new_1d(uint32_t x);
ruda_dim_t ruda_dim_new_2d(uint32_t x, uint32_t y);
ruda_dim_t ruda_dim_new_3d(uint32_t x, uint32_t y, uint32_t z);
uint64_t ruda_dim_num_elems(ruda_dim_t d);
/* Every axis of `a` >= the same axis of `b`. */
bool ruda_dim_can_contain(ruda_dim_t a, ruda_dim_t b);
/* A dim for a kernel covering `working_units` units: one plane
 * (plane_size_max units) along x and `planes` planes along y, capped by
 * max_units_per_ruda: (plane, max(1, min(max_units_per_ruda / plane,
 * planes)), 1). `planes` is min(num_cpu_cores, working_units) on a CPU
 * device (one plane per core), and otherwise the largest power of two
 * <= working_units / plane, at least 1 and at most 8. A plane size of 0 is
 * treated as 1; NULL properties give (1, 1, 1). */
ruda_dim_t ruda_dim_for_units(const ruda_device_properties_t *p,
                              uint32_t working_units);

/* A static dispatch count (x, y, z rudas). The dynamic form, read from a
 * buffer at launch, is ruda_count_t in ruda/kernel.h. */
typedef struct ruda_count3 {
  uint32_t x, y, z;
} ruda_count3_t;

bool ruda_count3_is_empty(ruda_count3_t c); /* any component 0 */
/* Writes "(x, y, z)"; snprintf semantics. */
size_t ruda_count3_format(ruda_count3_t c, char *buf, size_t cap);

/* Spreads `num_rudas` over x, y, z within `max` by halving x (rounding
 * up) and doubling y until x fits, then the same from y into z; the count
 * may cover a few more rudas than asked. z, the last axis, takes whatever
 * is left and is not checked against max[2]: there is no further axis to
 * move it to, and a launch with a z above the device's limit is refused by
 * the launch-time count check. z saturates at UINT32_MAX. A max of 0 is
 * treated as 1. */
ruda_count3_t ruda_count_spread(const uint32_t max[3], uint32_t num_rudas);

/* RudaCountSelection: Exact when the spread count equals the request,
 * Approx (some rudas idle) otherwise. */
typedef struct ruda_count_selection {
  ruda_count3_t count;
  bool exact;
  uint64_t actual; /* x*y*z */
} ruda_count_selection_t;

ruda_count_selection_t ruda_count_selection_new(const ruda_device_properties_t *p,
                                                uint32_t num_rudas);

typedef enum ruda_execution_mode {
  RUDA_EXEC_CHECKED = 0,   /* bounds checked */
  RUDA_EXEC_VALIDATE = 1,  /* checked, and violations are reported */
  RUDA_EXEC_UNCHECKED = 2, /* out-of-bounds accesses possible */
} ruda_execution_mode_t;

typedef enum ruda_bounds_check_mode {
  RUDA_BOUNDS_ENFORCE = 0,  /* launch_unchecked runs Checked */
  RUDA_BOUNDS_VALIDATE = 1, /* launch_unchecked runs Validate */
  RUDA_BOUNDS_AUTO = 2,     /* launch_unchecked runs Unchecked (default) */
} ruda_bounds_check_mode_t;

ruda_execution_mode_t ruda_bounds_check_to_mode(ruda_bounds_check_mode_t m);
const char *ruda_execution_mode_name(ruda_execution_mode_t m);

/* ------------------------------------------------------------------------ */
/* Tensor maps (TMA)                                                        */
/* ------------------------------------------------------------------------ */

typedef enum ruda_tensor_map_format_kind {
  RUDA_TENSOR_MAP_TILED = 0,
  RUDA_TENSOR_MAP_IM2COL = 1,
  RUDA_TENSOR_MAP_IM2COL_WIDE = 2,
} ruda_tensor_map_format_kind_t;

typedef enum ruda_tensor_map_interleave {
  RUDA_TENSOR_MAP_INTERLEAVE_NONE = 0,
  RUDA_TENSOR_MAP_INTERLEAVE_B16 = 1,
  RUDA_TENSOR_MAP_INTERLEAVE_B32 = 2,
} ruda_tensor_map_interleave_t;

typedef enum ruda_tensor_map_swizzle {
  RUDA_TENSOR_MAP_SWIZZLE_NONE = 0,
  RUDA_TENSOR_MAP_SWIZZLE_B32 = 1,
  RUDA_TENSOR_MAP_SWIZZLE_B64 = 2,
  RUDA_TENSOR_MAP_SWIZZLE_B128 = 3,
  RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B = 4,
  RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B_FLIP_8B = 5,
  RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_64B = 6,
} ruda_tensor_map_swizzle_t;

typedef enum ruda_tensor_map_prefetch {
  RUDA_TENSOR_MAP_PREFETCH_NONE = 0,
  RUDA_TENSOR_MAP_PREFETCH_B64 = 1,
  RUDA_TENSOR_MAP_PREFETCH_B128 = 2,
  RUDA_TENSOR_MAP_PREFETCH_B256 = 3,
} ruda_tensor_map_prefetch_t;

typedef enum ruda_oob_fill {
  RUDA_OOB_FILL_ZERO = 0,
  RUDA_OOB_FILL_NAN = 1,
} ruda_oob_fill_t;

typedef struct ruda_tensor_map_format {
  ruda_tensor_map_format_kind_t kind;
  /* Tiled: one entry per dimension of the tensor (1 where not tiled). */
  ruda_shape_t tile_size;
  /* Im2col: one entry per spatial dimension. */
  uint32_t num_corners;
  int32_t pixel_box_lower_corner[RUDA_MAX_RANK];
  int32_t pixel_box_upper_corner[RUDA_MAX_RANK];
  /* Im2colWide */
  int32_t pixel_box_lower_corner_width;
  int32_t pixel_box_upper_corner_width;
  /* Im2col and Im2colWide */
  uint32_t channels_per_pixel;
  uint32_t pixels_per_column;
} ruda_tensor_map_format_t;

typedef struct ruda_tensor_map_meta {
  ruda_tensor_map_format_t format;
  ruda_metadata_t metadata;     /* shape and strides of the backing tensor */
  ruda_strides_t elem_stride;   /* usually all 1; kernel stride for im2col */
  ruda_tensor_map_interleave_t interleave;
  ruda_tensor_map_swizzle_t swizzle;
  ruda_tensor_map_prefetch_t prefetch;
  ruda_oob_fill_t oob_fill;
  ruda_storage_type_t storage_ty;
} ruda_tensor_map_meta_t;

/* ------------------------------------------------------------------------ */
/* Memory layout descriptors                                                */
/* ------------------------------------------------------------------------ */

typedef enum ruda_memory_layout_strategy {
  RUDA_LAYOUT_CONTIGUOUS = 0, /* no padding */
  RUDA_LAYOUT_OPTIMIZED = 1,  /* row-pitched where the runtime supports it */
} ruda_memory_layout_strategy_t;

typedef struct ruda_memory_layout_descriptor {
  ruda_memory_layout_strategy_t strategy;
  ruda_shape_t shape;
  size_t elem_size;
} ruda_memory_layout_descriptor_t;

ruda_memory_layout_descriptor_t ruda_memory_layout_optimized(ruda_shape_t shape,
                                                             size_t elem_size);
ruda_memory_layout_descriptor_t ruda_memory_layout_contiguous(ruda_shape_t shape,
                                                              size_t elem_size);

typedef enum ruda_memory_allocation_mode {
  RUDA_ALLOCATION_AUTO = 0,
  RUDA_ALLOCATION_PERSISTENT = 1,
} ruda_memory_allocation_mode_t;

/* ------------------------------------------------------------------------ */
/* Profiling                                                                */
/* ------------------------------------------------------------------------ */

typedef struct ruda_profiling_token {
  uint64_t id;
} ruda_profiling_token_t;

/* A measured duration: start and end ticks in nanoseconds on the clock the
 * timing method names. */
typedef struct ruda_profile_duration {
  uint64_t start_ns;
  uint64_t end_ns;
  ruda_timing_method_t method;
} ruda_profile_duration_t;

static inline uint64_t ruda_profile_duration_ns(ruda_profile_duration_t d) {
  return d.end_ns >= d.start_ns ? d.end_ns - d.start_ns : 0;
}

/* ------------------------------------------------------------------------ */
/* Kernel ids                                                               */
/* ------------------------------------------------------------------------ */

/* Identifies a compiled kernel: its name plus everything that changes the
 * compiled code. `info` is an opaque key (for example the serialized
 * options); it is hashed, never interpreted. Borrowed pointers. A NULL
 * name reads as ""; a NULL info or info_len 0 means no info. */
typedef struct ruda_kernel_id {
  const char *name;
  ruda_address_type_t address_type;
  ruda_dim_t ruda_dim;
  ruda_execution_mode_t mode;
  const void *info;
  size_t info_len;
} ruda_kernel_id_t;

typedef struct ruda_hash128 {
  uint64_t lo, hi;
} ruda_hash128_t;

/* Stable 128-bit hash of a byte string (same value on every run, process
 * and machine; a MurmurHash3-x64-128-style construction). NULL data hashes
 * as the empty string. */
ruda_hash128_t ruda_hash128(const void *data, size_t len, uint64_t seed);
/* Stable 128-bit hash of the id: name, address type, dim, mode and info. */
ruda_hash128_t ruda_kernel_id_stable_hash(const ruda_kernel_id_t *id);
bool ruda_kernel_id_eq(const ruda_kernel_id_t *a, const ruda_kernel_id_t *b);
/* "{name}-{u32|u64}-(x, y, z)-{Checked|Validate|Unchecked}-{info}", where
 * info is the bytes in lower-case hex or "No info"; snprintf semantics. */
size_t ruda_kernel_id_stable_format(const ruda_kernel_id_t *id, char *buf,
                                    size_t cap);

/* ------------------------------------------------------------------------ */
/* Packed info words (MetadataBindingInfo)                                  */
/* ------------------------------------------------------------------------ */

/* The packed scalars and metadata passed to a kernel, in this order:
 * scalars grouped by type (each group padded to 8 bytes), then static
 * metadata, then dynamic metadata; dynamic_metadata_offset counts u64 words.
 * `data` is borrowed by launches (they copy it). */
typedef struct ruda_info {
  const uint64_t *data;
  size_t len; /* u64 words */
  size_t dynamic_metadata_offset;
} ruda_info_t;

/* Builds a ruda_info_t. Caller-owned storage: _init, push, _finish, then
 * _deinit frees the words. Not thread-safe (one builder per thread). */
typedef struct ruda_info_builder {
  uint64_t *words;
  size_t len, cap;
  size_t dynamic_offset;
  uint32_t group_bytes; /* bytes used in the current scalar group's last word */
  int group_elem;       /* elem type of the current group, -1 none */
  int phase;            /* 0 scalars, 1 static metadata, 2 dynamic metadata */
  uint32_t scalar_types_seen; /* bit per elem type that has had a group */
  ruda_status_t error;  /* the first failure (owned); non-NULL: pushes are
                           ignored and _finish reports it */
} ruda_info_builder_t;

void ruda_info_builder_init(ruda_info_builder_t *b);
/* Appends `count` scalars of `elem` (raw bytes, elem-sized each). Scalars
 * of one type must be pushed together; a new type starts a new group on a
 * word boundary. Misuse (scalars after metadata, a type's second group, an
 * invalid type, NULL values) marks the builder failed with
 * RUDA_ERR_INVALID_ARGUMENT; later pushes are ignored and _finish reports
 * the first failure. */
void ruda_info_builder_push_scalars(ruda_info_builder_t *b, ruda_elem_type_t elem,
                                    const void *values, size_t count);
/* Appends address-sized metadata values (u32 packed two per word when
 * `address` is U32, one per word when U64). Static metadata starts on a new
 * word after the scalars, dynamic metadata on a new word after the static
 * metadata. Static after dynamic, or a value above UINT32_MAX for a U32
 * address, marks the builder failed with RUDA_ERR_INVALID_ARGUMENT. */
void ruda_info_builder_push_static_metadata(ruda_info_builder_t *b,
                                            ruda_address_type_t address,
                                            const uint64_t *values, size_t count);
void ruda_info_builder_push_dynamic_metadata(ruda_info_builder_t *b,
                                             ruda_address_type_t address,
                                             const uint64_t *values, size_t count);
/* The info view (valid until the builder changes or is deinited); without
 * dynamic metadata, dynamic_metadata_offset == len. Returns the first
 * failure while pushing (a new copy each call, owned by the caller):
 * RUDA_ERR_LAUNCH_OUT_OF_MEMORY if an allocation failed,
 * RUDA_ERR_INVALID_ARGUMENT on misuse. */
ruda_status_t ruda_info_builder_finish(ruda_info_builder_t *b, ruda_info_t *out);
void ruda_info_builder_deinit(ruda_info_builder_t *b);

RUDA_END_DECLS

#endif /* RUDA_TYPES_H */
