#!/usr/bin/env bash
# Builds the ferrojit wheel and tests it in a fresh virtual environment that has no torch:
# maturin, numpy and pytest come from PyPI, the wheel from crates/ferrojit-python.
#   python/run_tests.sh            the pytest suite (the DLPack tests skip: no torch)
#   PYTHON=python3.12 python/run_tests.sh     another interpreter (3.9 or newer)
# The wheel is left in python/dist/. Set FERROJIT_WHEEL_PROFILE=release for an optimized
# wheel (slower to build); the tests use the dev profile, which is enough for their models.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
python="${PYTHON:-python3}"
venv="$here/.venv-test"
profile="${FERROJIT_WHEEL_PROFILE:-dev}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"

# A fresh venv every run: nothing from an earlier install, and no torch.
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check maturin numpy pytest
if "$venv/bin/python" -c 'import torch' 2>/dev/null; then
    echo "error: torch is importable in the test venv; the tests must run without it" >&2
    exit 1
fi

rm -rf "$here/dist"
start=$(date +%s)
# maturin reads pyproject.toml here, which points it at the crate.
(cd "$here" && "$venv/bin/maturin" build --profile "$profile" --strip \
    --interpreter "$venv/bin/python" --out "$here/dist" 2>&1 | grep -v '^ *Compiling' || true)
wheel=$(ls "$here"/dist/ferrojit-*.whl 2>/dev/null | head -n 1)
if [ -z "$wheel" ]; then
    echo "error: maturin built no wheel" >&2
    exit 1
fi
echo "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) in $(( $(date +%s) - start )) s"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"

cd "$here/tests"
FERROJIT_EXPECT_NO_TORCH=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
