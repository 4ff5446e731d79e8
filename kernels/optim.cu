// Fused optimizer updates, in place on the parameter and its state (src/ops/optim). One thread
// per element (grid-stride); every buffer is contiguous. The arithmetic is the CPU kernel's,
// operation for operation (the hyper-parameters arrive already converted to the element
// type), so both devices take the same steps.
//
// sgd_<dtype>(p, g, b, n, lr, wd, momentum, keep, nesterov, first, has_momentum)
//     d = g + wd * p; with momentum: b = first ? d : momentum * b + keep * d,
//     d = nesterov ? d + momentum * b : b; then p = p - lr * d.
// adam_<dtype>(p, g, m, v, n, b1, b2, one_b1, one_b2, eps, l2, decay, step_size, inv_sqrt_bc2)
//     g = g + l2 * p; m = b1 * m + one_b1 * g; v = b2 * v + one_b2 * g * g;
//     p = p * decay - step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps).
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void sgd_impl(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ b, u64 n, T lr,
                                         T wd, T momentum, T keep, u32 nesterov, u32 first, u32 has_momentum) {
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        const T pi = p[i];
        T d = g[i] + wd * pi;
        if (has_momentum) {
            const T bi = first ? d : momentum * b[i] + keep * d;
            b[i] = bi;
            d = nesterov ? d + momentum * bi : bi;
        }
        p[i] = pi - lr * d;
    }
}

template <typename T> __device__ __forceinline__ T square_root(T x);
template <> __device__ __forceinline__ float square_root<float>(float x) { return sqrtf(x); }
template <> __device__ __forceinline__ double square_root<double>(double x) { return sqrt(x); }

template <typename T>
__device__ __forceinline__ void adam_impl(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                                          T* __restrict__ v, u64 n, T b1, T b2, T one_b1, T one_b2, T eps, T l2,
                                          T decay, T step_size, T inv_sqrt_bc2) {
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        const T pi = p[i];
        const T gi = g[i] + l2 * pi;
        const T mi = b1 * m[i] + one_b1 * gi;
        const T vi = b2 * v[i] + one_b2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const T denom = square_root(vi) * inv_sqrt_bc2 + eps;
        p[i] = pi * decay - step_size * mi / denom;
    }
}

#define OPTIM(T, SUFFIX)                                                                               \
    extern "C" __global__ void sgd_##SUFFIX(T* p, const T* g, T* b, u64 n, T lr, T wd, T momentum, T keep, \
                                           u32 nesterov, u32 first, u32 has_momentum) {                \
        sgd_impl(p, g, b, n, lr, wd, momentum, keep, nesterov, first, has_momentum);                   \
    }                                                                                                  \
    extern "C" __global__ void adam_##SUFFIX(T* p, const T* g, T* m, T* v, u64 n, T b1, T b2, T one_b1,  \
                                            T one_b2, T eps, T l2, T decay, T step_size,               \
                                            T inv_sqrt_bc2) {                                          \
        adam_impl(p, g, m, v, n, b1, b2, one_b1, one_b2, eps, l2, decay, step_size, inv_sqrt_bc2);     \
    }

OPTIM(float, f32)
OPTIM(double, f64)
