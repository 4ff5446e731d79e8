// Element-wise arithmetic and comparisons with broadcasting (src/ops/binary).
//
// binary_<op>_<dtype>(out, a, b, Strided<2> layout, n)         out[i] = a[i] op b[i]
// binary_scalar_<op>_<dtype>(out, a, Strided<1>, n, s, first)  out[i] = a[i] op s (s op a[i] when first)
// compare_<op>_<dtype>(out, a, b, Strided<2>, n)               out[i] = a[i] cmp b[i]  (bool)
// compare_scalar_<op>_<dtype>(out, a, Strided<1>, n, s)        out[i] = a[i] cmp s  (in T: exact for i64)
//
// `out` is contiguous. When every operand is one contiguous run the loop loads four elements
// at a time (16 bytes for f32) if the pointers allow it.
#include "common.cuh"

template <typename T> struct AddOp { __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
template <typename T> struct SubOp { __device__ __forceinline__ T operator()(T a, T b) const { return a - b; } };
template <typename T> struct MulOp { __device__ __forceinline__ T operator()(T a, T b) const { return a * b; } };
template <typename T> struct DivOp { __device__ __forceinline__ T operator()(T a, T b) const { return a / b; } };
template <typename T> struct MaximumOp { __device__ __forceinline__ T operator()(T a, T b) const { return MaxNan<T>()(a, b); } };
template <typename T> struct MinimumOp { __device__ __forceinline__ T operator()(T a, T b) const { return MinNan<T>()(a, b); } };
// relu(a + b) in one pass; NaN stays NaN, as in ReluOp.
template <typename T> struct AddReluOp {
    __device__ __forceinline__ T operator()(T a, T b) const {
        T s = a + b;
        return (s > (T)0 || s != s) ? s : (T)0;
    }
};
template <typename T> struct PowOp;
template <> struct PowOp<float> { __device__ __forceinline__ float operator()(float a, float b) const { return powf(a, b); } };
template <> struct PowOp<double> { __device__ __forceinline__ double operator()(double a, double b) const { return pow(a, b); } };

// Integers wrap instead of overflowing (signed overflow is undefined in C++).
template <> struct AddOp<i64> { __device__ __forceinline__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a + (u64)b); } };
template <> struct SubOp<i64> { __device__ __forceinline__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a - (u64)b); } };
template <> struct AddReluOp<i64> {
    __device__ __forceinline__ i64 operator()(i64 a, i64 b) const {
        i64 s = (i64)((u64)a + (u64)b);
        return s > 0 ? s : 0;
    }
};
template <> struct MulOp<i64> { __device__ __forceinline__ i64 operator()(i64 a, i64 b) const { return (i64)((u64)a * (u64)b); } };

template <typename T> struct EqOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a == b; } };
template <typename T> struct NeOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a != b; } };
template <typename T> struct LtOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a < b; } };
template <typename T> struct LeOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a <= b; } };
template <typename T> struct GtOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a > b; } };
template <typename T> struct GeOp { __device__ __forceinline__ bool operator()(T a, T b) const { return a >= b; } };

// out[i] = f(a[i], b[i]) over a broadcast layout.
template <typename O, typename T, typename F>
__device__ __forceinline__ void map2(O* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b,
                                     const Strided<2>& L, u64 n, F f) {
    const u64 start = global_thread();
    const u64 step = global_threads();
    if (is_contiguous_run(L)) {
        u64 done = 0;
        if (aligned_for_pack(out) && aligned_for_pack(a) && aligned_for_pack(b)) {
            const u64 packs = n / 4;
            const Pack4<T>* pa = reinterpret_cast<const Pack4<T>*>(a);
            const Pack4<T>* pb = reinterpret_cast<const Pack4<T>*>(b);
            Pack4<O>* po = reinterpret_cast<Pack4<O>*>(out);
#pragma unroll 4
            for (u64 j = start; j < packs; j += step) {
                const Pack4<T> x = pa[j];
                const Pack4<T> y = pb[j];
                Pack4<O> r;
#pragma unroll
                for (int v = 0; v < 4; ++v) r.v[v] = f(x.v[v], y.v[v]);
                po[j] = r;
            }
            done = packs * 4;
        }
        for (u64 i = done + start; i < n; i += step) out[i] = f(a[i], b[i]);
        return;
    }
    for (u64 i = start; i < n; i += step) {
        u64 off[2];
        strided_offsets(L, i, off);
        out[i] = f(a[off[0]], b[off[1]]);
    }
}

template <typename T, typename F>
struct ScalarRight {
    T s;
    __device__ __forceinline__ T operator()(T x) const { return F()(x, s); }
};
template <typename T, typename F>
struct ScalarLeft {
    T s;
    __device__ __forceinline__ T operator()(T x) const { return F()(s, x); }
};
template <typename T, typename F>
struct CompareScalar {
    T s;
    __device__ __forceinline__ bool operator()(T x) const { return F()(x, s); }
};

#define BINARY(NAME, OP, T, SUFFIX)                                                                  \
    extern "C" __global__ void binary_##NAME##_##SUFFIX(T* out, const T* a, const T* b, Strided<2> L, \
                                                       u64 n) {                                      \
        map2(out, a, b, L, n, OP<T>());                                                              \
    }                                                                                                \
    extern "C" __global__ void binary_scalar_##NAME##_##SUFFIX(T* out, const T* a, Strided<1> L, u64 n, \
                                                              T s, u32 scalar_first) {               \
        if (scalar_first) {                                                                          \
            map1(out, a, L, n, ScalarLeft<T, OP<T> >{s});                                            \
        } else {                                                                                     \
            map1(out, a, L, n, ScalarRight<T, OP<T> >{s});                                           \
        }                                                                                            \
    }

// 16-bit floats: the op in f32 on the widened operands, rounded once. The scalar operand stays
// an f32 (PyTorch keeps a wrapped number in `opmath_type`, not rounded to the tensor's type).
template <typename H, typename F>
struct HalfScalarRight {
    float s;
    __device__ __forceinline__ H operator()(H x) const { return down<H>(F()(up(x), s)); }
};
template <typename H, typename F>
struct HalfScalarLeft {
    float s;
    __device__ __forceinline__ H operator()(H x) const { return down<H>(F()(s, up(x))); }
};

#define BINARY_HALF(NAME, OP, H, SUFFIX)                                                             \
    extern "C" __global__ void binary_##NAME##_##SUFFIX(H* out, const H* a, const H* b, Strided<2> L, \
                                                       u64 n) {                                      \
        map2(out, a, b, L, n, HalfMap2<H, OP<float> >());                                            \
    }                                                                                                \
    extern "C" __global__ void binary_scalar_##NAME##_##SUFFIX(H* out, const H* a, Strided<1> L, u64 n, \
                                                              float s, u32 scalar_first) {           \
        if (scalar_first) {                                                                          \
            map1(out, a, L, n, HalfScalarLeft<H, OP<float> >{s});                                    \
        } else {                                                                                     \
            map1(out, a, L, n, HalfScalarRight<H, OP<float> >{s});                                   \
        }                                                                                            \
    }

#define BINARY_NUMERIC(NAME, OP)        \
    BINARY(NAME, OP, float, f32)        \
    BINARY(NAME, OP, double, f64)       \
    BINARY(NAME, OP, i64, i64)          \
    BINARY_HALF(NAME, OP, f16_t, f16)   \
    BINARY_HALF(NAME, OP, bf16_t, bf16)

#define BINARY_FLOAT(NAME, OP)          \
    BINARY(NAME, OP, float, f32)        \
    BINARY(NAME, OP, double, f64)       \
    BINARY_HALF(NAME, OP, f16_t, f16)   \
    BINARY_HALF(NAME, OP, bf16_t, bf16)

BINARY_NUMERIC(add, AddOp)
BINARY_NUMERIC(sub, SubOp)
BINARY_NUMERIC(mul, MulOp)
BINARY_NUMERIC(maximum, MaximumOp)
BINARY_NUMERIC(minimum, MinimumOp)
BINARY_NUMERIC(add_relu, AddReluOp)
BINARY_FLOAT(div, DivOp)
BINARY_FLOAT(pow, PowOp)

#define COMPARE(NAME, OP, T, SUFFIX)                                                                  \
    extern "C" __global__ void compare_##NAME##_##SUFFIX(bool* out, const T* a, const T* b, Strided<2> L, \
                                                        u64 n) {                                      \
        map2(out, a, b, L, n, OP<T>());                                                               \
    }                                                                                                 \
    extern "C" __global__ void compare_scalar_##NAME##_##SUFFIX(bool* out, const T* a, Strided<1> L,  \
                                                               u64 n, T s) {                          \
        map1(out, a, L, n, CompareScalar<T, OP<T> >{s});                                              \
    }

// 16-bit floats compare their widened values (exact); the scalar is rounded to the tensor's
// type on the host, as on the CPU.
template <typename H, typename F>
struct HalfCompareScalar {
    H s;
    __device__ __forceinline__ bool operator()(H x) const { return F()(up(x), up(s)); }
};

#define COMPARE_HALF(NAME, OP, H, SUFFIX)                                                             \
    extern "C" __global__ void compare_##NAME##_##SUFFIX(bool* out, const H* a, const H* b, Strided<2> L, \
                                                        u64 n) {                                      \
        map2(out, a, b, L, n, HalfPred2<H, OP<float> >());                                            \
    }                                                                                                 \
    extern "C" __global__ void compare_scalar_##NAME##_##SUFFIX(bool* out, const H* a, Strided<1> L,  \
                                                               u64 n, H s) {                          \
        map1(out, a, L, n, HalfCompareScalar<H, OP<float> >{s});                                      \
    }

#define COMPARE_ALL(NAME, OP)           \
    COMPARE(NAME, OP, float, f32)       \
    COMPARE(NAME, OP, double, f64)      \
    COMPARE(NAME, OP, i64, i64)         \
    COMPARE(NAME, OP, bool, bool)       \
    COMPARE_HALF(NAME, OP, f16_t, f16)  \
    COMPARE_HALF(NAME, OP, bf16_t, bf16)

COMPARE_ALL(eq, EqOp)
COMPARE_ALL(ne, NeOp)
COMPARE_ALL(lt, LtOp)
COMPARE_ALL(le, LeOp)
COMPARE_ALL(gt, GtOp)
COMPARE_ALL(ge, GeOp)

// The gradient of relu (src/ops/binary/relu_backward): out[i] = y[i] <= 0 ? 0 : grad[i], where y is
// the relu's output: PyTorch's threshold_backward, so a NaN output passes the gradient, as on
// the CPU.
template <typename T> struct ReluBackwardOp {
    __device__ __forceinline__ T operator()(T g, T y) const { return y <= (T)0 ? (T)0 : g; }
};

#define RELU_BACKWARD(T, SUFFIX)                                                                      \
    extern "C" __global__ void relu_backward_##SUFFIX(T* out, const T* grad, const T* y, Strided<2> L, \
                                                     u64 n) {                                         \
        map2(out, grad, y, L, n, ReluBackwardOp<T>());                                                \
    }

RELU_BACKWARD(float, f32)
RELU_BACKWARD(double, f64)

#define RELU_BACKWARD_HALF(H, SUFFIX)                                                                 \
    extern "C" __global__ void relu_backward_##SUFFIX(H* out, const H* grad, const H* y, Strided<2> L, \
                                                     u64 n) {                                         \
        map2(out, grad, y, L, n, HalfMap2<H, ReluBackwardOp<float> >());                              \
    }

RELU_BACKWARD_HALF(f16_t, f16)
RELU_BACKWARD_HALF(bf16_t, bf16)

// The gradient of GELU (src/ops/binary/gelu_backward): out[i] = grad[i] * gelu'(x[i]), where x is
// the GELU's input. PyTorch's GeluBackwardKernelImpl, in its order of operations, its constants
// rounded to T as there; the same formulas as the CPU's.

// erf, exp and tanh of T (f32: the single-precision functions, as the unary ops).
template <typename T> struct GeluMath;
template <> struct GeluMath<float> {
    static __device__ __forceinline__ float erf_(float v) { return erff(v); }
    static __device__ __forceinline__ float exp_(float v) { return expf(v); }
    static __device__ __forceinline__ float tanh_(float v) { return tanhf(v); }
};
template <> struct GeluMath<double> {
    static __device__ __forceinline__ double erf_(double v) { return erf(v); }
    static __device__ __forceinline__ double exp_(double v) { return exp(v); }
    static __device__ __forceinline__ double tanh_(double v) { return tanh(v); }
};
template <typename T> struct GeluBackwardOp {
    __device__ __forceinline__ T operator()(T dy, T x) const {
        const T kAlpha = (T)0.70710678118654752440;  // M_SQRT1_2
        // M_2_SQRTPI * M_SQRT1_2 * 0.5 = 1/sqrt(2 pi), computed in double as PyTorch does.
        const T kBeta = (T)(1.12837916709551257390 * 0.70710678118654752440 * 0.5);
        const T cdf = (T)0.5 * ((T)1 + GeluMath<T>::erf_(x * kAlpha));
        const T pdf = kBeta * GeluMath<T>::exp_(x * x * (T)-0.5);
        return dy * (cdf + x * pdf);
    }
};
template <typename T> struct GeluTanhBackwardOp {
    __device__ __forceinline__ T operator()(T dy, T x) const {
        const T kBeta = (T)0.79788456080286535588;  // M_SQRT2 * M_2_SQRTPI * 0.5 = sqrt(2/pi)
        const T kKappa = (T)0.044715;
        const T x_sq = x * x;
        const T x_cube = x_sq * x;
        const T inner = kBeta * (x + kKappa * x_cube);
        const T t = GeluMath<T>::tanh_(inner);
        const T left = (T)0.5 * x;
        const T right = (T)1 + t;
        const T left_derivative = (T)0.5 * right;
        const T tanh_derivative = (T)1 - t * t;
        const T inner_derivative = kBeta * ((T)1 + (T)3 * kKappa * x_sq);
        const T right_derivative = left * tanh_derivative * inner_derivative;
        return dy * (left_derivative + right_derivative);
    }
};

#define GELU_BACKWARD(NAME, OP, T, SUFFIX)                                                            \
    extern "C" __global__ void NAME##_##SUFFIX(T* out, const T* grad, const T* x, Strided<2> L,       \
                                               u64 n) {                                               \
        map2(out, grad, x, L, n, OP<T>());                                                            \
    }

// 16-bit floats: the f32 formula of the widened values, rounded once.
#define GELU_BACKWARD_HALF(NAME, OP, H, SUFFIX)                                                       \
    extern "C" __global__ void NAME##_##SUFFIX(H* out, const H* grad, const H* x, Strided<2> L,       \
                                               u64 n) {                                               \
        map2(out, grad, x, L, n, HalfMap2<H, OP<float> >());                                          \
    }

#define GELU_BACKWARD_ALL(NAME, OP)          \
    GELU_BACKWARD(NAME, OP, float, f32)      \
    GELU_BACKWARD(NAME, OP, double, f64)     \
    GELU_BACKWARD_HALF(NAME, OP, f16_t, f16) \
    GELU_BACKWARD_HALF(NAME, OP, bf16_t, bf16)

GELU_BACKWARD_ALL(gelu_backward, GeluBackwardOp)
GELU_BACKWARD_ALL(gelu_tanh_backward, GeluTanhBackwardOp)
