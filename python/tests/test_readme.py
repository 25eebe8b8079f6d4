"""README.md's ```python block, run as written from the repository root (the reader's
directory), in the test venv without torch: a README edit that breaks it fails here."""

import os
import re

import numpy as np

from conftest import REPO


def readme_python_blocks():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_readme_python_block_runs(monkeypatch):
    blocks = readme_python_blocks()
    assert len(blocks) == 1, "README.md should have exactly one ```python block"
    monkeypatch.chdir(REPO)
    namespace = {}
    exec(compile(blocks[0], "README.md (python block)", "exec"), namespace)
    # What the block promises: numpy in, numpy out, and the model's IR and code.
    y = namespace["y"]
    assert isinstance(y, np.ndarray)
    assert y.dtype == np.float32 and y.shape == (2, 3)
    model = namespace["model"]
    assert "graph" in str(model.forward.graph)
    assert "def forward" in model.code
