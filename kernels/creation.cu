// Creation on the device (src/ops/creation): nothing passes through the host.
//
// fill_<dtype>(out, n, value)              every element `value`
// range_<dtype>(out, n, start, step)       from_f64(start + i * step)
// uniform_<dtype>(out, n, seed, offset, state)   from_f64(uniform(seed, offset + i))
// normal_<dtype>(out, n, seed, offset, state)    from_f64(normal(seed, ceil(offset / 2) + i))
// set_rng_state(state, n, seed, offset)          state[0] = seed, state[1] = offset
//
// `state` is null for an eager draw. A draw recorded into a CUDA graph passes the address of
// the graph's `[seed, offset]` instead, which `set_rng_state` writes before each replay (as
// PyTorch's philox seed/offset for graphs): the kernel reads the seed there and adds the
// offset there to its own (its position among the graph's draws), so each replay draws fresh
// numbers, the very positions an eager run of the step would take.
//
// The random numbers are src/random.rs, operation for operation: SplitMix64 of (seed, position)
// gives the same 64 bits on every device, so `uniform` is bit-identical to the CPU. `normal`
// goes through log, sqrt and cos in f64, whose CUDA versions may differ from the host's libm
// in the last bit of the f64 (invisible after rounding to f32 in all but rare cases).
// Kernels are compiled with --fmad=false so no multiply-add is contracted differently from
// the CPU.
#include "common.cuh"

__device__ __forceinline__ u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 random_bits(u64 seed, u64 position) {
    return mix(seed ^ mix(position + 0x9E3779B97F4A7C15ULL));
}

__device__ __forceinline__ double uniform01(u64 seed, u64 position) {
    return (double)(random_bits(seed, position) >> 11) * (1.0 / 9007199254740992.0);
}

// `uniform01` rounded to f32 could reach 1.0: clamp to the largest f32 below 1, exactly as the
// CPU does (`random::F32_BELOW_ONE`), so `rand` stays in [0, 1) and matches bit for bit.
// The 16-bit floats clamp to their own largest value below 1 (1 - 2^-11 for f16, 1 - 2^-8 for
// bf16), as the CPU does.
template <typename T> __device__ __forceinline__ double below_one(double u) {
    const double top = 1.0 - 5.9604644775390625e-08;  // 1 - 2^-24
    return (sizeof(T) == 4 && u > top) ? top : u;
}
template <> __device__ __forceinline__ double below_one<f16_t>(double u) {
    const double top = 1.0 - 0.00048828125;  // 1 - 2^-11
    return u > top ? top : u;
}
template <> __device__ __forceinline__ double below_one<bf16_t>(double u) {
    const double top = 1.0 - 0.00390625;  // 1 - 2^-8
    return u > top ? top : u;
}

__device__ __forceinline__ double standard_normal(u64 seed, u64 i) {
    const double u1 = 1.0 - uniform01(seed, 2 * i);
    const double u2 = uniform01(seed, 2 * i + 1);
    const double tau = 6.283185307179586;
    return sqrt(-2.0 * log(u1)) * cos(tau * u2);
}

template <typename T>
__device__ __forceinline__ void fill_impl(T* __restrict__ out, u64 n, T value) {
    const u64 start = global_thread();
    const u64 step = global_threads();
    u64 done = 0;
    if (aligned_for_pack(out)) {
        Pack4<T> p;
#pragma unroll
        for (int v = 0; v < 4; ++v) p.v[v] = value;
        Pack4<T>* po = reinterpret_cast<Pack4<T>*>(out);
        const u64 packs = n / 4;
        for (u64 j = start; j < packs; j += step) po[j] = p;
        done = packs * 4;
    }
    for (u64 i = done + start; i < n; i += step) out[i] = value;
}

#define CREATION(T, SUFFIX)                                                                          \
    extern "C" __global__ void fill_##SUFFIX(T* out, u64 n, T value) { fill_impl(out, n, value); }   \
    extern "C" __global__ void range_##SUFFIX(T* out, u64 n, double start, double step) {            \
        for (u64 i = global_thread(); i < n; i += global_threads())                                  \
            out[i] = from_double<T>(start + (double)i * step);                                        \
    }                                                                                                \
    extern "C" __global__ void uniform_##SUFFIX(T* out, u64 n, u64 seed, u64 offset,                 \
                                                const u64* __restrict__ state) {                     \
        if (state != nullptr) {                                                                      \
            seed = state[0];                                                                         \
            offset += state[1];                                                                      \
        }                                                                                            \
        for (u64 i = global_thread(); i < n; i += global_threads())                                  \
            out[i] = from_double<T>(below_one<T>(uniform01(seed, offset + i)));                         \
    }                                                                                                \
    extern "C" __global__ void normal_##SUFFIX(T* out, u64 n, u64 seed, u64 offset,                  \
                                               const u64* __restrict__ state) {                      \
        if (state != nullptr) {                                                                      \
            seed = state[0];                                                                         \
            offset += state[1];                                                                      \
        }                                                                                            \
        const u64 first = offset / 2 + (offset & 1); /* ceil(offset / 2) */                         \
        for (u64 i = global_thread(); i < n; i += global_threads())                                  \
            out[i] = from_double<T>(standard_normal(seed, first + i));                                \
    }

CREATION(float, f32)
CREATION(double, f64)
CREATION(i64, i64)
CREATION(bool, bool)
CREATION(f16_t, f16)
CREATION(bf16_t, bf16)

extern "C" __global__ void set_rng_state(u64* state, u64 n, u64 seed, u64 offset) {
    if (n > 0 && global_thread() == 0) {
        state[0] = seed;
        state[1] = offset;
    }
}
