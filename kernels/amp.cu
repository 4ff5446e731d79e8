// Loss scaling's device ops (src/ops/amp), PyTorch's `_amp_foreach_non_finite_check_and_unscale_`
// and `_amp_update_scale_`: a GradScaler step decides on the device, with no host sync.
//
// amp_unscale_<dtype>(g, inv_scale, found_inf, n)
//     g[i] = g[i] * inv_scale[0], in place (computed in Acc<T>, rounded once); found_inf[0] is
//     set to true where a result is not finite (inf or NaN). Threads only ever write `true`
//     there, so their writes agree. The check is on the stored (unscaled, rounded) value: a
//     gradient that only overflows when unscaled (a scale below 1) is caught too.
// amp_update_scale(scale, growth_tracker, found_inf, n, growth_factor, backoff_factor, growth_interval)
//     one thread (n = 1): after a non-finite step, scale *= backoff_factor and the count
//     restarts; otherwise the count advances, and at growth_interval the scale grows by
//     growth_factor when that stays finite, and the count restarts.
#include "common.cuh"

__device__ __forceinline__ bool finite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
__device__ __forceinline__ bool finite(double x) {
    return ((u64)__double_as_longlong(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

template <typename T, typename A = typename Acc<T>::type>
__device__ __forceinline__ void unscale_impl(T* __restrict__ g, const float* __restrict__ inv_scale,
                                             bool* __restrict__ found_inf, u64 n) {
    const A inv = (A)inv_scale[0];
    bool bad = false;
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        const T out = down<T>(up(g[i]) * inv);
        bad |= !finite(up(out));
        g[i] = out;
    }
    if (bad) *found_inf = true;
}

#define UNSCALE(T, SUFFIX)                                                                            \
    extern "C" __global__ void amp_unscale_##SUFFIX(T* g, const float* inv_scale, bool* found_inf, u64 n) { \
        unscale_impl<T>(g, inv_scale, found_inf, n);                                                  \
    }

UNSCALE(float, f32)
UNSCALE(double, f64)
UNSCALE(f16_t, f16)
UNSCALE(bf16_t, bf16)

extern "C" __global__ void amp_update_scale(float* scale, i64* growth_tracker, const bool* found_inf, u64 n,
                                            float growth_factor, float backoff_factor, i64 growth_interval) {
    if (global_thread() != 0 || n != 1) return;
    if (*found_inf) {
        *scale = *scale * backoff_factor;
        *growth_tracker = 0;
        return;
    }
    const i64 successful = *growth_tracker + 1;
    if (successful >= growth_interval) {
        const float grown = *scale * growth_factor;
        if (finite(grown)) *scale = grown;
        *growth_tracker = 0;
    } else {
        *growth_tracker = successful;
    }
}
