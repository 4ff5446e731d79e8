#!/usr/bin/env bash
# Builds and runs the simulator's self-test (selftest.cpp, kernels.cu) in OUTDIR (default
# target/cuda-sim/selftest): the driver and fiber runner with the self-test's own kernels.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sim="$(dirname "$here")"
root="$(dirname "$sim")"
out="${1:-$root/target/cuda-sim/selftest}"
mkdir -p "$out"
CXX="${CXX:-g++}"
flags=(-std=c++17 -O1 -g -Wall -Wno-unknown-pragmas -I"$sim/src" -I"$here")
"$CXX" -E -P "${flags[@]}" -DDEVTYPE_SIM -include "$sim/include/devtype_sim.cuh" -x c++ "$here/kernels.cu" -o "$out/kernels.ii"
# The generator hashes kernels/common.cuh with each file; the self-test reads the hash back.
python3 "$sim/gen_trampolines.py" "$out" "$root/kernels" "$here/kernels.cu:$out/kernels.ii"
"$CXX" "${flags[@]}" -DDEVTYPE_SIM -include "$sim/include/devtype_sim.cuh" -c "$out/kernels.sim.cpp" -o "$out/kernels.o"
"$CXX" "${flags[@]}" -pthread -o "$out/selftest" \
    "$here/selftest.cpp" "$sim/src/driver.cpp" "$sim/src/grid.cpp" "$out/manifest.cpp" "$out/kernels.o"
DEVTYPE_SIM_DEVICES=1 "$out/selftest"
