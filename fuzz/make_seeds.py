"""Builds the seed corpora under fuzz/seeds/<target>/ from the committed PyTorch fixtures.

Run from the repository root: `python fuzz/make_seeds.py`. Only the standard library is
used. Seeds are small (each fixture is a few KiB); the fuzzer's own corpus lives in
fuzz/corpus/ (ignored by git).
"""

import hashlib
import json
import pathlib
import re
import shutil
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"


MAX_SEED_ARCHIVE_BYTES = 32 * 1024


def put(target: str, data: bytes) -> None:
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    if SEEDS.exists():
        shutil.rmtree(SEEDS)
    archives = sorted((ROOT / "tests" / "fixtures").glob("*/*.pt")) + sorted(
        (ROOT / "examples").glob("*.pt")
    )
    for path in archives:
        # Small inputs fuzz fastest; the large-zoo models (git-ignored) are left out.
        if "zoo_large" in path.parts or path.stat().st_size > MAX_SEED_ARCHIVE_BYTES:
            continue
        data = path.read_bytes()
        put("zip_reader", data)
        put("archive_load", data)
        # The adversarial fixtures are broken on purpose: whole, they are good zip and
        # archive seeds; their members are skipped where Python cannot read them.
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError):
            continue
        with archive:
            for info in archive.infolist():
                name = info.filename.split("/", 1)[-1]
                try:
                    content = archive.read(info)
                except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
                    continue
                if len(content) > MAX_SEED_ARCHIVE_BYTES:
                    continue
                if name.endswith(".pkl"):
                    put("pickle_vm", content)
                elif name.startswith("code/") and name.endswith(".py"):
                    put("torchscript_parse", content)
                    put("torchscript_compile", content)
    # Hand-written TorchScript in the style of the fixtures, so compile seeds hold free
    # functions (archived code mostly holds classes).
    put(
        "torchscript_compile",
        b"def f(x: Tensor, n: int) -> Tensor:\n"
        b"    y = x\n"
        b"    for i in range(n):\n"
        b"        y = torch.add(y, x, alpha=2)\n"
        b"    while n > 0:\n"
        b"        n = n - 1\n"
        b"    return torch.relu(y)\n",
    )
    # Graph texts PyTorch printed (the IR corpus) and the pass and verifier cases.
    for path in sorted((ROOT / "tests" / "fixtures").glob("**/*.ir")):
        put("ir_parse", path.read_bytes())
    schema = re.compile(rb'"((?:aten|prim)::[^"]*\)[^"]*)"')
    for source in sorted((ROOT / "crates").glob("ferrojit-runtime/src/**/*.rs")):
        for match in schema.finditer(source.read_bytes()):
            put("schema_parse", match.group(1))
    put_pt2_seeds()


MAX_SEED_PT2_BYTES = 64 * 1024


def collect_expressions(value, found: set) -> None:
    """Every sympy string in a program's JSON: `expr_str` fields and range-constraint keys."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "expr_str" and isinstance(item, str):
                found.add(item)
            collect_expressions(item, found)
        constraints = value.get("range_constraints")
        if isinstance(constraints, dict):
            found.update(constraints.keys())
    elif isinstance(value, list):
        for item in value:
            collect_expressions(item, found)


def put_pt2_seeds() -> None:
    """Seeds for the `.pt2` targets: small exported programs whole, their program JSON, and
    the symbolic expressions that JSON holds."""
    expressions: set = set()
    for path in sorted((ROOT / "tests" / "fixtures").glob("**/*.pt2")):
        data = path.read_bytes()
        if len(data) <= MAX_SEED_PT2_BYTES:
            put("pt2_archive", data)
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError):
            continue
        with archive:
            for info in archive.infolist():
                name = info.filename.split("/", 1)[-1]
                if not (name.startswith("models/") and name.endswith(".json")):
                    continue
                try:
                    content = archive.read(info)
                except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
                    continue
                if len(content) <= MAX_SEED_PT2_BYTES:
                    put("pt2_program_json", content)
                try:
                    collect_expressions(json.loads(content), expressions)
                except ValueError:
                    continue
    for text in sorted(expressions):
        put("sym_expression", text.encode())
    for text in ["s0 + 2*s1", "Max(1, s0)", "CeilToInt(IntTrueDiv(s0, 2))", "FloorDiv(s0, 0)",
                 "Mod(u0, 3)", "-s0**2 + 9223372036854775807", "((((s0))))", "Eq(s0, s1)"]:
        put("sym_expression", text.encode())


if __name__ == "__main__":
    main()
