// Element-wise math on one tensor (src/ops/unary).
//
// unary_<op>_<dtype>(out, a, Strided<1> layout, n)   out[i] = op(a[i]), out contiguous
//
// Contiguous inputs are read four elements at a time when the pointers allow it.
#include "common.cuh"

template <typename T> struct NegOp { __device__ __forceinline__ T operator()(T x) const { return -x; } };
template <typename T> struct ReluOp {
    // NaN stays NaN, as `x > 0 || isnan(x) ? x : 0` on the CPU.
    __device__ __forceinline__ T operator()(T x) const { return (x > (T)0 || Num<T>::is_nan(x)) ? x : (T)0; }
};
template <typename T> struct AbsOp { __device__ __forceinline__ T operator()(T x) const { return x < (T)0 ? -x : x; } };
template <> struct AbsOp<float> { __device__ __forceinline__ float operator()(float x) const { return fabsf(x); } };
template <> struct AbsOp<double> { __device__ __forceinline__ double operator()(double x) const { return fabs(x); } };
template <typename T> struct SquareOp { __device__ __forceinline__ T operator()(T x) const { return x * x; } };

// Integers wrap (i64::MIN stays i64::MIN under neg and abs), as on the CPU.
template <> struct NegOp<i64> { __device__ __forceinline__ i64 operator()(i64 x) const { return (i64)(0ULL - (u64)x); } };
template <> struct AbsOp<i64> { __device__ __forceinline__ i64 operator()(i64 x) const { return x < 0 ? (i64)(0ULL - (u64)x) : x; } };
template <> struct SquareOp<i64> { __device__ __forceinline__ i64 operator()(i64 x) const { return (i64)((u64)x * (u64)x); } };

template <typename T> struct ExpOp;
template <typename T> struct LogOp;
template <typename T> struct SqrtOp;
template <typename T> struct TanhOp;
template <> struct ExpOp<float> { __device__ __forceinline__ float operator()(float x) const { return expf(x); } };
template <> struct ExpOp<double> { __device__ __forceinline__ double operator()(double x) const { return exp(x); } };
template <> struct LogOp<float> { __device__ __forceinline__ float operator()(float x) const { return logf(x); } };
template <> struct LogOp<double> { __device__ __forceinline__ double operator()(double x) const { return log(x); } };
template <> struct SqrtOp<float> { __device__ __forceinline__ float operator()(float x) const { return sqrtf(x); } };
template <> struct SqrtOp<double> { __device__ __forceinline__ double operator()(double x) const { return sqrt(x); } };
template <> struct TanhOp<float> { __device__ __forceinline__ float operator()(float x) const { return tanhf(x); } };
template <> struct TanhOp<double> { __device__ __forceinline__ double operator()(double x) const { return tanh(x); } };
template <typename T> struct SigmoidOp {
    __device__ __forceinline__ T operator()(T x) const { return (T)1 / ((T)1 + ExpOp<T>()(-x)); }
};
template <typename T> struct ErfOp;
template <> struct ErfOp<float> { __device__ __forceinline__ float operator()(float x) const { return erff(x); } };
template <> struct ErfOp<double> { __device__ __forceinline__ double operator()(double x) const { return erf(x); } };
// GELU (PyTorch's GeluKernelImpl), in PyTorch's order of operations, its constants rounded to T
// as there; the same formulas as the CPU's (src/ops/unary/cpu.rs).
template <typename T> struct GeluOp {
    __device__ __forceinline__ T operator()(T x) const {
        const T kAlpha = (T)0.70710678118654752440;  // M_SQRT1_2
        return x * (T)0.5 * ((T)1 + ErfOp<T>()(x * kAlpha));
    }
};
template <typename T> struct GeluTanhOp {
    __device__ __forceinline__ T operator()(T x) const {
        const T kBeta = (T)0.79788456080286535588;  // M_SQRT2 * M_2_SQRTPI * 0.5 = sqrt(2/pi)
        const T kKappa = (T)0.044715;
        const T x_cube = x * x * x;
        const T inner = kBeta * (x + kKappa * x_cube);
        return (T)0.5 * x * ((T)1 + TanhOp<T>()(inner));
    }
};
template <typename T> struct ReciprocalOp { __device__ __forceinline__ T operator()(T x) const { return (T)1 / x; } };

#define UNARY(NAME, OP, T, SUFFIX)                                                                     \
    extern "C" __global__ void unary_##NAME##_##SUFFIX(T* out, const T* a, Strided<1> L, u64 n) {       \
        map1(out, a, L, n, OP<T>());                                                                   \
    }

// 16-bit floats: the f32 function of the widened value, rounded once.
#define UNARY_HALF(NAME, OP, H, SUFFIX)                                                                \
    extern "C" __global__ void unary_##NAME##_##SUFFIX(H* out, const H* a, Strided<1> L, u64 n) {       \
        map1(out, a, L, n, HalfMap1<H, OP<float> >());                                                 \
    }

#define UNARY_NUMERIC(NAME, OP)        \
    UNARY(NAME, OP, float, f32)        \
    UNARY(NAME, OP, double, f64)       \
    UNARY(NAME, OP, i64, i64)          \
    UNARY_HALF(NAME, OP, f16_t, f16)   \
    UNARY_HALF(NAME, OP, bf16_t, bf16)

#define UNARY_FLOAT(NAME, OP)          \
    UNARY(NAME, OP, float, f32)        \
    UNARY(NAME, OP, double, f64)       \
    UNARY_HALF(NAME, OP, f16_t, f16)   \
    UNARY_HALF(NAME, OP, bf16_t, bf16)

UNARY_NUMERIC(neg, NegOp)
UNARY_NUMERIC(relu, ReluOp)
UNARY_NUMERIC(abs, AbsOp)
UNARY_NUMERIC(square, SquareOp)
UNARY_FLOAT(exp, ExpOp)
UNARY_FLOAT(log, LogOp)
UNARY_FLOAT(sqrt, SqrtOp)
UNARY_FLOAT(tanh, TanhOp)
UNARY_FLOAT(sigmoid, SigmoidOp)
UNARY_FLOAT(reciprocal, ReciprocalOp)
UNARY_FLOAT(erf, ErfOp)
UNARY_FLOAT(gelu, GeluOp)
UNARY_FLOAT(gelu_tanh, GeluTanhOp)
