// Ops along one dimension that read a whole line (src/ops/sort): cumsum and sort/topk.
//
// The input is contiguous and seen as [outer, n, inner]; a line is the n elements
// x[(o * n + i) * inner + j] for one (o, j).
//
// cumsum_<dtype>(out, x, lines, n, inner, reverse)
//     one thread per line (grid-stride over outer * inner lines), a sequential scan in the
//     accumulation type (f32 for the 16-bit floats, rounded once per output), from the end of
//     the line when `reverse` (the backward rule). Neighbouring threads read neighbouring
//     columns, so the reads coalesce when inner > 1.
// sort_<dtype>(values, indices, x, total, n, inner, k, descending)
//     one thread per input element (grid-stride over outer * n * inner): its rank in its line
//     under the total order (value, NaN above every number; then index), counted against the
//     other n - 1 elements; ranks below k are written. O(n) per element, O(n^2) per line: right
//     for the short lines of topk/sort over features, slow for one long line.
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void cumsum_impl(T* __restrict__ out, const T* __restrict__ x, u64 lines, u64 n, u64 inner,
                                            u32 reverse) {
    typedef typename Acc<T>::type A;
    for (u64 l = global_thread(); l < lines; l += global_threads()) {
        const u64 o = l / inner, j = l % inner;
        const u64 base = o * n * inner + j;
        A acc = (A)0;
        for (u64 s = 0; s < n; ++s) {
            const u64 i = reverse ? n - 1 - s : s;
            acc = acc + up(x[base + i * inner]);
            out[base + i * inner] = down<T>(acc);
        }
    }
}

// a before b in ascending order (NaN last), the indices breaking ties.
template <typename T>
__device__ __forceinline__ bool before(T a, u64 ia, T b, u64 ib, u32 descending) {
    const bool an = Num<T>::is_nan(a), bn = Num<T>::is_nan(b);
    if (an || bn) {
        if (an && bn) return ia < ib;
        // NaN is the largest: first when descending, last when ascending.
        return descending ? an : bn;
    }
    const auto ua = up(a), ub = up(b);
    if (ua == ub) return ia < ib;
    return descending ? ua > ub : ua < ub;
}

template <typename T>
__device__ __forceinline__ void sort_impl(T* __restrict__ values, i64* __restrict__ indices, const T* __restrict__ x,
                                          u64 total, u64 n, u64 inner, u64 k, u32 descending) {
    for (u64 e = global_thread(); e < total; e += global_threads()) {
        const u64 j = e % inner, i = (e / inner) % n, o = e / (inner * n);
        const u64 base = o * n * inner + j;
        const T v = x[e];
        u64 rank = 0;
        for (u64 m = 0; m < n; ++m) {
            if (m != i && before(x[base + m * inner], m, v, i, descending)) ++rank;
        }
        if (rank < k) {
            const u64 at = (o * k + rank) * inner + j;
            values[at] = v;
            indices[at] = (i64)i;
        }
    }
}

#define SORT_OPS(T, SUFFIX)                                                                            \
    extern "C" __global__ void cumsum_##SUFFIX(T* out, const T* x, u64 lines, u64 n, u64 inner,        \
                                               u32 reverse) {                                          \
        cumsum_impl(out, x, lines, n, inner, reverse);                                                 \
    }                                                                                                  \
    extern "C" __global__ void sort_##SUFFIX(T* values, i64* indices, const T* x, u64 total, u64 n,    \
                                             u64 inner, u64 k, u32 descending) {                       \
        sort_impl(values, indices, x, total, n, inner, k, descending);                                 \
    }

SORT_OPS(float, f32)
SORT_OPS(double, f64)
SORT_OPS(i64, i64)
SORT_OPS(f16_t, f16)
SORT_OPS(bf16_t, bf16)
