"""Builds the seed corpora under fuzz/seeds/<target>/ from the committed PyTorch fixtures.

Run from the repository root: `python fuzz/make_seeds.py`. Only the standard library is
used. Seeds are small (each fixture is a few KiB); the fuzzer's own corpus lives in
fuzz/corpus/ (ignored by git).
"""

import hashlib
import pathlib
import re
import shutil
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"


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
        data = path.read_bytes()
        put("zip_reader", data)
        put("archive_load", data)
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename.split("/", 1)[-1]
                content = archive.read(info)
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
    schema = re.compile(rb'"((?:aten|prim)::[^"]*\)[^"]*)"')
    for source in sorted((ROOT / "crates").glob("ferrojit-runtime/src/**/*.rs")):
        for match in schema.finditer(source.read_bytes()):
            put("schema_parse", match.group(1))


if __name__ == "__main__":
    main()
