#!/usr/bin/env bash
# Builds the simulated cuBLAS: OUTDIR/libcublas.so and OUTDIR/libcublasLt.so (which
# libcublas.so needs, found next to it through its $ORIGIN run path, as the real pair is
# installed). cudarc 0.19 opens `libcublas.so` first, so no versioned names are needed.
#
#   sim/cublas/build.sh OUTDIR          build the libraries
#   sim/cublas/build.sh OUTDIR --test   also build and run the tests (test_cublas.cpp)
#
# Needs only the system g++ (C++17). CXX and CXXFLAGS are honoured.
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [--test]" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cxx="${CXX:-g++}"
flags=(-std=c++17 -O2 -g -fPIC -Wall -Wextra -fvisibility=hidden ${CXXFLAGS:-})

# Incremental: relink only when a source here is newer than the libraries.
stale=0
for f in "$here"/cublas.cpp "$here"/cublaslt.cpp "$here"/cublas_sim.h "$here"/exports.map "$here"/build.sh; do
    for lib in "$out/libcublas.so" "$out/libcublasLt.so"; do
        if [ ! -e "$lib" ] || [ "$f" -nt "$lib" ]; then stale=1; fi
    done
done
if [ "$stale" = 1 ]; then
    "$cxx" "${flags[@]}" -shared -Wl,-soname,libcublasLt.so -Wl,--no-undefined \
        -Wl,--version-script,"$here/exports.map" -o "$out/libcublasLt.so" "$here/cublaslt.cpp"
    "$cxx" "${flags[@]}" -I"$here" -shared -Wl,-soname,libcublas.so -Wl,--no-undefined \
        -Wl,-rpath,'$ORIGIN' -Wl,--version-script,"$here/exports.map" \
        -o "$out/libcublas.so" "$here/cublas.cpp" \
        -L"$out" -Wl,--no-as-needed -lcublasLt -Wl,--as-needed -ldl -lpthread
fi

if [ "${2:-}" = "--test" ]; then
    # Two builds of the test: one exporting stand-ins for the driver's cuLaunchHostFunc,
    # cuMemAlloc_v2, ... (found by the library through dlsym, so GEMMs are queued and run at
    # synchronize), one without (the library then runs GEMMs synchronously).
    common=(-std=c++17 -O2 -g -Wall -Wextra -I"$here" "$here/test_cublas.cpp"
        -L"$out" -lcublas -Wl,-rpath,"$out" -ldl -lpthread)
    "$cxx" -rdynamic -DWITH_DRIVER_STUBS=1 -o "$out/test_cublas_async" "${common[@]}"
    "$cxx" -DWITH_DRIVER_STUBS=0 -o "$out/test_cublas_sync" "${common[@]}"
    "$out/test_cublas_async"
    "$out/test_cublas_sync"
fi
