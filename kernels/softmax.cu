// Softmax and log-softmax along the last dimension of a contiguous [rows, cols] tensor
// (src/ops/softmax).
//
// softmax_<dtype>(out, in, rows, cols, log)
//
// One block per row (grid-stride over rows): the block finds the row's maximum (NaN
// propagates), sums exp(x - max), then writes exp(x - max) / sum, or x - max - log(sum).
// Same arithmetic as the CPU kernel: a maximum of -inf (a row of -inf) is replaced by 0.
#include "common.cuh"

// `T` is the stored type, `A = Acc<T>::type` the one the row is computed in (f32 for the 16-bit
// floats, each output rounded once).
template <typename T, typename A = typename Acc<T>::type>
__device__ __forceinline__ void softmax_impl(T* __restrict__ out, const T* __restrict__ in, u64 rows, u64 cols,
                                             u32 log_softmax, A* shared) {
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* x = in + row * cols;
        T* y = out + row * cols;
        A m = Num<A>::lowest();
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) m = MaxNan<A>()(m, up(x[c]));
        m = block_all_reduce(m, MaxNan<A>(), shared);
        if (m == Num<A>::lowest()) m = (A)0;
        A s = (A)0;
        for (u64 c = threadIdx.x; c < cols; c += blockDim.x) s += Num<A>::exp(up(x[c]) - m);
        s = block_all_reduce(s, Plus<A>(), shared);
        if (log_softmax) {
            const A lse = Num<A>::log(s);
            for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[c] = down<T>(up(x[c]) - m - lse);
        } else {
            const A inv = (A)1 / s;
            for (u64 c = threadIdx.x; c < cols; c += blockDim.x) y[c] = down<T>(Num<A>::exp(up(x[c]) - m) * inv);
        }
    }
}

#define SOFTMAX(T, SUFFIX)                                                                              \
    extern "C" __global__ void softmax_##SUFFIX(T* out, const T* in, u64 rows, u64 cols, u32 log_softmax) { \
        __shared__ Acc<T>::type shared[32];                                                             \
        softmax_impl(out, in, rows, cols, log_softmax, shared);                                         \
    }

SOFTMAX(float, f32)
SOFTMAX(double, f64)
SOFTMAX(f16_t, f16)
SOFTMAX(bf16_t, bf16)
