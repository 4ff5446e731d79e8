// `where(cond, a, b)` with broadcasting (src/ops/where_cond).
//
// where_<dtype>(out, cond, a, b, Strided<3> layout, n)   out[i] = cond[i] ? a[i] : b[i]
//
// Operand 0 of the layout is `cond`, 1 is `a`, 2 is `b`; `out` is contiguous.
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void where_impl(T* __restrict__ out, const bool* __restrict__ cond, const T* __restrict__ a,
                                           const T* __restrict__ b, const Strided<3>& L, u64 n) {
    const bool run = is_contiguous_run(L);
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        u64 off[3];
        if (run) {
            off[0] = i;
            off[1] = i;
            off[2] = i;
        } else {
            strided_offsets(L, i, off);
        }
        out[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
    }
}

#define WHERE(T, SUFFIX)                                                                              \
    extern "C" __global__ void where_##SUFFIX(T* out, const bool* cond, const T* a, const T* b,       \
                                             Strided<3> L, u64 n) {                                   \
        where_impl(out, cond, a, b, L, n);                                                            \
    }

WHERE(float, f32)
WHERE(double, f64)
WHERE(i64, i64)
WHERE(bool, bool)
WHERE(f16_t, f16)
WHERE(bf16_t, bf16)
