"""pytest for the ruda package: NumPy and PyTorch round trips through DLPack
(no copy: the same address on both sides), a kernel file launched on cpu:0
and opencl:0 against NumPy, errors, profiling and memory usage."""
import gc
import os

import pytest

np = pytest.importorskip("numpy", reason="NumPy is not installed")
import ruda  # noqa: E402

KERNEL = os.path.join(os.path.dirname(__file__), "kernels", "saxpy.c")


def address(a):
    return a.__array_interface__["data"][0]


def device_or_skip(name):
    if name not in ruda.devices():
        pytest.skip("%s is not available here (devices: %s)" % (name, ruda.devices()))
    return ruda.device(name)


def test_numpy_to_ruda_to_numpy_shares_one_buffer():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ruda.from_dlpack(a)
    assert t.shape == (4, 6) and t.dtype == "float32" and t.strides == (6, 1)
    b = np.from_dlpack(t)
    assert address(b) == address(a)
    b[1, 2] = -5.0  # the same memory, seen from both sides
    assert a[1, 2] == -5.0
    assert np.array_equal(t.numpy(), a)


def test_ruda_to_numpy_has_the_tensors_address_and_keeps_it_alive():
    dev = ruda.device("cpu:0")
    t = dev.tensor(np.linspace(0, 1, 16, dtype=np.float64))
    a = np.from_dlpack(t)
    again = np.from_dlpack(t)
    assert address(a) == address(again)
    del t
    gc.collect()
    assert a[-1] == 1.0  # the export holds the memory


def test_strided_and_read_only_imports():
    base = np.arange(20, dtype=np.int32).reshape(4, 5)
    view = base[:, ::2]
    t = ruda.from_dlpack(view)
    assert t.strides == (5, 2)
    assert np.array_equal(np.from_dlpack(t), view)
    ro = np.arange(4, dtype=np.int64)
    ro.flags.writeable = False
    r = ruda.from_dlpack(ro)
    if r.read_only:  # NumPy marks read-only exports (DLPack 1.x)
        with pytest.raises(ruda.InvalidArgumentError) as e:
            r.write(np.zeros(4, dtype=np.int64))
        assert "read-only" in e.value.text


def test_torch_round_trip():
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed (its wheel is too heavy for every CI run)")
    x = torch.arange(10, dtype=torch.float32)
    t = ruda.from_dlpack(x)
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr()
    mine = ruda.device("cpu:0").tensor(np.ones(3, dtype=np.float32))
    y = torch.from_dlpack(mine)
    assert y.data_ptr() == address(np.from_dlpack(mine))
    assert y.sum().item() == 3.0


@pytest.mark.parametrize("name", ["cpu:0", "opencl:0"])
def test_kernel_file_matches_numpy(name):
    dev = device_or_skip(name)
    n = 1000
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    for bias in (0, 3):
        k = ruda.kernel_from_file(KERNEL, defines={"BIAS": bias})
        assert k.dim == (64, 1, 1)
        tx, ty = dev.tensor(x), dev.tensor(y)
        dev.launch(k, ((n + 63) // 64, 1, 1), tx, ty, n, 2.5)
        dev.sync()
        # A device may fuse a * x + y (one rounding): a few ulps apart.
        np.testing.assert_allclose(ty.numpy(), 2.5 * x + y + bias, rtol=1e-5, atol=1e-5)


def test_errors_carry_the_kind_and_text():
    with pytest.raises(ruda.InvalidArgumentError) as e:
        ruda.kernel_from_file(KERNEL, options=["-Wl,--evil"])
    assert e.value.kind == 60 and "InvalidArgument" in e.value.kind_name
    assert "is not allowed" in e.value.text
    with pytest.raises(ruda.RudaError) as e:
        ruda.kernel_from_file(KERNEL + ".missing")
    assert "missing" in str(e.value)
    dev = ruda.device("cpu:0")
    broken = ruda.kernel_from_text(
        "RUDA_KERNEL(bad, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *, x)) { nope(); }\n",
        origin="broken.c")
    t = dev.empty(4)
    with pytest.raises(ruda.RudaError) as e:
        dev.launch(broken, 1, t)
        dev.sync()
    assert "broken.c:1" in e.value.text


def test_profile_and_memory_usage():
    dev = ruda.device("cpu:0")
    k = ruda.kernel_from_file(KERNEL)
    x, y = dev.tensor(np.ones(256, dtype=np.float32)), dev.empty(256)
    with dev.profile() as p:
        dev.launch(k, 4, x, y, 256, 1.0)
    assert p.ns is not None and p.ns >= 0
    u = dev.memory_usage()
    assert u["number_allocs"] >= 2 and u["bytes_in_use"] >= 2 * 256 * 4


def test_producer_memory_is_handed_back_once():
    a = np.arange(8, dtype=np.float32)
    t = ruda.from_dlpack(a)
    before = a.base if a.base is not None else None
    del t
    gc.collect()
    # NumPy's exporter holds a reference to `a` until its deleter runs.
    import sys
    assert sys.getrefcount(a) <= 3, "the DLPack deleter did not run"
    assert before is None
