// Reductions over dimensions (src/ops/reduce): sum, mean, max, min, argmax, argmin.
//
// The input is seen as [outputs, reduced]: `ReduceLayout` gives the (merged) kept dims and
// reduced dims with their strides, so any choice of dims on any view works without a copy.
// Three kernels per op, picked by the host:
//
// reduce_rows_<op>_<dtype>   one block per output (grid-stride), threads stride over the
//                            reduced elements; used when those are contiguous, or for one big
//                            reduction. gridDim.y > 1 splits the reduced range into chunks whose
//                            results go to `partial[o * gridDim.y + chunk]`.
// reduce_cols_<op>_<dtype>   one thread per output, looping over the reduced elements; used when
//                            neighbouring outputs are neighbours in memory (sum over dim 0).
//                            gridDim.y splits as above.
// reduce_finish_<op>_<dtype> one thread per output, combining `split` partial results.
//
// argmax/argmin use the same three shapes with (value, index) pairs: the first index of the
// best value wins, and the first NaN beats everything (as on the CPU).
// Mean is the sum divided by the count at the end (`divide`). The 16-bit floats accumulate in
// f32 (partials too) and round once, when the output is written.
#include "common.cuh"

struct ReduceLayout {
    u32 kept_rank;
    u32 red_rank;
    u32 small;
    u32 pad;
    u64 kept_shape[DEVTYPE_MAX_DIMS];
    u64 kept_strides[DEVTYPE_MAX_DIMS];
    u64 red_shape[DEVTYPE_MAX_DIMS];
    u64 red_strides[DEVTYPE_MAX_DIMS];
};

__device__ __forceinline__ u64 dims_offset(u32 rank, const u64 (&shape)[DEVTYPE_MAX_DIMS],
                                           const u64 (&strides)[DEVTYPE_MAX_DIMS], u64 i, u32 small) {
    if (rank == 0) return 0;
    if (small) {
        u32 r = (u32)i;
        u32 off = 0;
#pragma unroll
        for (int d = DEVTYPE_MAX_DIMS - 1; d >= 1; --d) {
            if (d < (int)rank) {
                const u32 size = (u32)shape[d];
                const u32 q = r / size;
                off += (r - q * size) * (u32)strides[d];
                r = q;
            }
        }
        return (u64)(off + r * (u32)strides[0]);
    }
    u64 r = i;
    u64 off = 0;
#pragma unroll
    for (int d = DEVTYPE_MAX_DIMS - 1; d >= 1; --d) {
        if (d < (int)rank) {
            const u64 size = shape[d];
            const u64 q = r / size;
            off += (r - q * size) * strides[d];
            r = q;
        }
    }
    return off + r * strides[0];
}

__device__ __forceinline__ u64 kept_offset(const ReduceLayout& L, u64 o) {
    return dims_offset(L.kept_rank, L.kept_shape, L.kept_strides, o, L.small);
}
__device__ __forceinline__ u64 red_offset(const ReduceLayout& L, u64 r) {
    return dims_offset(L.red_rank, L.red_shape, L.red_strides, r, L.small);
}

// ---- sum / mean / max / min ------------------------------------------------------------------

template <typename T> struct SumR {
    static __device__ __forceinline__ T identity() { return (T)0; }
    __device__ __forceinline__ T operator()(T a, T b) const { return Plus<T>()(a, b); }
};
template <typename T> struct MaxR {
    static __device__ __forceinline__ T identity() { return Num<T>::lowest(); }
    __device__ __forceinline__ T operator()(T a, T b) const { return MaxNan<T>()(a, b); }
};
template <typename T> struct MinR {
    static __device__ __forceinline__ T identity() { return Num<T>::highest(); }
    __device__ __forceinline__ T operator()(T a, T b) const { return MinNan<T>()(a, b); }
};

template <typename T>
__device__ __forceinline__ T finish_value(T acc, u64 reduced, u32 divide) {
    return divide ? acc / (T)reduced : acc;
}

// `T` is the stored type, `A = Acc<T>::type` the one the reduction runs in (f32 for the 16-bit
// floats): partial results are kept in `A`, and the output is rounded to `T` once.
template <typename T, typename R, typename A = typename Acc<T>::type>
__device__ __forceinline__ void rows_impl(T* out, A* partial, const T* __restrict__ in, const ReduceLayout& L,
                                          u64 outputs, u64 reduced, u64 chunk, u32 divide, A* shared) {
    const u64 split = gridDim.y;
    const u64 s = blockIdx.y;
    const u64 r0 = s * chunk;
    const u64 r1 = r0 + chunk < reduced ? r0 + chunk : reduced;
    for (u64 o = blockIdx.x; o < outputs; o += gridDim.x) {
        const u64 base = kept_offset(L, o);
        A acc = R::identity();
        for (u64 r = r0 + threadIdx.x; r < r1; r += blockDim.x) acc = R()(acc, up(in[base + red_offset(L, r)]));
        acc = block_all_reduce(acc, R(), shared);
        if (threadIdx.x == 0) {
            if (split == 1) {
                out[o] = down<T>(finish_value(acc, reduced, divide));
            } else {
                partial[o * split + s] = acc;
            }
        }
    }
}

template <typename T, typename R, typename A = typename Acc<T>::type>
__device__ __forceinline__ void cols_impl(T* out, A* partial, const T* __restrict__ in, const ReduceLayout& L,
                                          u64 outputs, u64 reduced, u64 chunk, u32 divide) {
    const u64 split = gridDim.y;
    const u64 s = blockIdx.y;
    const u64 r0 = s * chunk;
    const u64 r1 = r0 + chunk < reduced ? r0 + chunk : reduced;
    for (u64 o = global_thread(); o < outputs; o += global_threads()) {
        const u64 base = kept_offset(L, o);
        A acc = R::identity();
        for (u64 r = r0; r < r1; ++r) acc = R()(acc, up(in[base + red_offset(L, r)]));
        if (split == 1) {
            out[o] = down<T>(finish_value(acc, reduced, divide));
        } else {
            partial[o * split + s] = acc;
        }
    }
}

template <typename T, typename R, typename A = typename Acc<T>::type>
__device__ __forceinline__ void finish_impl(T* out, const A* partial, u64 outputs, u64 split, u64 reduced, u32 divide) {
    for (u64 o = global_thread(); o < outputs; o += global_threads()) {
        A acc = R::identity();
        for (u64 s = 0; s < split; ++s) acc = R()(acc, partial[o * split + s]);
        out[o] = down<T>(finish_value(acc, reduced, divide));
    }
}

// `partial` has the accumulator type `A` (f32 for the 16-bit floats).
#define REDUCE(NAME, R, T, SUFFIX)                                                                      \
    extern "C" __global__ void reduce_rows_##NAME##_##SUFFIX(T* out, Acc<T>::type* partial, const T* in, \
                                                            ReduceLayout L, u64 outputs, u64 reduced,   \
                                                            u64 chunk, u32 divide) {                    \
        __shared__ Acc<T>::type shared[32];                                                             \
        rows_impl<T, R<Acc<T>::type> >(out, partial, in, L, outputs, reduced, chunk, divide, shared);   \
    }                                                                                                   \
    extern "C" __global__ void reduce_cols_##NAME##_##SUFFIX(T* out, Acc<T>::type* partial, const T* in, \
                                                            ReduceLayout L, u64 outputs, u64 reduced,   \
                                                            u64 chunk, u32 divide) {                    \
        cols_impl<T, R<Acc<T>::type> >(out, partial, in, L, outputs, reduced, chunk, divide);           \
    }                                                                                                   \
    extern "C" __global__ void reduce_finish_##NAME##_##SUFFIX(T* out, const Acc<T>::type* partial,     \
                                                              u64 outputs, u64 split, u64 reduced,      \
                                                              u32 divide) {                             \
        finish_impl<T, R<Acc<T>::type> >(out, partial, outputs, split, reduced, divide);                \
    }

#define REDUCE_ALL(NAME, R)        \
    REDUCE(NAME, R, float, f32)    \
    REDUCE(NAME, R, double, f64)   \
    REDUCE(NAME, R, i64, i64)      \
    REDUCE(NAME, R, f16_t, f16)    \
    REDUCE(NAME, R, bf16_t, bf16)

REDUCE_ALL(sum, SumR)
REDUCE_ALL(max, MaxR)
REDUCE_ALL(min, MinR)

// ---- argmax / argmin -------------------------------------------------------------------------

// True when candidate (bv, bi) beats (av, ai). An index below 0 marks "no element yet".
template <typename T, bool MAX>
__device__ __forceinline__ bool arg_beats(T av, i64 ai, T bv, i64 bi) {
    if (bi < 0) return false;
    if (ai < 0) return true;
    const bool an = Num<T>::is_nan(av);
    const bool bn = Num<T>::is_nan(bv);
    if (an || bn) return (an && bn) ? bi < ai : bn;
    if (MAX ? bv > av : bv < av) return true;
    return bv == av && bi < ai;
}

template <typename T, bool MAX>
__device__ __forceinline__ void arg_push(T& v, i64& i, T bv, i64 bi) {
    if (arg_beats<T, MAX>(v, i, bv, bi)) {
        v = bv;
        i = bi;
    }
}

template <typename T, bool MAX>
__device__ __forceinline__ void arg_block_reduce(T& v, i64& i, T* sv, i64* si) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const T ov = __shfl_xor_sync(FULL_MASK, v, o);
        const i64 oi = __shfl_xor_sync(FULL_MASK, i, o);
        arg_push<T, MAX>(v, i, ov, oi);
    }
    const u32 warps = blockDim.x >> 5;
    if (warps == 1) return;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) {
        sv[threadIdx.x >> 5] = v;
        si[threadIdx.x >> 5] = i;
    }
    __syncthreads();
    v = sv[0];
    i = si[0];
    for (u32 w = 1; w < warps; ++w) arg_push<T, MAX>(v, i, sv[w], si[w]);
}

// As the reductions above, the values are compared in `A` (exact for the 16-bit floats), and
// the partial values have that type.
template <typename T, bool MAX, typename A = typename Acc<T>::type>
__device__ __forceinline__ void arg_rows_impl(i64* out, A* pv, i64* pi, const T* __restrict__ in, const ReduceLayout& L,
                                              u64 outputs, u64 reduced, u64 chunk, A* sv, i64* si) {
    const u64 split = gridDim.y;
    const u64 s = blockIdx.y;
    const u64 r0 = s * chunk;
    const u64 r1 = r0 + chunk < reduced ? r0 + chunk : reduced;
    for (u64 o = blockIdx.x; o < outputs; o += gridDim.x) {
        const u64 base = kept_offset(L, o);
        A v = (A)0;
        i64 i = -1;
        for (u64 r = r0 + threadIdx.x; r < r1; r += blockDim.x) arg_push<A, MAX>(v, i, up(in[base + red_offset(L, r)]), (i64)r);
        arg_block_reduce<A, MAX>(v, i, sv, si);
        if (threadIdx.x == 0) {
            if (split == 1) {
                out[o] = i < 0 ? 0 : i;
            } else {
                pv[o * split + s] = v;
                pi[o * split + s] = i;
            }
        }
    }
}

template <typename T, bool MAX, typename A = typename Acc<T>::type>
__device__ __forceinline__ void arg_cols_impl(i64* out, A* pv, i64* pi, const T* __restrict__ in, const ReduceLayout& L,
                                              u64 outputs, u64 reduced, u64 chunk) {
    const u64 split = gridDim.y;
    const u64 s = blockIdx.y;
    const u64 r0 = s * chunk;
    const u64 r1 = r0 + chunk < reduced ? r0 + chunk : reduced;
    for (u64 o = global_thread(); o < outputs; o += global_threads()) {
        const u64 base = kept_offset(L, o);
        A v = (A)0;
        i64 i = -1;
        for (u64 r = r0; r < r1; ++r) arg_push<A, MAX>(v, i, up(in[base + red_offset(L, r)]), (i64)r);
        if (split == 1) {
            out[o] = i < 0 ? 0 : i;
        } else {
            pv[o * split + s] = v;
            pi[o * split + s] = i;
        }
    }
}

template <typename T, bool MAX>
__device__ __forceinline__ void arg_finish_impl(i64* out, const T* pv, const i64* pi, u64 outputs, u64 split) {
    for (u64 o = global_thread(); o < outputs; o += global_threads()) {
        T v = (T)0;
        i64 i = -1;
        for (u64 s = 0; s < split; ++s) arg_push<T, MAX>(v, i, pv[o * split + s], pi[o * split + s]);
        out[o] = i < 0 ? 0 : i;
    }
}

// `pv` has the accumulator type (f32 for the 16-bit floats); the finish kernel combines those.
#define ARG(NAME, MAX, T, SUFFIX)                                                                       \
    extern "C" __global__ void argreduce_rows_##NAME##_##SUFFIX(i64* out, Acc<T>::type* pv, i64* pi,     \
                                                               const T* in, ReduceLayout L, u64 outputs, \
                                                               u64 reduced, u64 chunk) {                 \
        __shared__ Acc<T>::type sv[32];                                                                 \
        __shared__ i64 si[32];                                                                          \
        arg_rows_impl<T, MAX>(out, pv, pi, in, L, outputs, reduced, chunk, sv, si);                     \
    }                                                                                                   \
    extern "C" __global__ void argreduce_cols_##NAME##_##SUFFIX(i64* out, Acc<T>::type* pv, i64* pi,     \
                                                               const T* in, ReduceLayout L, u64 outputs, \
                                                               u64 reduced, u64 chunk) {                 \
        arg_cols_impl<T, MAX>(out, pv, pi, in, L, outputs, reduced, chunk);                             \
    }                                                                                                   \
    extern "C" __global__ void argreduce_finish_##NAME##_##SUFFIX(i64* out, const Acc<T>::type* pv,      \
                                                                 const i64* pi, u64 outputs, u64 split) { \
        arg_finish_impl<Acc<T>::type, MAX>(out, pv, pi, outputs, split);                                \
    }

#define ARG_ALL(NAME, MAX)        \
    ARG(NAME, MAX, float, f32)    \
    ARG(NAME, MAX, double, f64)   \
    ARG(NAME, MAX, i64, i64)      \
    ARG(NAME, MAX, f16_t, f16)    \
    ARG(NAME, MAX, bf16_t, bf16)

ARG_ALL(max, true)
ARG_ALL(min, false)
