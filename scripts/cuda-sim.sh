#!/usr/bin/env bash
# Runs a command against the simulated CUDA device: builds it if needed (sim/build.sh, into
# target/cuda-sim; a rebuild only recompiles what changed) and puts its libcuda.so,
# libnvrtc.so and libcublas.so first on LD_LIBRARY_PATH, where cudarc looks first.
#
#   scripts/cuda-sim.sh cargo test --test cuda_ops
#   DEVTYPE_SIM_SEED=7 scripts/cuda-sim.sh cargo run --release --example train
#
# Settings (environment): DEVTYPE_SIM_DEVICES (2), DEVTYPE_SIM_MEMORY (5G per device),
# DEVTYPE_SIM_SEED (the schedule's seed; `off` runs each operation without a delay),
# DEVTYPE_SIM_SMS (4 multiprocessors). See sim/README.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${DEVTYPE_SIM_DIR:-${CARGO_TARGET_DIR:-$root/target}/cuda-sim}"
if [ $# -eq 0 ]; then
    echo "usage: scripts/cuda-sim.sh <command...>" >&2
    exit 2
fi
"$root/sim/build.sh" "$out" >&2
export LD_LIBRARY_PATH="$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
