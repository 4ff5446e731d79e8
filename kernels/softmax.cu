// Softmax and log-softmax along the last dimension of a contiguous [rows, cols] tensor
// (src/ops/softmax).
//
// softmax_<dtype>(out, in, rows, cols, log)
//
// One block per row (grid-stride over rows): the block finds the row's maximum (NaN
// propagates), sums exp(x - max), then writes exp(x - max) / sum, or x - max - log(sum).
// Same arithmetic as the CPU kernel: a maximum of -inf (a row of -inf) is replaced by 0.
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void softmax_impl(T* __restrict__ out, const T* __restrict__ in, u64 rows, u64 cols,
                                             u32 log_softmax, T* shared) {
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* x = in + row * cols;
        T* y = out + row * cols;
        T m = Num<T>::lowest();
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) m = MaxNan<T>()(m, x[c]);
        m = block_all_reduce(m, MaxNan<T>(), shared);
        if (m == Num<T>::lowest()) m = (T)0;
        T s = (T)0;
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += Num<T>::exp(x[c] - m);
        s = block_all_reduce(s, Plus<T>(), shared);
        if (log_softmax) {
            const T lse = Num<T>::log(s);
            for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[c] = x[c] - m - lse;
        } else {
            const T inv = (T)1 / s;
            for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[c] = Num<T>::exp(x[c] - m) * inv;
        }
    }
}

#define SOFTMAX(T, SUFFIX)                                                                              \
    extern "C" __global__ void softmax_##SUFFIX(T* out, const T* in, u64 rows, u64 cols, u32 log_softmax) { \
        __shared__ T shared[32];                                                                        \
        softmax_impl(out, in, rows, cols, log_softmax, shared);                                         \
    }

SOFTMAX(float, f32)
SOFTMAX(double, f64)
