"""Regenerates the PyTorch-written fixtures used by the ferrojit-archive tests.

Run with a Python that has PyTorch (developed against 2.15):
    python generate.py
`cargo test` never runs this; it only reads the committed outputs.
"""

import io
import zipfile

import torch


def extract(pt_path, record, out_path):
    with zipfile.ZipFile(pt_path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/" + record)]
        with open(out_path, "wb") as out:
            out.write(archive.read(name))


# torch.save of nested containers and tensors (two tensors share one storage).
base = torch.arange(6, dtype=torch.float32)
torch.save(
    {
        "a": torch.ones(2),
        "b": [1, 2.5, "x", None, True],
        "shared": (base, base[2:4]),
        "ints": (-5, 300, 70000, -(2**31), 2**40, -(2**40)),
        "nested": {"x": [[1, 2], [3]], "y": ()},
    },
    "torch_save_nested.pt",
)
extract("torch_save_nested.pt", "data.pkl", "torch_save_nested.pkl")

# A module state_dict: an OrderedDict with a BUILD of `_metadata`.
torch.manual_seed(0)
torch.save(torch.nn.Linear(2, 1).state_dict(), "torch_save_state_dict.pt")
extract("torch_save_state_dict.pt", "data.pkl", "torch_save_state_dict.pkl")


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 3)
        self.d = {"k": 1}
        self.l = [1.0, 2.0]

    def forward(self, x):
        return self.lin(x) + self.l[0]


torch.manual_seed(0)
torch.jit.save(torch.jit.script(Small()), "jit_small.pt")
extract("jit_small.pt", "data.pkl", "jit_small_data.pkl")
