#!/usr/bin/env bash
# Instructions per call of devtype's tiny ops, counted by callgrind (steady under load, where
# wall-clock times are not): a throwaway crate outside the repository calls devtype by path
# (release, one rayon thread), each case runs N times and 0 times, and the difference over N
# is printed. Cases: typed 1-element add, DynTensor 1-element add, Linear(10,2) forward on a
# 4x10 input with tracked parameters and under no_grad, and Tensor::clone for reference.
#
#   scripts/tiny-ops-callgrind.sh          # N = 2000
#   N=10000 scripts/tiny-ops-callgrind.sh
#
# CARGO_TARGET_DIR may name a target directory to keep between runs (devtype's dependencies
# are then built once).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n="${N:-2000}"
work="$(mktemp -d "${TMPDIR:-/tmp}/devtype-tiny-ops.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

mkdir -p "$work/src"
cat >"$work/Cargo.toml" <<TOML
[package]
name = "devtype-tiny-ops"
version = "0.1.0"
edition = "2021"

[dependencies]
devtype = { path = "$repo" }

[profile.release]
debug = 1

[workspace]
TOML
cp "$repo/scripts/tiny-ops/main.rs" "$work/src/main.rs"
cp "$repo/Cargo.lock" "$repo/rust-toolchain.toml" "$work/"
(cd "$work" && cargo build --release --quiet)
bin="$CARGO_TARGET_DIR/release/devtype-tiny-ops"

export RAYON_NUM_THREADS=1
ir() {
    local out="$work/cg.$1.$2"
    valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$out" "$bin" "$1" "$2" \
        >/dev/null 2>"$work/valgrind.err"
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}
for case in add dynadd lin linng clone; do
    zero=$(ir "$case" 0)
    many=$(ir "$case" "$n")
    echo "$case: $(( (many - zero) / n )) instructions per call"
done
