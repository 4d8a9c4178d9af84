"""ruda from Python: devices, tensors shared through DLPack, kernels from files.

    import numpy as np, ruda

    dev = ruda.device("cpu:0")                 # or "opencl:0", "cuda:0"
    x = dev.tensor(np.arange(8, dtype=np.float32))
    k = ruda.kernel_from_file("scale.c", defines={"FACTOR": 3})
    dev.launch(k, (1, 1, 1), x, 8)             # buffers, then scalars
    dev.sync()
    print(x.numpy())                           # a copy; np.from_dlpack(x) shares on cpu

Errors are ruda.RudaError (ValueError for invalid arguments), carrying the
error's kind (`kind`, `kind_name`) and ruda's full text (`text`).
"""
import ctypes
import struct as _struct

from ._ruda import ffi as _ffi, lib as _lib

_NULL = _ffi.NULL
_launch = _lib.ruda_client_launch

__all__ = ["RudaError", "InvalidArgumentError", "UnavailableError", "Device", "Tensor", "Kernel",
           "Profile", "device", "devices", "kernel_from_file", "kernel_from_text", "from_dlpack",
           "f32", "f64", "i32", "u32", "i64", "u64"]

# ---- Errors ----


class RudaError(Exception):
    """A ruda error: `kind` (ruda_error_kind_t), `kind_name`, `text`."""

    def __init__(self, kind, kind_name, text):
        super().__init__(text)
        self.kind = kind
        self.kind_name = kind_name
        self.text = text


class InvalidArgumentError(RudaError, ValueError):
    """RUDA_ERR_INVALID_ARGUMENT."""


class UnavailableError(RudaError):
    """RUDA_ERR_UNAVAILABLE: a backend, library or device is absent."""


def _check(status):
    """Raises the status as a RudaError (and frees it); no-op for success."""
    if status == _ffi.NULL:
        return
    kind = int(_lib.ruda_status_kind(status))
    name = _ffi.string(_lib.ruda_error_kind_name(kind)).decode()
    raw = _lib.ruda_status_to_string(status)
    text = _ffi.string(raw).decode(errors="replace") if raw != _ffi.NULL else name
    if raw != _ffi.NULL:
        _lib.free(raw)
    _lib.ruda_status_free(status)
    cls = {int(_lib.RUDA_ERR_INVALID_ARGUMENT): InvalidArgumentError,
           int(_lib.RUDA_ERR_UNAVAILABLE): UnavailableError}.get(kind, RudaError)
    raise cls(kind, name, text)


# ---- dtypes ----

# name -> (DLPack code, bits); the codes of ruda/dlpack/dlpack.h.
_DTYPES = {
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64),
    "bfloat16": (4, 16), "bool": (6, 8),
}


def _dtype_name(dtype):
    name = getattr(dtype, "name", None) or str(dtype)
    if name not in _DTYPES:
        raise InvalidArgumentError(int(_lib.RUDA_ERR_INVALID_ARGUMENT), "InvalidArgument",
                                   "dtype %s is not supported (%s)" % (name, ", ".join(_DTYPES)))
    return name


def _dl_dtype(name):
    code, bits = _DTYPES[name]
    d = _ffi.new("DLDataType *")
    d.code, d.bits, d.lanes = code, bits, 1
    return d[0]


# ---- Devices ----

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_OPENCL = 1, 2, 3, 4
_devices = {}


def devices():
    """The devices this ruda can open, as names ("cpu:0", "opencl:0", ...)."""
    types = _ffi.new("uint16_t[16]")
    n = _lib.ruda_device_types(types, 16)
    out = []
    for i in range(min(n, 16)):
        count = _ffi.new("uint32_t *")
        st = _lib.ruda_device_count(types[i], count)
        if st != _ffi.NULL:  # unavailable here: left out
            _lib.ruda_status_free(st)
            continue
        name = _ffi.string(_lib.ruda_device_type_name(types[i])).decode()
        out += ["%s:%d" % (name, j) for j in range(count[0])]
    return out


def device(name="cpu:0"):
    """The Device of `name` ("cpu:0", "opencl:0", "cuda:1"); one per name."""
    if name not in _devices:
        _devices[name] = Device(name)
    return _devices[name]


class Device:
    """A device and the client of this process on it."""

    def __init__(self, name):
        did = _ffi.new("ruda_device_id_t *")
        _check(_lib.ruda_device_parse(name.encode(), did))
        out = _ffi.new("ruda_client_t **")
        _check(_lib.ruda_client_create(did[0], out))
        self._client = _ffi.gc(out[0], _lib.ruda_client_release)
        self._id = did[0]
        self.name = name
        self.type = int(did.type_id)
        self.index = int(did.index_id)

    def __repr__(self):
        return "ruda.Device(%r)" % self.name

    @property
    def info(self):
        return _ffi.string(_lib.ruda_client_info(self._client)).decode()

    # -- tensors --

    def empty(self, shape, dtype="float32"):
        """An uninitialised tensor (row-major)."""
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        name = _dtype_name(dtype)
        n = 1
        for s in shape:
            n *= s
        h = _ffi.new("ruda_handle_t *")
        _check(_lib.ruda_client_empty(self._client, n * _DTYPES[name][1] // 8, h))
        return Tensor(self, h, shape, name)

    def tensor(self, array):
        """A tensor holding a copy of `array` (anything with the buffer
        protocol and a shape and dtype, such as a NumPy array; it is made
        C-contiguous first when NumPy is there)."""
        try:
            import numpy as np
            array = np.ascontiguousarray(array)
        except ImportError:
            pass
        name = _dtype_name(array.dtype)
        mv = memoryview(array).cast("B")
        h = _ffi.new("ruda_handle_t *")
        _check(_lib.ruda_client_create_buffer(self._client, _ffi.from_buffer(mv), len(mv), h))
        return Tensor(self, h, tuple(array.shape), name)

    # -- work --

    def launch(self, kernel, count, *args):
        """Launches `kernel` over `count` rudas ((x, y, z), or an int for x)
        with its arguments in declaration order: Tensors for RUDA_BUFFER
        parameters, numbers for RUDA_SCALAR ones (see Kernel.launch)."""
        kernel.launch(self, count, *args)

    def sync(self):
        """Waits for the work submitted so far; raises its errors."""
        _check(_lib.ruda_client_sync(self._client))

    def flush(self):
        _check(_lib.ruda_client_flush(self._client))

    def memory_usage(self, whole_device=False):
        """{number_allocs, bytes_in_use, bytes_padding, bytes_reserved} of
        this thread's stream (or of the whole device)."""
        u = _ffi.new("ruda_memory_usage_t *")
        fn = _lib.ruda_client_memory_usage_device if whole_device else _lib.ruda_client_memory_usage
        _check(fn(self._client, u))
        return {"number_allocs": u.number_allocs, "bytes_in_use": u.bytes_in_use,
                "bytes_padding": u.bytes_padding, "bytes_reserved": u.bytes_reserved}

    def memory_cleanup(self):
        _check(_lib.ruda_client_memory_cleanup(self._client))

    def profile(self):
        """A context manager measuring the device time of the work submitted
        inside it: `with dev.profile() as p: ...` then `p.ns`."""
        return Profile(self)

    def dlpack_stream(self):
        """The stream a producer's __dlpack__(stream=...) should order its
        work before (None where the device has no streams)."""
        s = _ffi.new("int64_t *")
        _check(_lib.ruda_dlpack_stream(self._client, s))
        return None if s[0] == -1 else int(s[0])


class Profile:
    def __init__(self, dev):
        self._dev = dev
        self._token = _ffi.new("ruda_profiling_token_t *")
        self.ns = None

    def __enter__(self):
        _check(_lib.ruda_client_profile_start(self._dev._client, self._token))
        return self

    def __exit__(self, *exc):
        d = _ffi.new("ruda_profile_duration_t *")
        _check(_lib.ruda_client_profile_end(self._dev._client, self._token[0], d))
        self.ns = int(d.end_ns - d.start_ns) if d.end_ns >= d.start_ns else 0
        return False


# ---- Tensors and DLPack ----

_pyapi = ctypes.pythonapi
_pyapi.PyCapsule_New.restype = ctypes.py_object
_pyapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pyapi.PyCapsule_SetName.restype = ctypes.c_int
_pyapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pyapi.PyCapsule_IsValid.restype = ctypes.c_int
_pyapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _fnaddr(name):
    return int(_ffi.cast("uintptr_t", _ffi.addressof(_lib, name)))


_CAPSULE_DTOR = _fnaddr("ruda_py_capsule_destructor")
_LEGACY_CAPSULE_DTOR = _fnaddr("ruda_py_legacy_capsule_destructor")


class Tensor:
    """A ruda handle with a shape, strides (in elements) and a dtype."""

    def __init__(self, dev, handle, shape, dtype, strides=None, read_only=False):
        self.device = dev
        self._h = _ffi.gc(handle, _lib.ruda_handle_release)
        self.shape = tuple(shape)
        self.dtype = dtype
        if strides is None:
            strides, run = [], 1
            for s in reversed(self.shape):
                strides.insert(0, run)
                run *= max(s, 1)
        self.strides = tuple(strides)
        self.read_only = read_only

    def __repr__(self):
        return "ruda.Tensor(shape=%r, dtype=%r, device=%r)" % (self.shape, self.dtype,
                                                               self.device.name)

    @property
    def nbytes(self):
        return int(_lib.ruda_handle_size_in_used(self._h))

    def numpy(self):
        """A NumPy copy of the tensor (any device)."""
        import numpy as np
        if not self._compact():
            if self.device.type != 0:
                raise BufferError("numpy(): a strided tensor off the CPU; copy it on the device")
            return np.from_dlpack(self).copy()
        out = np.empty(self.shape, dtype=self.dtype)
        if out.nbytes:
            _check(_lib.ruda_client_read(self.device._client, self._h,
                                         _ffi.from_buffer(out), out.nbytes))
        return out

    def _compact(self):
        run = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s > 1 and st != run:
                return False
            run *= max(s, 1)
        return True

    def write(self, array):
        """Copies `array` (contiguous, the tensor's size) into the tensor."""
        mv = memoryview(array).cast("B")
        _check(_lib.ruda_client_write(self.device._client, self._h, _ffi.from_buffer(mv),
                                      len(mv)))

    def __dlpack_device__(self):
        t = self.device.type
        kind = _DL_CUDA if t == 1 else _DL_OPENCL if t == 2 else _DL_CPU
        return (kind, 0 if t == 0 else self.device.index)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The tensor as a DLPack capsule, without a copy (the Python array
        API): "dltensor_versioned" when the consumer takes version 1
        (max_version >= (1, 0)), else the legacy "dltensor". On cuda:N,
        `stream` is the consumer's stream, which waits for ruda's work (an
        event); None there means the legacy default stream (1), -1 no
        ordering."""
        if copy:
            raise BufferError("ruda exports without a copy only")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("ruda exports on the tensor's own device %r" %
                              (self.__dlpack_device__(),))
        if stream is None:
            stream = 1 if self.device.type == 1 else -1
        shape = _ffi.new("int64_t[]", list(self.shape) or [0])
        strides = _ffi.new("int64_t[]", list(self.strides) or [0])
        out = _ffi.new("struct DLManagedTensorVersioned **")
        _check(_lib.ruda_dlpack_export(self.device._client, self._h, _dl_dtype(self.dtype),
                                       len(self.shape), shape, strides, stream, out))
        t = out[0]
        if max_version is not None and tuple(max_version)[0] >= 1:
            return _pyapi.PyCapsule_New(int(_ffi.cast("uintptr_t", t)), b"dltensor_versioned",
                                        _CAPSULE_DTOR)
        legacy = _lib.ruda_py_to_legacy(t)
        if legacy == _ffi.NULL:
            _lib.ruda_py_delete(t)
            raise MemoryError("no memory for a DLPack tensor")
        return _pyapi.PyCapsule_New(int(_ffi.cast("uintptr_t", legacy)), b"dltensor",
                                    _LEGACY_CAPSULE_DTOR)


def _device_for(dl_type, dl_id):
    if dl_type in (_DL_CPU, _DL_CUDA_HOST):
        return device("cpu:0")
    if dl_type == _DL_CUDA:
        return device("cuda:%d" % dl_id)
    raise UnavailableError(int(_lib.RUDA_ERR_UNAVAILABLE), "Unavailable",
                           "ruda has no device for DLPack device type %d (id %d)" %
                           (dl_type, dl_id))


def from_dlpack(x, device=None):
    """A ruda Tensor sharing the memory of `x` (any object with __dlpack__
    and __dlpack_device__: NumPy arrays, PyTorch tensors...), without a copy.
    The producer's memory is handed back when the tensor (and every view of
    it ruda holds) is gone."""
    dl_type, dl_id = x.__dlpack_device__()
    dev = device if device is not None else _device_for(int(dl_type), int(dl_id))
    stream = dev.dlpack_stream()
    try:
        capsule = x.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:
        capsule = x.__dlpack__(stream=stream)
    if _pyapi.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        ptr = _pyapi.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        _pyapi.PyCapsule_SetName(capsule, b"used_dltensor_versioned")
        t = _ffi.cast("struct DLManagedTensorVersioned *", ptr)
    elif _pyapi.PyCapsule_IsValid(capsule, b"dltensor"):
        ptr = _pyapi.PyCapsule_GetPointer(capsule, b"dltensor")
        _pyapi.PyCapsule_SetName(capsule, b"used_dltensor")
        t = _lib.ruda_py_from_legacy(_ffi.cast("void *", ptr))
        if t == _ffi.NULL:
            raise MemoryError("no memory for a DLPack tensor")
    else:
        raise BufferError("__dlpack__ gave no DLPack capsule")
    out = _ffi.new("ruda_dlpack_tensor_t *")
    _check(_lib.ruda_dlpack_import(dev._client, t, out))  # ruda owns t from here
    name = _ffi.string(_lib.ruda_dlpack_dtype_name(out.dtype)).decode()
    h = _ffi.new("ruda_handle_t *")
    h[0] = out.handle
    return Tensor(dev, h, tuple(out.shape[i] for i in range(out.ndim)), name,
                  tuple(out.strides[i] for i in range(out.ndim)), bool(out.read_only))


# ---- Kernels ----

class _Scalar:
    __slots__ = ("word",)

    def __init__(self, word):
        self.word = word


def f32(x):
    """A float32 scalar argument (also what a plain Python float is)."""
    return _Scalar(_struct.unpack("<I", _struct.pack("<f", x))[0])


def f64(x):
    """A float64 (double) scalar argument."""
    return _Scalar(_struct.unpack("<Q", _struct.pack("<d", x))[0])


def i32(x):
    return _Scalar(int(x) & 0xFFFFFFFF)


def u32(x):
    return _Scalar(int(x) & 0xFFFFFFFF)


def i64(x):
    return _Scalar(int(x) & 0xFFFFFFFFFFFFFFFF)


def u64(x):
    return _Scalar(int(x) & 0xFFFFFFFFFFFFFFFF)


def _word(a):
    if isinstance(a, Tensor):
        raise InvalidArgumentError(int(_lib.RUDA_ERR_INVALID_ARGUMENT), "InvalidArgument",
                                   "a Tensor subclass is not a launch argument")
    if isinstance(a, _Scalar):
        return a.word
    if isinstance(a, bool):
        return int(a)
    if isinstance(a, int):
        return a & 0xFFFFFFFFFFFFFFFF
    if isinstance(a, float):
        return f32(a).word
    dtype = getattr(a, "dtype", None)
    if dtype is not None:  # a NumPy scalar: its own bytes, low-order first
        raw = a.tobytes()
        return int.from_bytes(raw + b"\0" * (8 - len(raw)), "little")
    raise InvalidArgumentError(int(_lib.RUDA_ERR_INVALID_ARGUMENT), "InvalidArgument",
                               "launch argument %r is neither a Tensor nor a number" % (a,))


def _options(defines, options):
    opts = []
    for k, v in (defines or {}).items():
        opts.append("-D%s" % k if v is None else "-D%s=%s" % (k, v))
    opts += list(options or [])
    return opts


def _source(entry, opts, dim, shared):
    keep = [_ffi.new("char[]", o.encode()) for o in opts]
    arr = _ffi.new("const char *[]", keep or [_ffi.NULL])
    src = _ffi.new("ruda_kernel_source_t *")
    src.entry = _ffi.new("char[]", entry.encode()) if entry else _ffi.NULL
    keep.append(src.entry)
    src.options = arr
    src.num_options = len(opts)
    if dim:
        dim = tuple(dim) + (1,) * (3 - len(tuple(dim)))
        src.ruda_dim.x, src.ruda_dim.y, src.ruda_dim.z = dim
    src.shared_mem_bytes = shared
    return src, (keep, arr)


def kernel_from_file(path, entry=None, defines=None, options=None, dim=None, shared_mem_bytes=0):
    """A portable kernel (ruda/kernel_dialect.h) from a kernel file, compiled
    by each backend on first launch. `defines` ({"N": 4}) become -D options,
    the same on every backend; `options` are more (-I, -O, -f, -m)."""
    src, keep = _source(entry, _options(defines, options), dim, shared_mem_bytes)
    out = _ffi.new("ruda_kernel_t **")
    _check(_lib.ruda_kernel_from_file(str(path).encode(), src, out))
    return Kernel(out[0])


def kernel_from_text(text, entry=None, defines=None, options=None, dim=None, shared_mem_bytes=0,
                     origin=None):
    """kernel_from_file for text in memory."""
    src, keep = _source(entry, _options(defines, options), dim, shared_mem_bytes)
    out = _ffi.new("ruda_kernel_t **")
    raw = text.encode()
    _check(_lib.ruda_kernel_from_text(raw, len(raw), origin.encode() if origin else _ffi.NULL,
                                      src, out))
    return Kernel(out[0])


class Kernel:
    """A kernel object. Launch it with Device.launch or Kernel.launch."""

    def __init__(self, k):
        self._k = _ffi.gc(k, _lib.ruda_kernel_release)
        desc = _lib.ruda_kernel_desc(self._k)
        self.name = _ffi.string(desc.name).decode()
        self.dim = (desc.ruda_dim.x, desc.ruda_dim.y, desc.ruda_dim.z)
        self._args = _ffi.new("ruda_kernel_args_t *")
        self._count = _ffi.new("ruda_count_t *")
        self._cap_b = self._cap_w = 0

    def __repr__(self):
        return "ruda.Kernel(%r, dim=%r)" % (self.name, self.dim)

    def launch(self, dev, count, *args):
        """Queues the kernel on `dev` over `count` rudas. Tensors are the
        buffers (in order), everything else a scalar: one info word each (a
        Python int as 64 bits, a float as float32; f64(), i32()... and NumPy
        scalars say the type)."""
        nb = nw = 0
        if len(args) > self._cap_b or len(args) > self._cap_w:
            self._cap_b = self._cap_w = max(len(args), 4)
            self._handles = _ffi.new("ruda_handle_t[]", self._cap_b)
            self._words = _ffi.new("uint64_t[]", self._cap_w)
        handles, words = self._handles, self._words
        for a in args:
            if type(a) is Tensor:
                handles[nb] = a._h[0]
                nb += 1
            elif type(a) is int:
                words[nw] = a & 0xFFFFFFFFFFFFFFFF
                nw += 1
            else:
                words[nw] = _word(a)
                nw += 1
        a = self._args
        a.buffers = handles if nb else _NULL
        a.num_buffers = nb
        info = a.info
        info.data = words if nw else _NULL
        info.len = nw
        info.dynamic_metadata_offset = nw
        fixed = self._count.fixed
        if type(count) is int:
            fixed.x, fixed.y, fixed.z = count, 1, 1
        else:
            count = tuple(count) + (1, 1)
            fixed.x, fixed.y, fixed.z = count[0], count[1], count[2]
        st = _launch(dev._client, self._k, self._count[0], a)
        if st != _NULL:
            _check(st)
