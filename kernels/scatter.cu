// Adding values into a zeroed tensor at indexed places (src/ops/index/scatter): the gradients of
// gather (`scatter_add`) and index_select (`index_add`).
//
// scatter_add_<dtype>(out, src, index, ScatterArgs, n)
//     For each of the n elements p of the iteration shape (the source's shape):
//     out[p with coordinate `dim` replaced by index[p]] += src[p], with an atomic add (several
//     sources may hit one output). index_add passes an index that only varies along `dim`.
//
// Negative indices count from the end, as on the CPU. The CPU rejects an index outside the
// dimension; checking that here would make the host wait, so such an element is skipped
// instead. Every coordinate is checked against the output's shape: the kernel never writes
// out of bounds.
#include "common.cuh"

struct ScatterArgs {
    u32 rank;
    u32 dim;
    // Iteration shape (the source's shape) and the strides of each operand along it.
    u64 shape[DEVTYPE_MAX_DIMS];
    u64 index_strides[DEVTYPE_MAX_DIMS];
    u64 src_strides[DEVTYPE_MAX_DIMS];
    // Shape and strides of the (contiguous) output, per iteration dimension.
    u64 out_shape[DEVTYPE_MAX_DIMS];
    u64 out_strides[DEVTYPE_MAX_DIMS];
    // Stride of the output along `dim`, and its size there.
    u64 out_dim_stride;
    u64 dim_size;
};

template <typename T>
__device__ __forceinline__ void scatter_impl(T* out, const T* __restrict__ src, const i64* __restrict__ index,
                                             const ScatterArgs& A, u64 n) {
    const i64 size = (i64)A.dim_size;
    for (u64 i = global_thread(); i < n; i += global_threads()) {
        u64 r = i;
        u64 src_off = 0, idx_off = 0, out_off = 0;
        bool inside = true;
#pragma unroll
        for (int d = DEVTYPE_MAX_DIMS - 1; d >= 0; --d) {
            if (d < (int)A.rank) {
                const u64 s = A.shape[d];
                const u64 q = r / s;
                const u64 p = r - q * s;
                r = q;
                src_off += p * A.src_strides[d];
                idx_off += p * A.index_strides[d];
                if (d != (int)A.dim) {
                    inside = inside && p < A.out_shape[d];
                    out_off += p * A.out_strides[d];
                }
            }
        }
        i64 j = index[idx_off];
        if (j < 0) j += size;
        if (inside && j >= 0 && j < size) atomicAdd(out + out_off + (u64)j * A.out_dim_stride, src[src_off]);
    }
}

#define SCATTER(T, SUFFIX)                                                                             \
    extern "C" __global__ void scatter_add_##SUFFIX(T* out, const T* src, const i64* index, ScatterArgs A, \
                                                   u64 n) {                                            \
        scatter_impl(out, src, index, A, n);                                                           \
    }

SCATTER(float, f32)
SCATTER(double, f64)
