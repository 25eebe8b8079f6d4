#!/usr/bin/env bash
# Runs already-built cargo-fuzz targets with libFuzzer's fork mode on every core but one:
# how the long `.pt2` runs in FUZZING.md were made (on a 16-core machine with no Rust
# toolchain, the binaries built here with `cargo +nightly fuzz build -O TARGET`, stripped of
# debug info and xz-compressed).
#
#   fuzz/run_parallel.sh BIN_DIR OUT_DIR TARGET:SECONDS [TARGET:SECONDS ...]
#
# BIN_DIR holds TARGET or TARGET.xz; each target starts from fuzz/seeds/TARGET and its
# committed regressions, and writes OUT_DIR/TARGET.log and any crash to OUT_DIR/artifacts/.
set -u
bin_dir=$1
out_dir=$2
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
workers=$(( $(nproc) - 1 ))
mkdir -p "$out_dir/artifacts"
for spec in "$@"; do
    target=${spec%%:*}
    seconds=${spec##*:}
    binary="$bin_dir/$target"
    if [ ! -x "$binary" ] && [ -f "$binary.xz" ]; then
        xz -dk "$binary.xz" && chmod +x "$binary"
    fi
    corpus=$(mktemp -d)
    inputs=("$repo/fuzz/seeds/$target")
    [ -d "$repo/fuzz/regressions/$target" ] && inputs+=("$repo/fuzz/regressions/$target")
    echo "== $target: $workers workers, $seconds s" | tee "$out_dir/$target.log"
    "$binary" -fork="$workers" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
        -artifact_prefix="$out_dir/artifacts/$target-" -ignore_crashes=0 \
        "$corpus" "${inputs[@]}" >> "$out_dir/$target.log" 2>&1
    echo "== exit $?" >> "$out_dir/$target.log"
    ls "$corpus" | wc -l | sed 's/^/corpus files: /' >> "$out_dir/$target.log"
    grep -E '^#[0-9]+' "$out_dir/$target.log" | tail -1
done
