// Indexing by i64 tensors (src/ops/index): index_select and gather.
//
// index_select_<dtype>(out, a, index, IndexArgs, n)
//     out has the shape of `a` with dim d resized to the number of indices (contiguous);
//     out[..., k, ...] = a[..., index[k], ...].
// gather_<dtype>(out, a, index, IndexArgs, n)
//     out has the shape of `index`; out[p] = a[p with coordinate d replaced by index[p]].
//
// As in PyTorch, indices must lie in [0, size). The CPU rejects any other index with an error;
// checking that here would make the host wait for the GPU, so instead the kernels never read out
// of bounds: an invalid index (negative or too large) yields NaN (floats) or 0 / false
// (integers, booleans) in that output element.
#include "common.cuh"

struct IndexArgs {
    u32 rank;
    u32 dim;
    // Iteration shape: the output's shape.
    u64 shape[DEVTYPE_MAX_DIMS];
    // Strides of `a` per output dimension; the entry of `dim` is unused.
    u64 a_strides[DEVTYPE_MAX_DIMS];
    // Strides of `index` per output dimension (index_select: only the entry of `dim`).
    u64 index_strides[DEVTYPE_MAX_DIMS];
    // Stride of `a` along `dim`, and the size of that dimension.
    u64 a_dim_stride;
    u64 dim_size;
};

// Offsets in `a` (without the `dim` term) and in `index` of output element `i`.
__device__ __forceinline__ void index_offsets(const IndexArgs& A, u64 i, u64& a_off, u64& idx_off) {
    a_off = 0;
    idx_off = 0;
    u64 r = i;
#pragma unroll
    for (int d = DEVTYPE_MAX_DIMS - 1; d >= 0; --d) {
        if (d < (int)A.rank) {
            const u64 size = A.shape[d];
            const u64 q = r / size;
            const u64 p = r - q * size;
            r = q;
            idx_off += p * A.index_strides[d];
            if (d != (int)A.dim) a_off += p * A.a_strides[d];
        }
    }
}

template <typename T>
__device__ __forceinline__ void index_impl(T* __restrict__ out, const T* __restrict__ a, const i64* __restrict__ index,
                                           const IndexArgs& A, u64 n) {
    const i64 size = (i64)A.dim_size;
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        u64 a_off, idx_off;
        index_offsets(A, i, a_off, idx_off);
        const i64 j = index[idx_off];
        out[i] = (j >= 0 && j < size) ? a[a_off + (u64)j * A.a_dim_stride] : Num<T>::nan();
    }
}

#define INDEX(T, SUFFIX)                                                                               \
    extern "C" __global__ void index_select_##SUFFIX(T* out, const T* a, const i64* index, IndexArgs A, \
                                                    u64 n) {                                           \
        index_impl(out, a, index, A, n);                                                               \
    }                                                                                                  \
    extern "C" __global__ void gather_##SUFFIX(T* out, const T* a, const i64* index, IndexArgs A, u64 n) { \
        index_impl(out, a, index, A, n);                                                               \
    }

INDEX(float, f32)
INDEX(double, f64)
INDEX(i64, i64)
INDEX(bool, bool)
INDEX(f16_t, f16)
INDEX(bf16_t, bf16)
