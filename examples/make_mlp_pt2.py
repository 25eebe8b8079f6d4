"""Writes examples/mlp.pt2: the module of examples/mlp.pt (same class, same seed, so the same
weights) exported with `torch.export` instead of scripted, and checks that both give the same
result on examples/mlp_inputs.pt, which is examples/mlp_expected.pt.

Run from the repository root: `.venv/bin/python examples/make_mlp_pt2.py`
(after `tests/fixtures/generate.py`, which writes the `.pt` files).
"""

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from generate import ScriptedModule  # noqa: E402  (the class of examples/mlp.pt)


def main() -> None:
    torch.manual_seed(0)
    module = ScriptedModule().eval()
    inputs = torch.load(ROOT / "examples" / "mlp_inputs.pt")
    expected = torch.load(ROOT / "examples" / "mlp_expected.pt")
    program = torch.export.export(module, inputs)
    path = ROOT / "examples" / "mlp.pt2"
    torch.export.save(program, path)
    result = torch.export.load(path).module()(*inputs)
    torch.testing.assert_close(result, expected, rtol=0, atol=0)
    print(f"wrote {path.relative_to(ROOT)}; its result equals mlp_expected.pt bitwise")


if __name__ == "__main__":
    main()
