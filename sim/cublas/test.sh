#!/usr/bin/env bash
# Builds the simulated cuBLAS into OUTDIR and tests it:
#   1. test_cublas.cpp, twice (GEMMs queued on a stand-in cuLaunchHostFunc; no driver, so
#      synchronous), against an f64 reference (see the file);
#   2. abi_check/: the same calls devtype makes, through cudarc 0.19's own bindings (needs
#      cargo and the crates in the local registry; skipped with a message without cargo).
#
#   sim/cublas/test.sh OUTDIR
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
"$here/build.sh" "$out" --test
if command -v cargo >/dev/null 2>&1; then
    CARGO_TARGET_DIR="$out/abi-check-target" cargo build --offline -q \
        --manifest-path "$here/abi_check/Cargo.toml"
    LD_LIBRARY_PATH="$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$out/abi-check-target/debug/cublas-sim-abi-check"
else
    echo "cargo not found: skipping the cudarc ABI check"
fi
