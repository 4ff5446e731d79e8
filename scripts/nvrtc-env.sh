#!/usr/bin/env bash
# Sourced by check-kernels.sh and gpu-check.sh: installs the `nvidia-cuda-nvrtc` wheel into a
# virtual environment under the cargo target directory (reused on later runs; PyPI works
# offline here through its proxy) and sets NVRTC_LIB to the folder holding libnvrtc.so.13 and
# libnvrtc-builtins.so.13.0. Returns non-zero (with a message) when that fails.
nvrtc_env() {
    local target="${CARGO_TARGET_DIR:-target}"
    local venv="$target/nvrtc-venv"
    local wheel="nvidia-cuda-nvrtc==13.0.*"
    if [ -x "$venv/bin/python" ] || python3 -m venv "$venv" 2>/dev/null; then
        if ! "$venv/bin/python" -m pip show nvidia-cuda-nvrtc 2>/dev/null | grep -q '^Version: 13\.0\.'; then
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" || return 1
        fi
    else
        # No venv module (e.g. a bare Debian python3): install the wheel's files into a folder.
        rm -rf "$venv"
        python3 -m pip install --quiet --disable-pip-version-check --target "$venv" "$wheel" || return 1
    fi
    # The wheel's libraries: nvidia/cu13/lib in 13.x wheels, nvidia/cuda_nvrtc/lib in older ones.
    NVRTC_LIB="$(find "$venv" -name 'libnvrtc.so.13' -printf '%h\n' | head -n 1)"
    if [ -z "$NVRTC_LIB" ]; then
        echo "nvrtc-env: libnvrtc.so.13 not found in $venv" >&2
        return 1
    fi
    if [ ! -e "$NVRTC_LIB/libnvrtc-builtins.so.13.0" ]; then
        echo "nvrtc-env: libnvrtc-builtins.so.13.0 missing next to $NVRTC_LIB/libnvrtc.so.13" >&2
        return 1
    fi
    NVRTC_LIB="$(cd "$NVRTC_LIB" && pwd)"
    export NVRTC_LIB
}
