// Copies between layouts and element-type casts (src/ops/copy, src/ops/cat, src/ops/linear).
//
// copy_<dtype>(dst, src, Strided<2> layout, n)       dst[L0(i)] = src[L1(i)]
//     Operand 0 is the destination, operand 1 the source: contiguous copies of views, slabs of
//     `cat`, bias rows broadcast before a GEMM.
// cast_<from>_<to>(dst, src, Strided<1> layout, n)  dst[i] = to(from_f64(to_f64(src[L(i)])))
//     dst contiguous; the conversion is the CPU's `U::from_f64(x.to_f64())` (to f16/bf16: from
//     f64 through f32, rounded to nearest-even).
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void copy_impl(T* __restrict__ dst, const T* __restrict__ src, const Strided<2>& L, u64 n) {
    const u64 start = global_thread();
    const u64 step = global_threads();
    if (is_contiguous_run(L)) {
        u64 done = 0;
        if (aligned_for_pack(dst) && aligned_for_pack(src)) {
            const u64 packs = n / 4;
            const Pack4<T>* ps = reinterpret_cast<const Pack4<T>*>(src);
            Pack4<T>* pd = reinterpret_cast<Pack4<T>*>(dst);
#pragma unroll 4
            for (u64 j = start; j < packs; j += step) pd[j] = ps[j];
            done = packs * 4;
        }
        for (u64 i = done + start; i < n; i += step) dst[i] = src[i];
        return;
    }
    for (u64 i = start; i < n; i += step) {
        u64 off[2];
        strided_offsets(L, i, off);
        dst[off[0]] = src[off[1]];
    }
}

template <typename From, typename To>
__device__ __forceinline__ void cast_impl(To* __restrict__ dst, const From* __restrict__ src, const Strided<1>& L, u64 n) {
    const u64 start = global_thread();
    const u64 step = global_threads();
    const bool run = is_contiguous_run(L);
    for (u64 i = start; i < n; i += step) {
        u64 off[1];
        if (run) {
            off[0] = i;
        } else {
            strided_offsets(L, i, off);
        }
        dst[i] = from_double<To>(to_double<From>(src[off[0]]));
    }
}

#define COPY(T, SUFFIX)                                                                               \
    extern "C" __global__ void copy_##SUFFIX(T* dst, const T* src, Strided<2> L, u64 n) {             \
        copy_impl(dst, src, L, n);                                                                    \
    }

COPY(float, f32)
COPY(double, f64)
COPY(i64, i64)
COPY(bool, bool)
COPY(f16_t, f16)
COPY(bf16_t, bf16)

#define CAST(FROM, FS, TO, TS)                                                                        \
    extern "C" __global__ void cast_##FS##_##TS(TO* dst, const FROM* src, Strided<1> L, u64 n) {       \
        cast_impl<FROM, TO>(dst, src, L, n);                                                          \
    }

#define CAST_FROM(FROM, FS)                                                                           \
    CAST(FROM, FS, float, f32)                                                                        \
    CAST(FROM, FS, double, f64)                                                                       \
    CAST(FROM, FS, i64, i64)                                                                          \
    CAST(FROM, FS, bool, bool)                                                                        \
    CAST(FROM, FS, f16_t, f16)                                                                        \
    CAST(FROM, FS, bf16_t, bf16)

CAST_FROM(float, f32)
CAST_FROM(double, f64)
CAST_FROM(i64, i64)
CAST_FROM(bool, bool)
CAST_FROM(f16_t, f16)
CAST_FROM(bf16_t, bf16)
