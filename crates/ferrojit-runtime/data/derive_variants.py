"""Writes derived_variants.txt: the in-place (`x_`) and out= (`x.out`) overloads of PyTorch's
public ATen operators that are their functional overload plus a write, so that ferrojit can
register each one from the functional kernel it already has
(crates/ferrojit-runtime/src/ops/derived_variants.rs).

A line is `KIND<TAB>FUNCTIONAL<TAB>SCHEMA`:
- `in_place`: SCHEMA is `aten::f_.o(Tensor(a!) self, <the functional's other arguments>) ->
  Tensor(a!)`; FUNCTIONAL is `aten::f.o` with the same arguments. The variant runs the
  functional and writes its result into `self` (same shape, a dtype `self` can hold).
- `out`: SCHEMA's arguments are the functional's followed by k keyword-only `Tensor(x!)`
  outputs, and it returns those outputs; FUNCTIONAL returns k tensors. The variant runs the
  functional and writes result i into output i (resized when its shape differs), as ATen's
  out= kernels do.
- `out_options`: as `out`, for a factory whose functional also takes tensor options
  (`ScalarType? dtype, Layout? layout, Device? device, bool? pin_memory`) that its out=
  overload lacks: SCHEMA's arguments are the functional's less those options. The variant runs
  the functional with `dtype` set to `out`'s dtype (the others None), as ATen's generated
  out= kernels take the options from `out`, and writes the result into `out`.

Run from the repository root: `.venv/bin/python crates/ferrojit-runtime/data/derive_variants.py`.
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PUBLIC = os.path.join(HERE, "..", "..", "ferrojit-cli", "data", "pytorch_public_ops.txt")


# The tensor options of a factory, which its out= overload takes from `out`.
OPTIONS = {"dtype", "layout", "device", "pin_memory"}


def full_name(schema):
    return schema.name + ("." + schema.overload_name if schema.overload_name else "")


def argument_key(argument):
    """An argument without its alias annotation: name, type, default, keyword-only."""
    return (argument.name, str(argument.type), str(argument.default_value), argument.kwarg_only)


def writes(argument):
    info = argument.alias_info
    return info is not None and info.is_write


def main():
    public = set()
    with open(PUBLIC, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            public.add(line.split("\t")[0])
    schemas = {full_name(s): s for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}
    by_arguments = {}
    for name, schema in schemas.items():
        if any(writes(a) for a in schema.arguments):
            continue
        key = (schema.name, tuple(argument_key(a) for a in schema.arguments))
        by_arguments.setdefault(key, []).append(schema)
    lines = []
    for name in sorted(public):
        schema = schemas.get(name)
        if schema is None:
            continue
        arguments = list(schema.arguments)
        returns = list(schema.returns)
        if not returns or any(str(r.type) != "Tensor" for r in returns):
            continue
        base = schema.name
        if base.endswith("_") and not base.endswith("__"):
            if not arguments or not writes(arguments[0]) or str(arguments[0].type) != "Tensor":
                continue
            if any(writes(a) for a in arguments[1:]) or len(returns) != 1:
                continue
            functional_name = base[:-1]
            key = (functional_name, tuple(argument_key(a) for a in arguments))
            candidates = [
                s for s in by_arguments.get(key, [])
                if s.overload_name == schema.overload_name
                and len(s.returns) == 1 and str(s.returns[0].type) == "Tensor"
                and s.returns[0].alias_info is None
            ]
            if candidates:
                lines.append(("in_place", full_name(candidates[0]), str(schema)))
            continue
        outputs = [a for a in arguments if writes(a)]
        if not outputs or len(outputs) != len(returns):
            continue
        count = len(outputs)
        if arguments[-count:] != outputs or not all(a.kwarg_only for a in outputs):
            continue
        if any(str(a.type) != "Tensor" for a in outputs):
            continue
        inputs = arguments[:-count]
        if any(writes(a) for a in inputs):
            continue
        key = (base, tuple(argument_key(a) for a in inputs))
        candidates = [
            s for s in by_arguments.get(key, [])
            if len(s.returns) == count
            and all(str(r.type) == "Tensor" and r.alias_info is None for r in s.returns)
        ]
        if len(candidates) == 1:
            lines.append(("out", full_name(candidates[0]), str(schema)))
            continue
        if count != 1:
            continue
        input_keys = [argument_key(a) for a in inputs]
        with_options = [
            s for s in schemas.values()
            if s.name == base and not any(writes(a) for a in s.arguments)
            and len(s.returns) == 1 and str(s.returns[0].type) == "Tensor"
            and s.returns[0].alias_info is None
            and any(a.name in OPTIONS for a in s.arguments)
            and [argument_key(a) for a in s.arguments if a.name not in OPTIONS] == input_keys
        ]
        if len(with_options) == 1:
            lines.append(("out_options", full_name(with_options[0]), str(schema)))
    with open(os.path.join(HERE, "derived_variants.txt"), "w", encoding="utf-8") as handle:
        handle.write(
            f"# Written by derive_variants.py from torch {torch.__version__}: in-place and out= "
            "overloads that are a functional overload plus a write. KIND<TAB>FUNCTIONAL<TAB>SCHEMA.\n"
        )
        for kind, functional, schema in lines:
            handle.write(f"{kind}\t{functional}\t{schema}\n")
    print(len(lines), "variants:", sum(k == "in_place" for k, _, _ in lines), "in place,",
          sum(k == "out_options" for k, _, _ in lines), "with options from out")


if __name__ == "__main__":
    main()
