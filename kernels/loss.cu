// Fused cross-entropy over class indices (src/ops/loss): log-softmax and the negative
// log-likelihood in one pass over each row of the logits.
//
// cross_entropy_rows_<dtype>(loss, wsum, x, target, weight, n, c, ignore_index, has_weight)
//     x is a contiguous [n, c]; one block per row writes
//       loss[row] = w[t] * (logsumexp(x[row]) - x[row, t])   and   wsum[row] = w[t],
//     or 0 and 0 for a row whose target is `ignore_index`.
// cross_entropy_reduce_<dtype>(out, loss, wsum, n, mean)
//     one block: out[0] = sum(loss) / sum(wsum) (mean) or sum(loss).
//
// cross_entropy_total_weight_<dtype>(total, target, weight, n, c, ignore_index, has_weight)
//     one block: total[0] = the sum of w[t] over the rows not ignored (the mean's divisor).
// cross_entropy_backward_<dtype>(out, x, target, weight, grad_out, total, n, c, ignore_index,
//                                has_weight, mode)
//     the gradient with respect to the logits, one block per row:
//     out[row] = softmax(x[row]) * scale, minus scale at the target, with
//     scale = w[t] * grad_out[0] / total (mode 0, mean), w[t] * grad_out[0] (1, sum) or
//     w[t] * grad_out[row] (2, none); zeros for an ignored row.
//
// A target outside [0, c) makes the CPU return `Target t is out of bounds.`; checking that here
// would make the host wait for the GPU, so the kernels never read out of bounds and write NaN
// instead (that row's loss and weight, so a mean or sum is NaN too; in the gradient, the row
// and, through the total weight, every row of a mean).
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void ce_rows_impl(T* __restrict__ loss, T* __restrict__ wsum, const T* __restrict__ x,
                                             const i64* __restrict__ target, const T* __restrict__ weight, u64 n,
                                             u64 c, i64 ignore_index, u32 has_weight, T* shared) {
    for (u64 row = blockIdx.x; row < n; row += gridDim.x) {
        const i64 t = target[row];
        if (t == ignore_index) {
            if (threadIdx.x == 0) {
                loss[row] = (T)0;
                wsum[row] = (T)0;
            }
            continue;
        }
        const T* xr = x + row * c;
        T m = Num<T>::lowest();
        for (u64 j = threadIdx.x; j < c; j += blockDim.x) m = MaxNan<T>()(m, xr[j]);
        m = block_all_reduce(m, MaxNan<T>(), shared);
        T s = (T)0;
        for (u64 j = threadIdx.x; j < c; j += blockDim.x) s += Num<T>::exp(xr[j] - m);
        s = block_all_reduce(s, Plus<T>(), shared);
        if (threadIdx.x == 0) {
            if (t < 0 || (u64)t >= c) {
                loss[row] = Num<T>::nan();
                wsum[row] = Num<T>::nan();
            } else {
                const T lse = m + Num<T>::log(s);
                const T w = has_weight ? weight[t] : (T)1;
                loss[row] = w * (lse - xr[t]);
                wsum[row] = w;
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void ce_reduce_impl(T* out, const T* __restrict__ loss, const T* __restrict__ wsum, u64 n,
                                               u32 mean, T* shared) {
    T s = (T)0;
    T w = (T)0;
    for (u64 i = threadIdx.x; i < n; i += blockDim.x) {
        s += loss[i];
        w += wsum[i];
    }
    s = block_all_reduce(s, Plus<T>(), shared);
    w = block_all_reduce(w, Plus<T>(), shared);
    if (threadIdx.x == 0) out[0] = mean ? s / w : s;
}

template <typename T>
__device__ __forceinline__ void ce_total_weight_impl(T* total, const i64* __restrict__ target, const T* __restrict__ weight,
                                                     u64 n, u64 c, i64 ignore_index, u32 has_weight, T* shared) {
    T w = (T)0;
    for (u64 i = threadIdx.x; i < n; i += blockDim.x) {
        const i64 t = target[i];
        if (t == ignore_index) continue;
        if (t < 0 || (u64)t >= c) {
            w += Num<T>::nan();
        } else {
            w += has_weight ? weight[t] : (T)1;
        }
    }
    w = block_all_reduce(w, Plus<T>(), shared);
    if (threadIdx.x == 0) total[0] = w;
}

template <typename T>
__device__ __forceinline__ void ce_backward_impl(T* __restrict__ out, const T* __restrict__ x, const i64* __restrict__ target,
                                                 const T* __restrict__ weight, const T* __restrict__ grad_out,
                                                 const T* __restrict__ total, u64 n, u64 c, i64 ignore_index,
                                                 u32 has_weight, u32 mode, T* shared) {
    for (u64 row = blockIdx.x; row < n; row += gridDim.x) {
        const i64 t = target[row];
        const T* xr = x + row * c;
        T* yr = out + row * c;
        if (t == ignore_index) {
            for (u64 j = threadIdx.x; j < c; j += blockDim.x) yr[j] = (T)0;
            continue;
        }
        const bool valid = t >= 0 && (u64)t < c;
        const T w = valid ? (has_weight ? weight[t] : (T)1) : Num<T>::nan();
        T scale;
        if (mode == 0) {
            scale = w * grad_out[0] / total[0];
        } else if (mode == 1) {
            scale = w * grad_out[0];
        } else {
            scale = w * grad_out[row];
        }
        T m = Num<T>::lowest();
        for (u64 j = threadIdx.x; j < c; j += blockDim.x) m = MaxNan<T>()(m, xr[j]);
        m = block_all_reduce(m, MaxNan<T>(), shared);
        T s = (T)0;
        for (u64 j = threadIdx.x; j < c; j += blockDim.x) s += Num<T>::exp(xr[j] - m);
        s = block_all_reduce(s, Plus<T>(), shared);
        const T k = scale / s;
        for (u64 j = threadIdx.x; j < c; j += blockDim.x) {
            const T e = Num<T>::exp(xr[j] - m) * k;
            yr[j] = (valid && (i64)j == t) ? e - scale : e;
        }
    }
}

#define LOSS(T, SUFFIX)                                                                                 \
    extern "C" __global__ void cross_entropy_rows_##SUFFIX(T* loss, T* wsum, const T* x, const i64* target, \
                                                          const T* weight, u64 n, u64 c, i64 ignore_index, \
                                                          u32 has_weight) {                             \
        __shared__ T shared[32];                                                                        \
        ce_rows_impl(loss, wsum, x, target, weight, n, c, ignore_index, has_weight, shared);            \
    }                                                                                                   \
    extern "C" __global__ void cross_entropy_reduce_##SUFFIX(T* out, const T* loss, const T* wsum, u64 n,  \
                                                            u32 mean) {                                 \
        __shared__ T shared[32];                                                                        \
        ce_reduce_impl(out, loss, wsum, n, mean, shared);                                               \
    }                                                                                                   \
    extern "C" __global__ void cross_entropy_total_weight_##SUFFIX(T* total, const i64* target,         \
                                                                  const T* weight, u64 n, u64 c,        \
                                                                  i64 ignore_index, u32 has_weight) {   \
        __shared__ T shared[32];                                                                        \
        ce_total_weight_impl(total, target, weight, n, c, ignore_index, has_weight, shared);            \
    }                                                                                                   \
    extern "C" __global__ void cross_entropy_backward_##SUFFIX(                                         \
        T* out, const T* x, const i64* target, const T* weight, const T* grad_out, const T* total, u64 n, \
        u64 c, i64 ignore_index, u32 has_weight, u32 mode) {                                            \
        __shared__ T shared[32];                                                                        \
        ce_backward_impl(out, x, target, weight, grad_out, total, n, c, ignore_index, has_weight, mode, \
                         shared);                                                                       \
    }

LOSS(float, f32)
LOSS(double, f64)
