"""The ferrojit wheel against PyTorch's results on the committed fixtures, with numpy
arrays in and out and no torch installed."""

import importlib.util
import os
import threading

import numpy as np
import pytest

import ferrojit
from conftest import FIXTURES, REPO, arrays, assert_matches, build, entry, manifest

MODELS = manifest()["models"]


def load(name):
    return ferrojit.load(os.path.join(REPO, entry(name)["model"]))


@pytest.mark.skipif(
    os.environ.get("FERROJIT_EXPECT_NO_TORCH") != "1",
    reason="only where the test script promises a venv without torch",
)
def test_the_venv_has_no_torch():
    assert importlib.util.find_spec("torch") is None


@pytest.mark.parametrize("model", MODELS, ids=[m["name"] for m in MODELS])
def test_forward_matches_pytorch(model):
    loaded = ferrojit.load(os.path.join(REPO, model["model"]))
    inputs = arrays(model["name"], "inputs")
    expected = arrays(model["name"], "expected")
    args = [build(d, inputs) for d in model["inputs"]]
    assert_matches(loaded(*args), model["expected"], expected)
    # A second call sees nothing of the first.
    assert_matches(loaded.forward(*args), model["expected"], expected)


def test_containers_strings_and_scalars_round_trip():
    model = load("containers")
    result = model(*build_inputs("containers"))
    assert isinstance(result, tuple)
    y, scaled, names, count, flag, label = result
    assert names == ["AB", "C"]
    assert count == 7 and isinstance(count, int)
    assert flag is False
    assert label == "containers:3"
    assert set(scaled) == {"a_x2", "b_x2"}


def build_inputs(name):
    return [build(d, arrays(name, "inputs")) for d in entry(name)["inputs"]]


def test_other_methods_and_dtypes():
    model = load("containers")
    stored = arrays("containers", "expected")
    inputs = arrays("containers", "inputs")
    x = build_inputs("containers")[0]
    assert_matches(model.predict(x), entry("containers")["predict"], stored)
    assert_matches(model.run_method("predict", x), entry("containers")["predict"], stored)
    result = model.half_and_int(inputs["half_in"], inputs["int_in"])
    assert result[0].dtype == np.float16 and result[1].dtype == np.int32
    assert_matches(result, entry("containers")["half_and_int"], stored)


def test_strided_inputs_give_the_contiguous_result():
    model = load("mlp")
    x = build_inputs("mlp")[0]
    base = np.ascontiguousarray(x.T[::-1])  # another layout holding the same values
    view = base[::-1].T
    assert not view.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(model(view, 0.5), model(np.ascontiguousarray(x), 0.5))


def test_module_tree_attributes_and_parameters():
    model = load("containers")
    spec = entry("containers")
    stored = arrays("containers", "expected")
    assert model.method_names() == sorted(
        ["forward", "predict", "check_positive", "half_and_int"]
    )
    assert model.label == "containers"
    assert model.steps == 3
    assert model.weights == [0.5, 1.5]
    assert [name for name, _ in model.named_children()] == ["scale"]
    assert [name for name, _ in model.named_modules()] == ["", "scale", "scale.linear"]
    parameters = dict(model.named_parameters())
    assert sorted(parameters) == sorted(spec["parameters"])
    for name, description in spec["parameters"].items():
        assert_matches(parameters[name], description, stored, name)
    buffers = dict(model.named_buffers())
    assert_matches(buffers["scale.offset"], spec["buffers"]["scale.offset"], stored)
    # Submodules are modules: their attributes and methods are reachable.
    assert_matches(model.scale.linear.weight, spec["parameters"]["scale.linear.weight"], stored)
    x = build_inputs("containers")[0]
    linear = model.scale.linear(x)
    np.testing.assert_allclose(
        linear, x @ parameters["scale.linear.weight"].T + parameters["scale.linear.bias"],
        rtol=1e-5, atol=1e-6,
    )
    assert "label" in dir(model) and "predict" in dir(model)
    assert model.attributes()["label"] == "containers"


def test_code_and_graph():
    model = load("containers")
    assert "def forward(self" in model.code
    assert "def predict(self" in model.code
    assert model.graph.startswith("graph(")
    assert "aten::argmax" in model.predict.graph
    exported = load("mlp_pt2")
    assert exported.format == "pt2"
    assert "def forward(self" in exported.code
    assert "call_function" in exported.graph or "%" in exported.graph


def test_exceptions_map_to_python_types():
    model = load("containers")
    with pytest.raises(ferrojit.RunError, match="x must be positive") as raised:
        model.check_positive(np.array([-1.0], dtype=np.float32))
    assert isinstance(raised.value, ferrojit.Error)
    with pytest.raises(AttributeError, match="no method, submodule or attribute 'nothing'"):
        model.nothing
    with pytest.raises(AttributeError, match="no method 'nothing'"):
        model.run_method("nothing")
    with pytest.raises(TypeError, match="cannot pass a object"):
        model.predict(object())
    with pytest.raises(TypeError, match="complex128"):
        model.predict(np.zeros((2, 4), dtype=np.complex128))
    with pytest.raises(TypeError, match="one type"):
        model(np.zeros((2, 4), np.float32), 1.0, ["a", 1], {}, (1, True))
    with pytest.raises(FileNotFoundError):
        ferrojit.load(os.path.join(FIXTURES, "no_such_model.pt"))
    with pytest.raises(ferrojit.LoadError, match="not a zip|cannot read"):
        ferrojit.load(os.path.join(FIXTURES, "manifest.json"))
    with pytest.raises(ValueError):
        ferrojit.set_num_threads(0)
    # A wrong argument count is the model's error, raised as RunError.
    with pytest.raises(ferrojit.Error):
        model.predict()


def test_torch_save_files_read_without_torch(tmp_path):
    expected = ferrojit.load_values(os.path.join(REPO, "examples", "mlp_expected.pt"))
    assert_matches(expected, entry("mlp")["expected"], arrays("mlp", "expected"))
    value = (np.arange(6, dtype=np.int64).reshape(2, 3), {"k": 1.5}, ["s"], None)
    path = tmp_path / "values.pt"
    ferrojit.save_values(value, str(path))
    back = ferrojit.load_values(str(path))
    np.testing.assert_array_equal(back[0], value[0])
    assert back[1:] == value[1:]


def test_pt2_sample_inputs_and_threads():
    exported = load("mlp_pt2")
    samples = exported.sample_inputs()
    assert samples is not None and isinstance(samples[0], np.ndarray)
    assert ferrojit.get_num_threads() >= 1
    model = load("small_cnn_scripted")
    spec = entry("small_cnn_scripted")
    args = build_inputs("small_cnn_scripted")
    stored = arrays("small_cnn_scripted", "expected")
    failures = []

    def call():
        try:
            for _ in range(3):
                assert_matches(model(*args), spec["expected"], stored)
        except Exception as error:  # reported below, on the main thread
            failures.append(error)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_results_move_into_numpy_and_shared_tensors_are_copied():
    """A fresh result's elements become the numpy array's without a copy; a tensor the
    model still holds (a parameter) is copied, so writing the array cannot change the
    model."""
    model = ferrojit.load(os.path.join(REPO, "examples", "mlp.pt"))
    x = np.ones((2, 4), np.float32)
    before = ferrojit._results_moved()
    y = model(x, 0.5)
    assert ferrojit._results_moved() == before + 1
    assert y.flags.writeable and y.flags.c_contiguous
    expected = y.copy()
    y += 1.0  # numpy owns the elements now: the next call is unaffected
    np.testing.assert_array_equal(model(x, 0.5), expected)

    moved = ferrojit._results_moved()
    weight = model.fc1.weight
    assert ferrojit._results_moved() == moved, "a parameter must be copied, not moved"
    original = weight.copy()
    weight[...] = 0.0
    np.testing.assert_array_equal(model.fc1.weight, original)
    np.testing.assert_array_equal(model(x, 0.5), expected)
