#!/usr/bin/env bash
# Compiles every kernels/*.cu with NVRTC for sm_90 through devtype's own loader, failing on any
# error or warning. No GPU needed: NVRTC comes from the `nvidia-cuda-nvrtc` wheel, installed
# into a virtual environment under the cargo target directory (reused on later runs).
#
# Usage: bash scripts/check-kernels.sh        (called by .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/nvrtc-env.sh
. scripts/nvrtc-env.sh
nvrtc_env || { echo "check-kernels: could not set up NVRTC" >&2; exit 1; }
lib="$NVRTC_LIB"
echo "check-kernels: NVRTC from $lib"

# libnvrtc opens libnvrtc-builtins by name, and cudarc finds libnvrtc.so.13, on this path.
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DEVTYPE_REQUIRE_NVRTC=1
# compile_kernels also stores each image in the kernel cache: keep it under target/, not ~.
export DEVTYPE_KERNEL_CACHE="${DEVTYPE_KERNEL_CACHE:-${CARGO_TARGET_DIR:-target}/kernel-cache}"
cargo test --test kernels_compile -- --nocapture
