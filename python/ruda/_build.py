"""Builds ruda._ruda, the C extension of the package, with cffi in API mode.

cffi compiles the declarations below against ruda's own headers, so every
struct layout and constant comes from them (the `...` parts are filled in
by the C compiler), and the prototypes of the functions it calls are read
from those headers at build time: nothing of the API is restated by hand
in Python.

Where ruda is, in this order:
  RUDA_INCLUDE_DIR and RUDA_LIBRARY_DIR  the headers' and libruda.so's folders
  RUDA_PREFIX                            an install prefix (include/, lib/ or lib64/)
  pkg-config ruda                        an installed ruda
  the repository around python/         include/ and build/ (bash scripts/setup_test.sh)
The library's folder is recorded as the extension's run path, so importing
needs no LD_LIBRARY_PATH.
"""
import os
import re
import shlex
import subprocess

from cffi import FFI

# The types the package uses, declared as cffi takes them: the `...` parts
# (fields the package does not touch, sizes) are filled in by the C
# compiler from ruda's headers.
TYPES = r"""
typedef struct ruda_status *ruda_status_t;
typedef enum { RUDA_OK = 0, RUDA_ERR_INVALID_ARGUMENT = 60, RUDA_ERR_UNAVAILABLE = 61, ... } ruda_error_kind_t;

typedef struct { uint16_t type_id; uint16_t index_id; } ruda_device_id_t;
typedef struct { uint64_t value; } ruda_stream_id_t;
enum { RUDA_DEVICE_TYPE_CPU = 0, RUDA_DEVICE_TYPE_CUDA = 1, RUDA_DEVICE_TYPE_OPENCL = 2 };

typedef struct {
  uint64_t id;
  ...;
} ruda_handle_t;

typedef struct ruda_client ruda_client_t;

typedef struct {
  uint64_t number_allocs;
  uint64_t bytes_in_use;
  uint64_t bytes_padding;
  uint64_t bytes_reserved;
} ruda_memory_usage_t;

typedef struct { uint64_t id; } ruda_profiling_token_t;
typedef struct { uint64_t start_ns; uint64_t end_ns; ...; } ruda_profile_duration_t;

typedef struct { uint32_t x, y, z; } ruda_dim_t;
typedef struct { uint32_t x, y, z; } ruda_count3_t;
typedef struct {
  const uint64_t *data;
  size_t len;
  size_t dynamic_metadata_offset;
} ruda_info_t;
typedef struct ruda_kernel ruda_kernel_t;
typedef struct {
  const char *name;
  ruda_dim_t ruda_dim;
  ...;
} ruda_kernel_desc_t;
typedef struct {
  const char *entry;
  const char *const *options;
  size_t num_options;
  ruda_dim_t ruda_dim;
  uint64_t shared_mem_bytes;
} ruda_kernel_source_t;
typedef struct {
  bool dynamic;
  ruda_count3_t fixed;
  ...;
} ruda_count_t;
typedef struct {
  const ruda_handle_t *buffers;
  size_t num_buffers;
  ruda_info_t info;
  ...;
} ruda_kernel_args_t;

typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
/* Opaque here: the package hands these to ruda and to its consumers, and
 * reads no field of them. */
struct DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY ...
#define RUDA_DLPACK_MAX_DIMS ...
typedef struct {
  ruda_handle_t handle;
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[...];
  int64_t strides[...];
  bool read_only;
} ruda_dlpack_tensor_t;

void free(void *);

/* The package's own C helpers (below): DLPack capsules. */
void ruda_py_capsule_destructor(void *capsule);
void ruda_py_legacy_capsule_destructor(void *capsule);
void *ruda_py_to_legacy(struct DLManagedTensorVersioned *t);
struct DLManagedTensorVersioned *ruda_py_from_legacy(void *legacy);
void ruda_py_delete(struct DLManagedTensorVersioned *t);
"""

# The functions of ruda the package calls. Their prototypes are read from
# ruda's headers when the extension is built (declarations()), so that no
# signature is restated here.
FUNCTIONS = (
    "ruda_status_kind", "ruda_status_root", "ruda_error_kind_name", "ruda_status_to_string",
    "ruda_status_free", "ruda_device_parse", "ruda_device_id_format", "ruda_device_count",
    "ruda_device_types", "ruda_device_type_name", "ruda_handle_size_in_used",
    "ruda_handle_release", "ruda_client_create", "ruda_client_release", "ruda_client_info",
    "ruda_client_empty", "ruda_client_create_buffer", "ruda_client_write", "ruda_client_read",
    "ruda_client_sync", "ruda_client_flush", "ruda_client_memory_usage",
    "ruda_client_memory_usage_device", "ruda_client_memory_cleanup", "ruda_client_profile_start",
    "ruda_client_profile_end", "ruda_kernel_from_file", "ruda_kernel_from_text",
    "ruda_kernel_release", "ruda_kernel_desc", "ruda_client_launch", "ruda_dlpack_export",
    "ruda_dlpack_import", "ruda_dlpack_stream", "ruda_dlpack_dtype_name",
)


# C helpers built into the extension: the destructors of DLPack capsules
# (they run when a capsule is dropped without being consumed) and the
# conversions between DLPack's versioned and legacy managed tensors.
SOURCE = r"""
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <ruda/ruda.h>
#include <ruda/dlpack.h>

void ruda_py_capsule_destructor(void *capsule) {
  PyObject *c = (PyObject *)capsule;
  if (PyCapsule_IsValid(c, "used_dltensor_versioned")) return;
  struct DLManagedTensorVersioned *t = PyCapsule_GetPointer(c, "dltensor_versioned");
  if (!t) { PyErr_Clear(); return; }
  if (t->deleter) t->deleter(t);
}

void ruda_py_legacy_capsule_destructor(void *capsule) {
  PyObject *c = (PyObject *)capsule;
  if (PyCapsule_IsValid(c, "used_dltensor")) return;
  DLManagedTensor *t = PyCapsule_GetPointer(c, "dltensor");
  if (!t) { PyErr_Clear(); return; }
  if (t->deleter) t->deleter(t);
}

static void legacy_delete(DLManagedTensor *m) {
  struct DLManagedTensorVersioned *v = m->manager_ctx;
  free(m);
  if (v && v->deleter) v->deleter(v);
}

void *ruda_py_to_legacy(struct DLManagedTensorVersioned *v) {
  DLManagedTensor *m = malloc(sizeof *m);
  if (!m) return NULL;
  m->dl_tensor = v->dl_tensor;
  m->manager_ctx = v;
  m->deleter = legacy_delete;
  return m;
}

static void versioned_delete(struct DLManagedTensorVersioned *v) {
  DLManagedTensor *m = v->manager_ctx;
  free(v);
  if (m && m->deleter) m->deleter(m);
}

struct DLManagedTensorVersioned *ruda_py_from_legacy(void *legacy) {
  DLManagedTensor *m = legacy;
  struct DLManagedTensorVersioned *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->version.major = DLPACK_MAJOR_VERSION;
  v->version.minor = 0;
  v->manager_ctx = m;
  v->deleter = versioned_delete;
  v->dl_tensor = m->dl_tensor;
  return v;
}

void ruda_py_delete(struct DLManagedTensorVersioned *t) {
  if (t && t->deleter) t->deleter(t);
}
"""


def _pkg_config():
    try:
        cflags = subprocess.run(["pkg-config", "--cflags-only-I", "ruda"], check=True,
                                capture_output=True, text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs-only-L", "ruda"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    inc = [a[2:] for a in shlex.split(cflags) if a.startswith("-I")]
    lib = [a[2:] for a in shlex.split(libs) if a.startswith("-L")]
    if not inc or not lib:
        return None
    return inc[0], lib[0]


def find_ruda():
    """(include folder, library folder), or SystemExit saying what was tried."""
    tried = []
    inc, lib = os.environ.get("RUDA_INCLUDE_DIR"), os.environ.get("RUDA_LIBRARY_DIR")
    if inc and lib:
        return inc, lib
    prefix = os.environ.get("RUDA_PREFIX")
    if prefix:
        for libdir in ("lib", "lib64", "."):
            cand = os.path.join(prefix, libdir)
            if os.path.exists(os.path.join(cand, "libruda.so")):
                return os.path.join(prefix, "include"), cand
        tried.append("RUDA_PREFIX=" + prefix)
    found = _pkg_config()
    if found:
        return found
    tried.append("pkg-config ruda")
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for build in ("build", "build-python"):
        cand = os.path.join(repo, build)
        if os.path.exists(os.path.join(cand, "libruda.so")):
            return os.path.join(repo, "include"), cand
    tried.append(repo + "/build/libruda.so")
    raise SystemExit("ruda: cannot find ruda's headers and libruda.so (tried: " + ", ".join(tried) +
                     "); build ruda first, or set RUDA_PREFIX, or RUDA_INCLUDE_DIR and "
                     "RUDA_LIBRARY_DIR")


# What a prototype may carry that cffi does not parse: ruda's visibility and
# hot/cold markers, and GCC attributes.
_MARKERS = re.compile(r"\b(?:RUDA_API|RUDA__COLD|RUDA__HOT)\b"
                      r"|__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")


def declarations(inc, names):
    """The prototypes of the functions `names`, as ruda's headers under
    inc/ruda declare them, one a line; SystemExit naming one not found."""
    folder = os.path.join(inc, "ruda")
    texts = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".h"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                texts.append(f.read())
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", "\n".join(texts), flags=re.S)
    text = _MARKERS.sub(" ", text)
    found = []
    for fn in names:
        m = re.search(r"^[ \t]*([A-Za-z_][\w \t*]*?\b%s\s*\([^;{}#]*\))\s*;" % fn, text, re.M)
        if not m:
            raise SystemExit("ruda: no declaration of %s in %s" % (fn, folder))
        found.append(" ".join(m.group(1).split()) + ";")
    return "\n".join(found)


ffibuilder = FFI()
_inc, _lib = find_ruda()
ffibuilder.cdef(TYPES + declarations(_inc, FUNCTIONS))
ffibuilder.set_source(
    "ruda._ruda", SOURCE, include_dirs=[_inc], library_dirs=[_lib], libraries=["ruda"],
    extra_link_args=["-Wl,-rpath," + os.path.abspath(_lib)])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
