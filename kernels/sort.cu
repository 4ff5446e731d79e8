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
// The sort, stable under the total order (value, NaN above every number; then index), in
// O(n log^2 C + n log(n / C)) per line, C = the chunk size (a power of two up to SORT_CHUNK):
// sort_chunks_<dtype>(tv, ti, x, rows, c, n, inner, chunks, descending)
//     one block per chunk of c elements of a line (rows = lines * chunks, grid-stride): the
//     chunk is loaded into shared memory (padding past the line's end sorts last) and sorted
//     by a bitonic network; written line-contiguous into tv/ti ([lines, n]).
// sort_merge_<dtype>(ov, oi, iv, ii, total, n, width, descending)
//     one pass of a segmented merge (one thread per element, grid-stride): runs of `width`
//     sorted elements are merged in pairs; each element's place is its place in its run plus
//     the count of the other run's elements before it (a binary search: the order is strict,
//     so no two elements tie). log2(n / C) passes, ping-ponging between two buffers.
// sort_write_<dtype>(values, indices, tv, ti, total, n, inner, k)
//     the first k of each sorted line into the [outer, k, inner] results.
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

#define SORT_CHUNK 2048

// Element a before element b, padding (index < 0) after everything.
template <typename T>
__device__ __forceinline__ bool ordered(T a, i64 ia, T b, i64 ib, u32 descending) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    return before(a, (u64)ia, b, (u64)ib, descending);
}

template <typename T>
__device__ __forceinline__ void sort_chunks_impl(T* __restrict__ tv, i64* __restrict__ ti, const T* __restrict__ x,
                                                 u64 rows, u64 c, u64 n, u64 inner, u64 chunks, u32 descending) {
    __shared__ T sv[SORT_CHUNK];
    __shared__ i64 si[SORT_CHUNK];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const u64 line = r / chunks, start = (r % chunks) * c;
        const u64 o = line / inner, j = line % inner;
        const u64 len = n - start < c ? n - start : c;
        for (u64 t = threadIdx.x; t < c; t += blockDim.x) {
            if (t < len) {
                sv[t] = x[(o * n + start + t) * inner + j];
                si[t] = (i64)(start + t);
            } else {
                si[t] = -1;
            }
        }
        __syncthreads();
        for (u64 size = 2; size <= c; size <<= 1) {
            for (u64 stride = size >> 1; stride > 0; stride >>= 1) {
                for (u64 t = threadIdx.x; t < c / 2; t += blockDim.x) {
                    const u64 a = 2 * stride * (t / stride) + (t % stride), b = a + stride;
                    const bool ascending = (a & size) == 0;
                    const bool swap = ascending ? ordered(sv[b], si[b], sv[a], si[a], descending)
                                                : ordered(sv[a], si[a], sv[b], si[b], descending);
                    if (swap) {
                        const T v = sv[a];
                        sv[a] = sv[b];
                        sv[b] = v;
                        const i64 i = si[a];
                        si[a] = si[b];
                        si[b] = i;
                    }
                }
                __syncthreads();
            }
        }
        for (u64 t = threadIdx.x; t < len; t += blockDim.x) {
            tv[line * n + start + t] = sv[t];
            ti[line * n + start + t] = si[t];
        }
        __syncthreads();
    }
}

template <typename T>
__device__ __forceinline__ void sort_merge_impl(T* __restrict__ ov, i64* __restrict__ oi, const T* __restrict__ iv,
                                                const i64* __restrict__ ii, u64 total, u64 n, u64 width,
                                                u32 descending) {
    for (u64 e = global_thread(); e < total; e += global_threads()) {
        const u64 base = (e / n) * n, p = e % n;
        const u64 run = p / width, start = run * width, pair = (run & ~1ull) * width;
        u64 other, len;
        if ((run & 1) == 0) {
            other = start + width;
            len = other >= n ? 0 : (n - other < width ? n - other : width);
        } else {
            other = pair;
            len = width;
        }
        const T v = iv[e];
        const i64 i = ii[e];
        u64 lo = 0, hi = len;
        while (lo < hi) {
            const u64 mid = (lo + hi) / 2;
            if (before(iv[base + other + mid], (u64)ii[base + other + mid], v, (u64)i, descending)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        const u64 at = base + pair + (p - start) + lo;
        ov[at] = v;
        oi[at] = i;
    }
}

template <typename T>
__device__ __forceinline__ void sort_write_impl(T* __restrict__ values, i64* __restrict__ indices,
                                                const T* __restrict__ tv, const i64* __restrict__ ti, u64 total,
                                                u64 n, u64 inner, u64 k) {
    for (u64 e = global_thread(); e < total; e += global_threads()) {
        const u64 j = e % inner, r = (e / inner) % k, o = e / (inner * k);
        const u64 from = (o * inner + j) * n + r;
        values[e] = tv[from];
        indices[e] = ti[from];
    }
}

#define SORT_OPS(T, SUFFIX)                                                                            \
    extern "C" __global__ void cumsum_##SUFFIX(T* out, const T* x, u64 lines, u64 n, u64 inner,        \
                                               u32 reverse) {                                          \
        cumsum_impl(out, x, lines, n, inner, reverse);                                                 \
    }                                                                                                  \
    extern "C" __global__ void sort_chunks_##SUFFIX(T* tv, i64* ti, const T* x, u64 rows, u64 c, u64 n,  \
                                                    u64 inner, u64 chunks, u32 descending) {           \
        sort_chunks_impl(tv, ti, x, rows, c, n, inner, chunks, descending);                            \
    }                                                                                                  \
    extern "C" __global__ void sort_merge_##SUFFIX(T* ov, i64* oi, const T* iv, const i64* ii,         \
                                                   u64 total, u64 n, u64 width, u32 descending) {      \
        sort_merge_impl(ov, oi, iv, ii, total, n, width, descending);                                  \
    }                                                                                                  \
    extern "C" __global__ void sort_write_##SUFFIX(T* values, i64* indices, const T* tv, const i64* ti, \
                                                   u64 total, u64 n, u64 inner, u64 k) {              \
        sort_write_impl(values, indices, tv, ti, total, n, inner, k);                                  \
    }

SORT_OPS(float, f32)
SORT_OPS(double, f64)
SORT_OPS(i64, i64)
SORT_OPS(f16_t, f16)
SORT_OPS(bf16_t, bf16)
