"""Shared helpers: the committed fixtures (python/tests/fixtures, written by its
generate.py with PyTorch) rebuilt as Python values, and a comparison of ferrojit's results
with PyTorch's."""

import json
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


def manifest():
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        return json.load(f)


def entry(name):
    for model in manifest()["models"]:
        if model["name"] == name:
            return model
    raise KeyError(name)


def arrays(name, kind):
    with np.load(os.path.join(FIXTURES, f"{name}.{kind}.npz")) as data:
        return {key: data[key] for key in data.files}


def build(description, stored):
    """The Python value a manifest description stands for."""
    (kind, value), = description.items()
    if kind == "array":
        return stored[value]
    if kind in ("bool", "int", "float", "str"):
        return value
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(build(v, stored) for v in value)
    if kind == "list":
        return [build(v, stored) for v in value]
    if kind == "dict":
        return {k: build(v, stored) for k, v in value}
    raise ValueError(kind)


def assert_matches(actual, description, stored, where="result"):
    """`actual` has the structure, types, dtypes and (within float tolerance) values
    PyTorch gave."""
    (kind, value), = description.items()
    if kind == "array":
        expected = stored[value]
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual)} is not an array"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
        if np.issubdtype(expected.dtype, np.floating):
            np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=where)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=where)
    elif kind == "float":
        assert isinstance(actual, float), where
        assert actual == pytest.approx(value, rel=1e-6), where
    elif kind in ("bool", "int", "str"):
        assert type(actual).__name__ == kind, f"{where}: {type(actual)} is not {kind}"
        assert actual == value, where
    elif kind == "none":
        assert actual is None, where
    elif kind in ("tuple", "list"):
        assert type(actual).__name__ == kind, f"{where}: {type(actual)} is not a {kind}"
        assert len(actual) == len(value), where
        for i, (a, v) in enumerate(zip(actual, value)):
            assert_matches(a, v, stored, f"{where}[{i}]")
    elif kind == "dict":
        assert isinstance(actual, dict), where
        assert list(actual.keys()) == [k for k, _ in value], where
        for k, v in value:
            assert_matches(actual[k], v, stored, f"{where}[{k!r}]")
    else:
        raise ValueError(kind)
