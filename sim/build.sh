#!/usr/bin/env bash
# Builds the simulated CUDA device (see sim/README.md) into $1 (default target/cuda-sim):
# libcuda.so (the driver, with every kernels/*.cu compiled in as host C++) and libnvrtc.so.
# libcublas.so comes from sim/cublas/ when that folder has a build.sh.
# Needs only g++ (C++17) and python3. Incremental: a step reruns when its inputs changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/target/cuda-sim}" && cd "${1:-$root/target/cuda-sim}" && pwd)"
sim="$root/sim"
kernels="$root/kernels"
gen="$out/gen"
obj="$out/obj"
mkdir -p "$gen" "$obj"
CXX="${CXX:-g++}"
flags=(-std=c++17 -O2 -g -fPIC -fvisibility=hidden -Wall -Wno-unknown-pragmas -Wno-unused-function -I"$sim/src" -I"$kernels")
kflags=(-DDEVTYPE_SIM -include "$sim/include/devtype_sim.cuh")

# newer OUT IN...: true when OUT is missing or older than one of IN.
newer() {
    local target=$1
    shift
    [ -e "$target" ] || return 0
    local f
    for f in "$@"; do [ "$f" -nt "$target" ] && return 0; done
    return 1
}

headers=("$sim/include/devtype_sim.cuh" "$sim/src/kernel_registry.h" "$sim/src/cuda_types.h" "$kernels/common.cuh")

# 1. Preprocess each kernel file; generate its trampolines and the manifest.
specs=()
for cu in "$kernels"/*.cu; do
    stem=$(basename "$cu" .cu)
    if newer "$gen/$stem.ii" "$cu" "${headers[@]}"; then
        "$CXX" -E -P "${flags[@]}" "${kflags[@]}" -x c++ "$cu" -o "$gen/$stem.ii"
    fi
    specs+=("$cu:$gen/$stem.ii")
done
if newer "$gen/manifest.cpp" "$sim/gen_trampolines.py" "$gen"/*.ii; then
    python3 "$sim/gen_trampolines.py" "$gen" "$kernels" "${specs[@]}"
fi

# 2. Compile (two at a time: the kernel files are the slow part).
compile() { # compile OUT SRC [extra flags...]
    local o=$1 src=$2
    shift 2
    if newer "$o" "$src" "${headers[@]}" "$@"; then
        "$CXX" "${flags[@]}" "${extra[@]}" -c "$src" -o "$o"
    fi
}
jobs=()
for cu in "$kernels"/*.cu; do
    stem=$(basename "$cu" .cu)
    (extra=("${kflags[@]}"); compile "$obj/$stem.o" "$gen/$stem.sim.cpp" "$cu") &
    jobs+=($!)
    if [ ${#jobs[@]} -ge "${SIM_BUILD_JOBS:-2}" ]; then wait "${jobs[0]}"; jobs=("${jobs[@]:1}"); fi
done
for j in "${jobs[@]}"; do wait "$j"; done
extra=()
compile "$obj/manifest.o" "$gen/manifest.cpp"
compile "$obj/grid.o" "$sim/src/grid.cpp"
compile "$obj/driver.o" "$sim/src/driver.cpp"
compile "$obj/nvrtc.o" "$sim/src/nvrtc.cpp"

# 3. Link.
kobjs=()
for cu in "$kernels"/*.cu; do kobjs+=("$obj/$(basename "$cu" .cu).o"); done
if newer "$out/libcuda.so" "$obj"/*.o; then
    "$CXX" -shared -o "$out/libcuda.so" "$obj/driver.o" "$obj/grid.o" "$obj/manifest.o" "${kobjs[@]}" -lpthread
fi
if newer "$out/libnvrtc.so" "$obj/nvrtc.o" "$obj/manifest.o"; then
    "$CXX" -shared -o "$out/libnvrtc.so" "$obj/nvrtc.o" "$obj/manifest.o"
fi
if [ -x "$sim/cublas/build.sh" ]; then
    "$sim/cublas/build.sh" "$out"
fi
