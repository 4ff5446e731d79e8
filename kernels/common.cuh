// Shared definitions of devtype's CUDA kernels.
//
// Every kernel file includes this header. NVRTC compiles each file once per process and device
// (see src/cuda/kernels.rs); no system header is needed, so the kernels build with the NVRTC
// wheel alone.
//
// Conventions:
// - Pointers already include the tensor's storage offset (added on the host).
// - Strided operands are described by `Strided<K>`: one iteration shape (row-major) and, per
//   operand, a stride per dimension, in elements. The host merges dimensions it can, so most
//   launches see rank 1 or 2. `small` says that every element index and offset fits in 32 bits,
//   which lets the index arithmetic use 32-bit divisions.
// - Loops are grid-stride loops: any grid size is correct; the host sizes grids to fill the GPU.
// - Kernels never read or write outside the buffers they are given, whatever the values they
//   read (indices are checked on the device; see index.cu and loss.cu).
#pragma once

typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

#define DEVTYPE_MAX_DIMS 8
#define FULL_MASK 0xffffffffu

template <int K>
struct Strided {
    u32 rank;
    u32 small;
    u64 shape[DEVTYPE_MAX_DIMS];
    u64 strides[K][DEVTYPE_MAX_DIMS];
};

// Offsets (in elements) of element `i` of the iteration shape in each of the K operands.
template <int K>
__device__ __forceinline__ void strided_offsets(const Strided<K>& s, u64 i, u64 (&off)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    if (s.rank == 0) return;
    if (s.small) {
        u32 r = (u32)i;
        u32 o[K];
#pragma unroll
        for (int k = 0; k < K; ++k) o[k] = 0;
#pragma unroll
        for (int d = DEVTYPE_MAX_DIMS - 1; d >= 1; --d) {
            if (d < (int)s.rank) {
                const u32 size = (u32)s.shape[d];
                const u32 q = r / size;
                const u32 idx = r - q * size;
                r = q;
#pragma unroll
                for (int k = 0; k < K; ++k) o[k] += idx * (u32)s.strides[k][d];
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] = (u64)(o[k] + r * (u32)s.strides[k][0]);
    } else {
        u64 r = i;
#pragma unroll
        for (int d = DEVTYPE_MAX_DIMS - 1; d >= 1; --d) {
            if (d < (int)s.rank) {
                const u64 size = s.shape[d];
                const u64 q = r / size;
                const u64 idx = r - q * size;
                r = q;
#pragma unroll
                for (int k = 0; k < K; ++k) off[k] += idx * s.strides[k][d];
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] += r * s.strides[k][0];
    }
}

// True when every operand is a plain contiguous run (the host merged all dims into one of
// stride 1), so element i of the iteration is element i of every operand.
template <int K>
__device__ __forceinline__ bool is_contiguous_run(const Strided<K>& s) {
    if (s.rank == 0) return true;
    if (s.rank != 1) return false;
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (s.strides[k][0] != 1) return false;
    return true;
}

__device__ __forceinline__ u64 global_thread() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 global_threads() { return (u64)gridDim.x * blockDim.x; }

// Four consecutive elements, for vectorised loads and stores (16 bytes for f32).
template <typename T>
struct __align__(sizeof(T) * 4) Pack4 {
    T v[4];
};

template <typename T>
__device__ __forceinline__ bool aligned_for_pack(const T* p) {
    return ((u64)p % (sizeof(T) * 4)) == 0;
}

// ---- numbers -------------------------------------------------------------------------------

__device__ __forceinline__ float f32_nan() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double f64_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ float f32_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double f64_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

template <typename T> struct Num;
template <> struct Num<float> {
    static __device__ __forceinline__ float nan() { return f32_nan(); }
    static __device__ __forceinline__ float lowest() { return -f32_inf(); }
    static __device__ __forceinline__ float highest() { return f32_inf(); }
    static __device__ __forceinline__ bool is_nan(float x) { return x != x; }
    static __device__ __forceinline__ float exp(float x) { return expf(x); }
    static __device__ __forceinline__ float log(float x) { return logf(x); }
};
template <> struct Num<double> {
    static __device__ __forceinline__ double nan() { return f64_nan(); }
    static __device__ __forceinline__ double lowest() { return -f64_inf(); }
    static __device__ __forceinline__ double highest() { return f64_inf(); }
    static __device__ __forceinline__ bool is_nan(double x) { return x != x; }
    static __device__ __forceinline__ double exp(double x) { return ::exp(x); }
    static __device__ __forceinline__ double log(double x) { return ::log(x); }
};
template <> struct Num<i64> {
    // Integers have no NaN: an invalid index reads as 0.
    static __device__ __forceinline__ i64 nan() { return 0; }
    static __device__ __forceinline__ i64 lowest() { return (i64)0x8000000000000000ULL; }
    static __device__ __forceinline__ i64 highest() { return 0x7fffffffffffffffLL; }
    static __device__ __forceinline__ bool is_nan(i64) { return false; }
};
template <> struct Num<bool> {
    static __device__ __forceinline__ bool nan() { return false; }
    static __device__ __forceinline__ bool is_nan(bool) { return false; }
};

// ---- 16-bit floats --------------------------------------------------------------------------
//
// `f16` (IEEE binary16) and `bf16` (bfloat16) are stored as their bits; the kernels never do
// arithmetic on them: values are widened to f32 (exact), computed in f32, and rounded once to
// nearest-even when written (`Acc<T>`, `up`, `down`), as PyTorch computes half types in its
// `opmath_type`. Own types rather than cuda_fp16.h, which the NVRTC wheel does not ship.
struct f16_t {
    unsigned short bits;
};
struct bf16_t {
    unsigned short bits;
};

#ifdef DEVTYPE_SIM
// The simulated device (sim/) compiles the kernels as host C++: the same conversions, in C++.
__device__ __forceinline__ float f16_to_f32(f16_t h) { return devtype_sim::half_bits_to_float(h.bits); }
__device__ __forceinline__ f16_t f32_to_f16(float f) {
    f16_t h;
    h.bits = devtype_sim::float_to_half_bits(f);
    return h;
}
#else
__device__ __forceinline__ float f16_to_f32(f16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}
__device__ __forceinline__ f16_t f32_to_f16(float f) {
    f16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}
#endif
__device__ __forceinline__ float bf16_to_f32(bf16_t h) { return __uint_as_float(((u32)h.bits) << 16); }
// Round to nearest, ties to even; a NaN stays a (quiet) NaN, as the `half` crate rounds on the
// CPU.
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
    const u32 u = __float_as_uint(f);
    bf16_t h;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        h.bits = (unsigned short)((u >> 16) | 0x0040u);
    } else {
        h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    return h;
}

// The type a kernel computes and accumulates in: f32 for the 16-bit floats, the type itself
// otherwise. `up` widens a stored value to it, `down<T>` rounds a result back (once).
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<f16_t> { typedef float type; };
template <> struct Acc<bf16_t> { typedef float type; };

template <typename T> __device__ __forceinline__ T up(T x) { return x; }
__device__ __forceinline__ float up(f16_t x) { return f16_to_f32(x); }
__device__ __forceinline__ float up(bf16_t x) { return bf16_to_f32(x); }

template <typename T> __device__ __forceinline__ T down(typename Acc<T>::type v) { return v; }
template <> __device__ __forceinline__ f16_t down<f16_t>(float v) { return f32_to_f16(v); }
template <> __device__ __forceinline__ bf16_t down<bf16_t>(float v) { return f32_to_bf16(v); }

template <> struct Num<f16_t> {
    static __device__ __forceinline__ f16_t nan() { f16_t h; h.bits = 0x7e00; return h; }
    static __device__ __forceinline__ bool is_nan(f16_t x) { return (x.bits & 0x7fff) > 0x7c00; }
};
template <> struct Num<bf16_t> {
    static __device__ __forceinline__ bf16_t nan() { bf16_t h; h.bits = 0x7fc0; return h; }
    static __device__ __forceinline__ bool is_nan(bf16_t x) { return (x.bits & 0x7fff) > 0x7f80; }
};

// Element-wise functors on 16-bit floats from their f32 versions: widen the operands, apply
// `F` (an f32 functor), round the result once.
template <typename H, typename F> struct HalfMap1 {
    __device__ __forceinline__ H operator()(H x) const { return down<H>(F()(up(x))); }
};
template <typename H, typename F> struct HalfMap2 {
    __device__ __forceinline__ H operator()(H a, H b) const { return down<H>(F()(up(a), up(b))); }
};
// A predicate on 16-bit floats from its f32 version (widening is exact, so the answer is the
// same as comparing the 16-bit values).
template <typename H, typename F> struct HalfPred2 {
    __device__ __forceinline__ bool operator()(H a, H b) const { return F()(up(a), up(b)); }
};

// The CPU's `Element::from_f64`: `as` casts (saturating, NaN -> 0) and `!= 0` for booleans.
template <typename T> __device__ __forceinline__ T from_double(double v);
template <> __device__ __forceinline__ float from_double<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ double from_double<double>(double v) { return v; }
template <> __device__ __forceinline__ i64 from_double<i64>(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return 0x7fffffffffffffffLL;
    if (v <= -9223372036854775808.0) return (i64)0x8000000000000000ULL;
    return (i64)v;
}
template <> __device__ __forceinline__ bool from_double<bool>(double v) { return v != 0.0; }
// Through f32, as the CPU (and PyTorch) converts an f64 to a 16-bit float: two roundings.
template <> __device__ __forceinline__ f16_t from_double<f16_t>(double v) { return f32_to_f16((float)v); }
template <> __device__ __forceinline__ bf16_t from_double<bf16_t>(double v) { return f32_to_bf16((float)v); }

// The CPU's `Element::to_f64`.
template <typename T> __device__ __forceinline__ double to_double(T v) { return (double)v; }
template <> __device__ __forceinline__ double to_double<bool>(bool v) { return v ? 1.0 : 0.0; }
template <> __device__ __forceinline__ double to_double<f16_t>(f16_t v) { return (double)f16_to_f32(v); }
template <> __device__ __forceinline__ double to_double<bf16_t>(bf16_t v) { return (double)bf16_to_f32(v); }

// ---- block reductions ----------------------------------------------------------------------

// Combines the values of all 32 lanes; every lane gets the result.
template <typename T, typename F>
__device__ __forceinline__ T warp_all_reduce(T v, F f) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

// Combines the values of all threads of the block (blockDim.x a multiple of 32, every thread
// calling); every thread gets the result. `shared` holds 32 values and may be reused by the
// next call.
template <typename T, typename F>
__device__ __forceinline__ T block_all_reduce(T v, F f, T* shared) {
    v = warp_all_reduce(v, f);
    const u32 warps = blockDim.x >> 5;
    if (warps == 1) return v;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
    __syncthreads();
    v = shared[0];
    for (u32 w = 1; w < warps; ++w) v = f(v, shared[w]);
    return v;
}

// ---- element-wise maps shared by several families ----------------------------------------------

// out[i] = f(a[i]) over a strided layout, 4 elements per load where the run is contiguous
// and aligned (unary math, scalar operands, comparisons with a scalar).
template <typename O, typename T, typename F>
__device__ __forceinline__ void map1(O* __restrict__ out, const T* __restrict__ a, const Strided<1>& L, u64 n, F f) {
    const u64 start = global_thread();
    const u64 step = global_threads();
    if (is_contiguous_run(L)) {
        u64 done = 0;
        if (aligned_for_pack(out) && aligned_for_pack(a)) {
            const u64 packs = n / 4;
            const Pack4<T>* pa = reinterpret_cast<const Pack4<T>*>(a);
            Pack4<O>* po = reinterpret_cast<Pack4<O>*>(out);
#pragma unroll 4
            for (u64 j = start; j < packs; j += step) {
                const Pack4<T> x = pa[j];
                Pack4<O> r;
#pragma unroll
                for (int v = 0; v < 4; ++v) r.v[v] = f(x.v[v]);
                po[j] = r;
            }
            done = packs * 4;
        }
        for (u64 i = done + start; i < n; i += step) out[i] = f(a[i]);
        return;
    }
    for (u64 i = start; i < n; i += step) {
        u64 off[1];
        strided_offsets(L, i, off);
        out[i] = f(a[off[0]]);
    }
}

// ---- combining functions shared by several families ------------------------------------------

// `torch.maximum`: NaN propagates.
template <typename T> struct MaxNan {
    __device__ __forceinline__ T operator()(T a, T b) const {
        return (Num<T>::is_nan(a) || a > b) ? a : b;
    }
};
template <typename T> struct MinNan {
    __device__ __forceinline__ T operator()(T a, T b) const {
        return (Num<T>::is_nan(a) || a < b) ? a : b;
    }
};
template <typename T> struct Plus {
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
template <> struct Plus<i64> {
    // Integers wrap, as on the CPU.
    __device__ __forceinline__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a + (u64)b); }
};
