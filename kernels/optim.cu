// Fused optimizer updates, in place on the parameter and its state (src/ops/optim). One thread
// per element (grid-stride); every buffer is contiguous. The arithmetic is the CPU kernel's,
// operation for operation (the hyper-parameters arrive already converted to the compute type
// A = Acc<T>::type: f32 for f16/bf16, T otherwise), so both devices take the same steps. Half
// parameters and state are widened on load, updated in f32 and rounded once on store, as
// PyTorch's fused optimizers do (eps = 1e-8 would be zero in f16, beta2 = 0.999 one in bf16).
//
// sgd_<dtype>(p, g, b, skip, n, lr, wd, momentum, keep, nesterov, first, has_momentum)
//     d = g + wd * p; with momentum: b = first ? d : momentum * b + keep * d,
//     d = nesterov ? d + momentum * b : b; then p = p - lr * d.
// adam_<dtype>(p, g, m, v, skip, n, b1, b2, one_b1, one_b2, eps, l2, decay, step_size, inv_sqrt_bc2)
//     g = g + l2 * p; m = b1 * m + one_b1 * g; v = b2 * v + one_b2 * g * g;
//     p = p * decay - step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps).
// adam_dev_<dtype>(p, g, m, v, skip, corr, n, b1, b2, one_b1, one_b2, eps, l2, decay)
//     the same, with step_size = corr[0] and inv_sqrt_bc2 = corr[1] read from device memory:
//     the bias corrections of a step count kept on the device (steps a GradScaler may skip).
//
// `skip` is null or one bool on the device (a GradScaler's found-inf flag): where it is true
// the kernel writes nothing, so a skipped step costs one read instead of a snapshot and a
// `where` per buffer, and the host never waits for the flag (PyTorch's fused optimizers take
// `found_inf` the same way).
#include "common.cuh"

__device__ __forceinline__ bool skipped(const bool* skip) { return skip != nullptr && *skip; }

template <typename T, typename A = typename Acc<T>::type>
__device__ __forceinline__ void sgd_impl(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ b,
                                         const bool* skip, u64 n, A lr, A wd, A momentum, A keep, u32 nesterov,
                                         u32 first, u32 has_momentum) {
    if (skipped(skip)) return;
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        const A pi = up(p[i]);
        A d = up(g[i]) + wd * pi;
        if (has_momentum) {
            const A bi = first ? d : momentum * up(b[i]) + keep * d;
            b[i] = down<T>(bi);
            d = nesterov ? d + momentum * bi : bi;
        }
        p[i] = down<T>(pi - lr * d);
    }
}

template <typename T> __device__ __forceinline__ T square_root(T x);
template <> __device__ __forceinline__ float square_root<float>(float x) { return sqrtf(x); }
template <> __device__ __forceinline__ double square_root<double>(double x) { return sqrt(x); }

template <typename T, typename A = typename Acc<T>::type>
__device__ __forceinline__ void adam_impl(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                                          T* __restrict__ v, const bool* skip, u64 n, A b1, A b2, A one_b1,
                                          A one_b2, A eps, A l2, A decay, A step_size, A inv_sqrt_bc2) {
    if (skipped(skip)) return;
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        const A pi = up(p[i]);
        const A gi = up(g[i]) + l2 * pi;
        const A mi = b1 * up(m[i]) + one_b1 * gi;
        const A vi = b2 * up(v[i]) + one_b2 * gi * gi;
        m[i] = down<T>(mi);
        v[i] = down<T>(vi);
        const A denom = square_root(vi) * inv_sqrt_bc2 + eps;
        p[i] = down<T>(pi * decay - step_size * mi / denom);
    }
}

// T: the stored type; A: the compute type, which the hyper-parameters arrive in.
#define OPTIM(T, A, SUFFIX)                                                                            \
    extern "C" __global__ void sgd_##SUFFIX(T* p, const T* g, T* b, const bool* skip, u64 n, A lr, A wd,  \
                                           A momentum, A keep, u32 nesterov, u32 first,                \
                                           u32 has_momentum) {                                         \
        sgd_impl<T, A>(p, g, b, skip, n, lr, wd, momentum, keep, nesterov, first, has_momentum);       \
    }                                                                                                  \
    extern "C" __global__ void adam_##SUFFIX(T* p, const T* g, T* m, T* v, const bool* skip, u64 n, A b1, \
                                            A b2, A one_b1, A one_b2, A eps, A l2, A decay,            \
                                            A step_size, A inv_sqrt_bc2) {                             \
        adam_impl<T, A>(p, g, m, v, skip, n, b1, b2, one_b1, one_b2, eps, l2, decay, step_size,        \
                        inv_sqrt_bc2);                                                                 \
    }                                                                                                  \
    extern "C" __global__ void adam_dev_##SUFFIX(T* p, const T* g, T* m, T* v, const bool* skip,        \
                                                const A* corr, u64 n, A b1, A b2, A one_b1, A one_b2,  \
                                                A eps, A l2, A decay) {                                \
        if (skipped(skip)) return;                                                                     \
        adam_impl<T, A>(p, g, m, v, nullptr, n, b1, b2, one_b1, one_b2, eps, l2, decay, corr[0],       \
                        corr[1]);                                                                      \
    }

OPTIM(float, float, f32)
OPTIM(double, double, f64)
OPTIM(f16_t, float, f16)
OPTIM(bf16_t, float, bf16)
