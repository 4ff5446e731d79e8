// The CUDA dialect of kernels/*.cu as host C++, for the simulated device (see sim/README.md).
//
// The build compiles every kernel file with `g++ -include devtype_sim.cuh -DDEVTYPE_SIM`. Each
// GPU thread of a launch runs as a fiber (sim/src/fiber.cpp); the built-in variables read the
// running fiber's coordinates, and `__syncthreads` and the warp intrinsics switch fibers, so
// they keep their real semantics: a thread waits at a barrier until every live thread of its
// block (or warp) has arrived.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

// glibc's math.h declares `int finite(double)`; kernels may define their own.
#define finite devtype_sim_finite

namespace devtype_sim {

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
};

// The coordinates of the GPU thread the current fiber runs.
struct ThreadCoords {
    uint3 thread_idx;
    uint3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
};

// Set by the block runner before it resumes a fiber.
extern thread_local const ThreadCoords* current;

// Block-wide barrier.
void syncthreads();
// Warp-wide barrier (the live lanes of the caller's warp).
void syncwarp();
// The caller's lane in its warp.
unsigned lane();
// Every lane of the warp publishes `bytes` bytes at `value`; then each lane reads into `out`
// the value of lane `src` (its own when `src` is outside the warp or exited).
void warp_exchange(const void* value, void* out, size_t bytes, unsigned src);
// A 32-bit mask of the lanes whose `pred` is true.
unsigned warp_ballot(bool pred);

template <typename T>
inline T shfl_from(T v, unsigned src) {
    static_assert(sizeof(T) <= 16, "shuffle of a value wider than 16 bytes");
    T out;
    warp_exchange(&v, &out, sizeof(T), src);
    return out;
}

// IEEE binary16 conversions, round to nearest even (the PTX `cvt.rn.f16.f32` and
// `cvt.f32.f16` that common.cuh uses on a GPU).
inline float half_bits_to_float(unsigned short bits) {
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return (float)h;
}
inline unsigned short float_to_half_bits(float f) {
    _Float16 h = (_Float16)f;
    unsigned short bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

template <typename T>
inline T atomic_add(T* address, T value) {
    T old = __atomic_load_n(address, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(address, &old, (T)(old + value), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
inline float atomic_add(float* address, float value) {
    uint32_t* p = reinterpret_cast<uint32_t*>(address);
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        float f;
        std::memcpy(&f, &old, 4);
        f += value;
        uint32_t next;
        std::memcpy(&next, &f, 4);
        if (__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            std::memcpy(&f, &old, 4);
            return f;
        }
    }
}
inline double atomic_add(double* address, double value) {
    uint64_t* p = reinterpret_cast<uint64_t*>(address);
    uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        double f;
        std::memcpy(&f, &old, 8);
        f += value;
        uint64_t next;
        std::memcpy(&next, &f, 8);
        if (__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            std::memcpy(&f, &old, 8);
            return f;
        }
    }
}
template <typename T, typename F>
inline T atomic_update(T* address, F f) {
    T old = __atomic_load_n(address, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(address, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

}  // namespace devtype_sim

// ---- qualifiers ------------------------------------------------------------------------------
// `__global__` carries a marker that sim/gen_trampolines.py finds in the preprocessed source.
#define __global__ __attribute__((used)) __attribute__((noinline))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
// Static shared memory: one copy per host thread, and a block runs all its fibers on one host
// thread, so every thread of the block sees the same array.
#define __shared__ static thread_local

// ---- built-in variables ----------------------------------------------------------------------
#define threadIdx (devtype_sim::current->thread_idx)
#define blockIdx (devtype_sim::current->block_idx)
#define blockDim (devtype_sim::current->block_dim)
#define gridDim (devtype_sim::current->grid_dim)
#define warpSize 32

// ---- synchronisation and warp intrinsics -------------------------------------------------------
inline void __syncthreads() { devtype_sim::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { devtype_sim::syncwarp(); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <typename T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const unsigned lane = devtype_sim::lane();
    return devtype_sim::shfl_from(v, (lane & ~(unsigned)(width - 1)) + ((unsigned)src & (width - 1)));
}
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const unsigned lane = devtype_sim::lane();
    unsigned src = lane ^ (unsigned)mask;
    if ((src & ~(unsigned)(width - 1)) != (lane & ~(unsigned)(width - 1))) src = lane;
    return devtype_sim::shfl_from(v, src);
}
template <typename T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    const unsigned lane = devtype_sim::lane();
    const unsigned in = lane & (unsigned)(width - 1);
    return devtype_sim::shfl_from(v, in + delta < (unsigned)width ? lane + delta : lane);
}
template <typename T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    const unsigned lane = devtype_sim::lane();
    const unsigned in = lane & (unsigned)(width - 1);
    return devtype_sim::shfl_from(v, in >= delta ? lane - delta : lane);
}
inline unsigned __ballot_sync(unsigned, int pred) { return devtype_sim::warp_ballot(pred != 0); }
inline int __any_sync(unsigned, int pred) { return devtype_sim::warp_ballot(pred != 0) != 0; }
inline int __all_sync(unsigned, int pred) { return devtype_sim::warp_ballot(pred == 0) == 0; }

// ---- atomics ---------------------------------------------------------------------------------
template <typename T>
inline T atomicAdd(T* address, T value) { return devtype_sim::atomic_add(address, value); }
template <typename T>
inline T atomicMax(T* address, T value) {
    return devtype_sim::atomic_update(address, [value](T old) { return old < value ? value : old; });
}
template <typename T>
inline T atomicMin(T* address, T value) {
    return devtype_sim::atomic_update(address, [value](T old) { return value < old ? value : old; });
}
template <typename T>
inline T atomicExch(T* address, T value) { return __atomic_exchange_n(address, value, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicOr(T* address, T value) { return __atomic_fetch_or(address, value, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicAnd(T* address, T value) { return __atomic_fetch_and(address, value, __ATOMIC_RELAXED); }
template <typename T>
inline T atomicCAS(T* address, T compare, T value) {
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}

// ---- bit casts and math intrinsics -------------------------------------------------------------
template <typename To, typename From>
inline To devtype_sim_bits(From f) {
    static_assert(sizeof(To) == sizeof(From), "bit cast between sizes");
    To t;
    std::memcpy(&t, &f, sizeof(To));
    return t;
}
inline float __int_as_float(int x) { return devtype_sim_bits<float>(x); }
inline float __uint_as_float(unsigned x) { return devtype_sim_bits<float>(x); }
inline int __float_as_int(float x) { return devtype_sim_bits<int>(x); }
inline unsigned __float_as_uint(float x) { return devtype_sim_bits<unsigned>(x); }
inline double __longlong_as_double(long long x) { return devtype_sim_bits<double>(x); }
inline long long __double_as_longlong(double x) { return devtype_sim_bits<long long>(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T>
inline T min(T a, T b) { return b < a ? b : a; }
template <typename T>
inline T max(T a, T b) { return a < b ? b : a; }
