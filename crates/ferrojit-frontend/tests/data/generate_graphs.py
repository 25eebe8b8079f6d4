"""Regenerates the expected graphs (and the operator schemas) the compiler tests compare with.

Run with PyTorch installed:  python crates/ferrojit-frontend/tests/data/generate_graphs.py

* graphs/NAME.py     -> graphs/NAME.expected.txt : `torch.jit.CompilationUnit(src).f.graph`
* archives/NAME/...  : the code/ files of tests/fixtures/e2e/NAME.pt, and
  archives/NAME.expected.txt : the graph of `forward` of the loaded module
  (PyTorch compiles the same code/ files when it loads the archive).
* schemas.txt        : every overload of the operators the tests use, in registration order.
"""
import os
import re
import sys
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

OPS = """
aten::add aten::add_ aten::sub aten::sub_ aten::mul aten::mul_ aten::div aten::div_ aten::floordiv
aten::remainder aten::pow aten::neg aten::lt aten::le aten::gt aten::ge aten::eq aten::ne
aten::__not__ aten::__is__ aten::__isnot__ aten::__range_length aten::__derive_index
aten::len aten::__getitem__ aten::append aten::size aten::view aten::select aten::slice
aten::linear aten::relu aten::relu_ aten::Int aten::Float aten::Bool aten::str aten::cat
aten::zeros aten::sum aten::dim aten::mean aten::matmul aten::t aten::to aten::detach aten::device
aten::copy_ aten::tensor aten::numel aten::chunk aten::_set_item aten::format aten::keys
aten::IntImplicit aten::FloatImplicit aten::ScalarImplicit aten::unsqueeze aten::__contains__
aten::_unwrap_optional prim::min prim::max aten::fill_ aten::warn aten::abs
"""


def graph_text(graph):
    return str(graph)


def generate_graphs():
    directory = os.path.join(HERE, "graphs")
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(directory, name)) as handle:
            source = handle.read()
        unit = torch.jit.CompilationUnit(source)
        with open(os.path.join(directory, name[:-3] + ".expected.txt"), "w") as handle:
            handle.write(graph_text(unit.f.graph))


def generate_archives():
    directory = os.path.join(HERE, "archives")
    os.makedirs(directory, exist_ok=True)
    fixtures = os.path.join(ROOT, "tests", "fixtures", "e2e")
    for name in ["scripted_module", "scripted_fn", "int_promotion", "raises", "while_loop", "traced_mlp", "views_inplace"]:
        path = os.path.join(fixtures, name + ".pt")
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                match = re.match(r"^[^/]+/code/(.*\.py)$", member)
                if match:
                    target = os.path.join(directory, name, match.group(1))
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as handle:
                        handle.write(archive.read(member))
        module = torch.jit.load(path)
        with open(os.path.join(directory, name + ".expected.txt"), "w") as handle:
            handle.write(graph_text(module.graph))


def generate_schemas():
    lines = []
    for op in OPS.split():
        for schema in torch._C._jit_get_schemas_for_operator(op):
            lines.append(str(schema))
    with open(os.path.join(HERE, "schemas.txt"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    generate_graphs()
    generate_archives()
    generate_schemas()
    print("ok", file=sys.stderr)
