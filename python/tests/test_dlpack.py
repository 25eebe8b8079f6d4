"""ferrojit with torch tensors, through DLPack. Skipped where torch is absent (the wheel's
own test venv); run it with a Python that has torch."""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ferrojit  # noqa: E402
from conftest import REPO, arrays, build, entry  # noqa: E402


def test_torch_tensors_are_arguments_and_results_go_back_without_a_copy():
    model = ferrojit.load(os.path.join(REPO, "examples", "mlp.pt"))
    x = build(entry("mlp")["inputs"][0], arrays("mlp", "inputs"))
    from_numpy = model(x, 0.5)
    from_torch = model(torch.from_numpy(x.copy()), 0.5)
    np.testing.assert_array_equal(from_numpy, from_torch)
    # A transposed torch view is taken with its strides.
    t = torch.from_numpy(np.ascontiguousarray(x.T)).T
    assert not t.is_contiguous()
    np.testing.assert_array_equal(model(t, 0.5), from_numpy)
    # Results are numpy arrays: torch takes them through DLPack without a copy.
    back = torch.from_dlpack(from_torch)
    assert back.data_ptr() == from_torch.ctypes.data
    reference = torch.jit.load(os.path.join(REPO, "examples", "mlp.pt"))
    torch.testing.assert_close(back, reference(torch.from_numpy(x), 0.5), rtol=1e-4, atol=1e-5)


def test_from_dlpack_shares_torch_memory():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    array = ferrojit.from_dlpack(t)
    assert array.ctypes.data == t.data_ptr()
    t[0, 0] = 42.0
    assert array[0, 0] == 42.0


def test_a_tensor_that_requires_grad_is_refused_with_a_type_error():
    model = ferrojit.load(os.path.join(REPO, "examples", "mlp.pt"))
    with pytest.raises(TypeError, match="DLPack"):
        model(torch.ones(2, 4, requires_grad=True), 0.5)


def test_a_result_is_shared_with_torch_and_moved_from_ferrojit_without_a_copy():
    model = ferrojit.load(os.path.join(REPO, "examples", "mlp.pt"))
    before = ferrojit._results_moved()
    y = model(torch.ones(2, 4), 0.5)
    # ferrojit's own result buffer became the numpy array's (no copy on the way out) ...
    assert ferrojit._results_moved() == before + 1
    # ... and torch takes that same memory through DLPack.
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.ctypes.data
    assert np.shares_memory(t.numpy(), y)
    t[0, 0] = 123.0
    assert y[0, 0] == 123.0
