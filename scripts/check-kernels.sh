#!/usr/bin/env bash
# Compiles every kernels/*.cu with NVRTC for sm_90 through devtype's own loader, failing on any
# error or warning. No GPU needed: NVRTC comes from the `nvidia-cuda-nvrtc` wheel, installed
# into a virtual environment under the cargo target directory (reused on later runs).
#
# Usage: bash scripts/check-kernels.sh        (called by .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
venv="$target/nvrtc-venv"
wheel="nvidia-cuda-nvrtc==13.0.*"

if [ -x "$venv/bin/python" ] || python3 -m venv "$venv" 2>/dev/null; then
    if ! "$venv/bin/python" -m pip show nvidia-cuda-nvrtc 2>/dev/null | grep -q '^Version: 13\.0\.'; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
    fi
else
    # No venv module (e.g. a bare Debian python3): install the wheel's files into a folder.
    rm -rf "$venv"
    python3 -m pip install --quiet --disable-pip-version-check --target "$venv" "$wheel"
fi

# The wheel's libraries: nvidia/cu13/lib in 13.x wheels, nvidia/cuda_nvrtc/lib in older ones.
lib="$(find "$venv" -name 'libnvrtc.so.13' -printf '%h\n' | head -n 1)"
if [ -z "$lib" ]; then
    echo "check-kernels: libnvrtc.so.13 not found in $venv" >&2
    exit 1
fi
if [ ! -e "$lib/libnvrtc-builtins.so.13.0" ]; then
    echo "check-kernels: libnvrtc-builtins.so.13.0 missing next to $lib/libnvrtc.so.13" >&2
    exit 1
fi
echo "check-kernels: NVRTC from $lib"

# libnvrtc opens libnvrtc-builtins by name, and cudarc finds libnvrtc.so.13, on this path.
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DEVTYPE_REQUIRE_NVRTC=1
cargo test --test kernels_compile -- --nocapture
