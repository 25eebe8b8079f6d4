#!/usr/bin/env bash
# Where ferrojit's time goes on one benchmark model: `perf record` of `ferrojit bench` and the
# top symbols (self time), as BENCHMARKS.md's issue-22 profiles show them.
#
#   bench/profile_ferrojit.sh ARCHIVE INPUTS [THREADS] [ITERS]
#
# ARCHIVE and INPUTS are files that `bench/compare.py --onnx` wrote (target/bench/... ); the
# binary is $FERROJIT_BIN or target/release/ferrojit. Needs perf (and perf_event_paranoid
# low enough for user-space sampling). The release profile has no frame pointers, so the call
# graph comes from DWARF unwinding at a low sampling rate.
set -euo pipefail
archive=$1
inputs=$2
threads=${3:-1}
iters=${4:-5}
binary=${FERROJIT_BIN:-target/release/ferrojit}
data=$(mktemp --suffix=.perf.data)
trap 'rm -f "$data"' EXIT
perf record -q -F 199 --call-graph dwarf,32768 -o "$data" \
    "$binary" bench "$archive" --inputs "$inputs" --iters "$iters" --warmup 1 \
    --threads "$threads" >/dev/null
echo "== top symbols (self time) =="
perf report -i "$data" --no-children --percent-limit 2 --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9]'
echo "== top ferrojit operators (time including callees) =="
perf report -i "$data" --children --percent-limit 3 --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9]' | grep -E 'ferrojit_tensor::|ferrojit_runtime::ops' | head -20
