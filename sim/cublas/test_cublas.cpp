// Tests of the simulated libcublas.so against an independent f64 reference on random inputs.
//
// Built twice by build.sh --test: with WITH_DRIVER_STUBS=1 the program exports stand-ins for
// the driver functions the library looks up (cuLaunchHostFunc queues the GEMM here and runs it
// at sync(); cuMemAlloc_v2 can be made to fail), so queued, asynchronous behaviour is checked;
// with WITH_DRIVER_STUBS=0 there is no driver and the library runs GEMMs synchronously.
//
// The reference rounds inputs with its own code (the compiler's _Float16 for f16; frexp and
// nearbyint for bf16 and TF32), never with the library's.
#include "cublas_sim.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#ifndef WITH_DRIVER_STUBS
#define WITH_DRIVER_STUBS 0
#endif

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        g_checks++;                                                    \
        if (!(cond)) {                                                 \
            g_failures++;                                              \
            if (g_failures <= 30) {                                    \
                std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                std::fprintf(stderr, __VA_ARGS__);                     \
                std::fprintf(stderr, "\n");                            \
            }                                                          \
        }                                                              \
    } while (0)

#define EXPECT_STATUS(expr, want)                                                      \
    do {                                                                               \
        cublasStatus_t got_ = (expr);                                                  \
        CHECK(got_ == (want), "%s returned %d, expected %d (%s)", #expr, int(got_), int(want), \
              #want);                                                                  \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Driver stand-ins.

#if WITH_DRIVER_STUBS
struct Pending {
    cudaStream_t stream;
    void (*fn)(void*);
    void* data;
};
static std::deque<Pending> g_queue;
static bool g_fail_alloc = false;
static int g_live_allocs = 0;
static void* g_current_ctx = reinterpret_cast<void*>(0xC0);

extern "C" int cuLaunchHostFunc(cudaStream_t stream, void (*fn)(void*), void* data) {
    g_queue.push_back({stream, fn, data});
    return 0;
}
extern "C" int cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
    if (g_fail_alloc) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
    *p = reinterpret_cast<unsigned long long>(std::malloc(bytes));
    g_live_allocs++;
    return 0;
}
extern "C" int cuMemFree_v2(unsigned long long p) {
    std::free(reinterpret_cast<void*>(p));
    g_live_allocs--;
    return 0;
}
extern "C" int cuCtxGetCurrent(void** ctx) {
    *ctx = g_current_ctx;
    return 0;
}
extern "C" int cuCtxSetCurrent(void* ctx) {
    g_current_ctx = ctx;
    return 0;
}
static void drain() {
    while (!g_queue.empty()) {
        Pending p = g_queue.front();
        g_queue.pop_front();
        p.fn(p.data);
    }
}
extern "C" int cuCtxSynchronize() {
    drain();
    return 0;
}
static void sync() { drain(); }
#else
static void sync() {}
#endif

// ---------------------------------------------------------------------------------------------
// Element types and the reference's own rounding.

enum class T { F32, F64, F16, BF16 };

static const char* tname(T t) {
    switch (t) {
        case T::F32: return "f32";
        case T::F64: return "f64";
        case T::F16: return "f16";
        case T::BF16: return "bf16";
    }
    return "?";
}

static size_t tsize(T t) { return t == T::F64 ? 8 : t == T::F32 ? 4 : 2; }

static cudaDataType tcuda(T t) {
    switch (t) {
        case T::F32: return CUDA_R_32F;
        case T::F64: return CUDA_R_64F;
        case T::F16: return CUDA_R_16F;
        case T::BF16: return CUDA_R_16BF;
    }
    return CUDA_R_32F;
}

// Rounds a finite normal double to `bits` significant bits, to nearest even (frexp/nearbyint).
static double round_sig(double x, int bits) {
    if (x == 0 || !std::isfinite(x)) return x;
    int e;
    double f = std::frexp(x, &e);  // |f| in [0.5, 1)
    return std::ldexp(std::nearbyint(std::ldexp(f, bits)), e - bits);
}

static double q_bf16(double x) { return round_sig(double(float(x)), 8); }
static double q_tf32(double x) { return round_sig(double(float(x)), 11); }
static double q_f16(double x) { return double(float(_Float16(float(x)))); }

// The value `x` becomes when stored as t (x is already representable for inputs made by
// quantize); writes its bits at p.
static double quantize(T t, double x) {
    switch (t) {
        case T::F32: return double(float(x));
        case T::F64: return x;
        case T::F16: return q_f16(x);
        case T::BF16: return q_bf16(x);
    }
    return x;
}

static void put(T t, unsigned char* p, double x) {
    switch (t) {
        case T::F32: {
            float f = float(x);
            std::memcpy(p, &f, 4);
            break;
        }
        case T::F64: std::memcpy(p, &x, 8); break;
        case T::F16: {
            _Float16 h = _Float16(float(x));
            std::memcpy(p, &h, 2);
            break;
        }
        case T::BF16: {
            // x is a bf16 value (or NaN): its f32 form's upper half is exact.
            float f = float(x);
            uint32_t u;
            std::memcpy(&u, &f, 4);
            uint16_t b = uint16_t(u >> 16);
            if (std::isnan(x)) b = 0x7fc0;
            std::memcpy(p, &b, 2);
            break;
        }
    }
}

static double get(T t, const unsigned char* p) {
    switch (t) {
        case T::F32: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
        case T::F64: {
            double d;
            std::memcpy(&d, p, 8);
            return d;
        }
        case T::F16: {
            _Float16 h;
            std::memcpy(&h, p, 2);
            return double(float(h));
        }
        case T::BF16: {
            uint16_t b;
            std::memcpy(&b, p, 2);
            uint32_t u = uint32_t(b) << 16;
            float f;
            std::memcpy(&f, &u, 4);
            return f;
        }
    }
    return 0;
}

struct Buffer {
    T t;
    std::vector<unsigned char> bytes;
    Buffer(T t_, size_t n) : t(t_), bytes(n * tsize(t_)) {}
    void set(size_t i, double x) { put(t, &bytes[i * tsize(t)], x); }
    double at(size_t i) const { return get(t, &bytes[i * tsize(t)]); }
    void* data() { return bytes.data(); }
};

// ---------------------------------------------------------------------------------------------
// One GEMM case, run through one entry point and checked against the f64 reference.

enum class Api {
    Sgemm,               // cublasSgemm_v2
    SgemmStrided,        // cublasSgemmStridedBatched
    Dgemm,               // cublasDgemm_v2
    DgemmStrided,        // cublasDgemmStridedBatched
    Hgemm,               // cublasHgemmStridedBatched (f16 compute)
    GemmEx,              // cublasGemmEx
    GemmStridedEx,       // cublasGemmStridedBatchedEx
};

struct Case {
    Api api;
    T in, out;
    cublasComputeType_t compute;
    cublasOperation_t ta, tb;
    int m, n, k;
    int pad_a, pad_b, pad_c;  // leading dimension beyond the rows stored
    int batch;
    bool broadcast_a;  // strideA = 0
    double alpha, beta;
    bool nan_c;  // C starts as NaN (only with beta == 0)
};

static std::mt19937_64 g_rng(20261202);

static double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(g_rng);
}

static const char* opname(cublasOperation_t o) { return o == 0 ? "N" : o == 1 ? "T" : "C"; }

static double input_rounding(cublasComputeType_t c, double x) {
    switch (c) {
        case CUBLAS_COMPUTE_32F_FAST_TF32: return q_tf32(x);
        case CUBLAS_COMPUTE_32F_FAST_16F: return q_f16(x);
        case CUBLAS_COMPUTE_32F_FAST_16BF: return q_bf16(x);
        default: return x;
    }
}

static double unit_roundoff(T t) {
    switch (t) {
        case T::F32: return std::ldexp(1.0, -24);
        case T::F64: return std::ldexp(1.0, -53);
        case T::F16: return std::ldexp(1.0, -11);
        case T::BF16: return std::ldexp(1.0, -8);
    }
    return 0;
}

static void run_case(cublasHandle_t h, const Case& c) {
    const bool strided_api = c.api == Api::SgemmStrided || c.api == Api::DgemmStrided ||
                             c.api == Api::Hgemm || c.api == Api::GemmStridedEx;
    const int batch = strided_api ? c.batch : 1;
    const int a_rows = c.ta == CUBLAS_OP_N ? c.m : c.k, a_cols = c.ta == CUBLAS_OP_N ? c.k : c.m;
    const int b_rows = c.tb == CUBLAS_OP_N ? c.k : c.n, b_cols = c.tb == CUBLAS_OP_N ? c.n : c.k;
    const int lda = std::max(1, a_rows + c.pad_a), ldb = std::max(1, b_rows + c.pad_b);
    const int ldc = std::max(1, c.m + c.pad_c);
    // Batch strides leave a gap after each matrix, which must stay untouched (C) or unread.
    const long long sa = c.broadcast_a ? 0 : (long long)lda * a_cols + 3;
    const long long sb = (long long)ldb * b_cols + 5;
    const long long sc = (long long)ldc * c.n + 7;
    const size_t na = size_t(sa ? sa * batch : lda * a_cols) + 1;
    const size_t nb = size_t(sb * batch) + 1, ncs = size_t(sc * batch) + 1;
    Buffer A(c.in, na), B(c.in, nb), C(c.out, ncs);
    const double nan = std::nan("");
    const double sentinel = 1216.0;  // exact in every type (5 significant bits)
    // Everything outside the matrices is NaN in A and B (a stray read shows) and a sentinel in
    // C (a stray write shows).
    for (size_t i = 0; i < na; i++) A.set(i, nan);
    for (size_t i = 0; i < nb; i++) B.set(i, nan);
    for (size_t i = 0; i < ncs; i++) C.set(i, sentinel);
    std::vector<double> av(na, nan), bv(nb, nan), cv(ncs, sentinel);
    for (int b = 0; b < batch; b++) {
        for (int col = 0; col < a_cols; col++)
            for (int row = 0; row < a_rows; row++) {
                size_t i = size_t(b * sa + row + (long long)col * lda);
                av[i] = quantize(c.in, uniform(-1, 1));
                A.set(i, av[i]);
            }
        for (int col = 0; col < b_cols; col++)
            for (int row = 0; row < b_rows; row++) {
                size_t i = size_t(b * sb + row + (long long)col * ldb);
                bv[i] = quantize(c.in, uniform(-1, 1));
                B.set(i, bv[i]);
            }
        for (int col = 0; col < c.n; col++)
            for (int row = 0; row < c.m; row++) {
                size_t i = size_t(b * sc + row + (long long)col * ldc);
                cv[i] = c.nan_c ? nan : quantize(c.out, uniform(-1, 1));
                C.set(i, cv[i]);
            }
    }
    const std::vector<unsigned char> c_before = C.bytes;

    // Scalars in the scale type: f16 for the 16F compute type, f64 for 64F, else f32.
    float af = float(c.alpha), bf = float(c.beta);
    double ad = c.alpha, bd = c.beta;
    _Float16 ah = _Float16(af), bh = _Float16(bf);
    const void* alpha = &af;
    const void* beta = &bf;
    if (c.compute == CUBLAS_COMPUTE_64F) alpha = &ad, beta = &bd;
    if (c.compute == CUBLAS_COMPUTE_16F) alpha = &ah, beta = &bh;

    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;
    auto* Ap = A.data();
    auto* Bp = B.data();
    auto* Cp = C.data();
    switch (c.api) {
        case Api::Sgemm:
            s = cublasSgemm_v2(h, c.ta, c.tb, c.m, c.n, c.k, &af, (const float*)Ap, lda,
                               (const float*)Bp, ldb, &bf, (float*)Cp, ldc);
            break;
        case Api::SgemmStrided:
            s = cublasSgemmStridedBatched(h, c.ta, c.tb, c.m, c.n, c.k, &af, (const float*)Ap,
                                          lda, sa, (const float*)Bp, ldb, sb, &bf, (float*)Cp,
                                          ldc, sc, batch);
            break;
        case Api::Dgemm:
            s = cublasDgemm_v2(h, c.ta, c.tb, c.m, c.n, c.k, &ad, (const double*)Ap, lda,
                               (const double*)Bp, ldb, &bd, (double*)Cp, ldc);
            break;
        case Api::DgemmStrided:
            s = cublasDgemmStridedBatched(h, c.ta, c.tb, c.m, c.n, c.k, &ad,
                                          (const double*)Ap, lda, sa, (const double*)Bp, ldb,
                                          sb, &bd, (double*)Cp, ldc, sc, batch);
            break;
        case Api::Hgemm:
            s = cublasHgemmStridedBatched(h, c.ta, c.tb, c.m, c.n, c.k,
                                          (const cublas_half_bits*)&ah,
                                          (const cublas_half_bits*)Ap, lda, sa,
                                          (const cublas_half_bits*)Bp, ldb, sb,
                                          (const cublas_half_bits*)&bh, (cublas_half_bits*)Cp,
                                          ldc, sc, batch);
            break;
        case Api::GemmEx:
            s = cublasGemmEx(h, c.ta, c.tb, c.m, c.n, c.k, alpha, Ap, tcuda(c.in), lda, Bp,
                             tcuda(c.in), ldb, beta, Cp, tcuda(c.out), ldc, c.compute,
                             CUBLAS_GEMM_DEFAULT);
            break;
        case Api::GemmStridedEx:
            s = cublasGemmStridedBatchedEx(h, c.ta, c.tb, c.m, c.n, c.k, alpha, Ap, tcuda(c.in),
                                           lda, sa, Bp, tcuda(c.in), ldb, sb, beta, Cp,
                                           tcuda(c.out), ldc, sc, batch, c.compute,
                                           CUBLAS_GEMM_DEFAULT);
            break;
    }
    char what[200];
    std::snprintf(what, sizeof what,
                  "api %d %s->%s compute %d op %s%s m %d n %d k %d pads %d/%d/%d batch %d%s "
                  "alpha %g beta %g%s",
                  int(c.api), tname(c.in), tname(c.out), int(c.compute), opname(c.ta),
                  opname(c.tb), c.m, c.n, c.k, c.pad_a, c.pad_b, c.pad_c, batch,
                  c.broadcast_a ? " bcastA" : "", c.alpha, c.beta, c.nan_c ? " nanC" : "");
    CHECK(s == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, int(s));
#if WITH_DRIVER_STUBS
    // Queued, not run: C is unchanged until the stream runs the work.
    CHECK(C.bytes == c_before, "%s: C changed before the stream ran", what);
    // The scalars were copied at the call: changing them now must not matter.
    af = bf = 99.0f;
    ad = bd = 99.0;
    ah = bh = _Float16(99.0f);
#endif
    sync();

    // Reference in f64 from the stored inputs, rounded as the compute type rounds inputs.
    const double u_acc = c.compute == CUBLAS_COMPUTE_64F   ? std::ldexp(1.0, -53)
                         : c.compute == CUBLAS_COMPUTE_16F ? std::ldexp(1.0, -11)
                                                           : std::ldexp(1.0, -24);
    const double alpha_v = c.compute == CUBLAS_COMPUTE_16F ? q_f16(c.alpha)
                           : c.compute == CUBLAS_COMPUTE_64F ? c.alpha
                                                             : double(float(c.alpha));
    const double beta_v = c.compute == CUBLAS_COMPUTE_16F ? q_f16(c.beta)
                          : c.compute == CUBLAS_COMPUTE_64F ? c.beta
                                                            : double(float(c.beta));
    int bad = 0;
    for (int b = 0; b < batch; b++)
        for (int col = 0; col < c.n; col++)
            for (int row = 0; row < c.m; row++) {
                double sum = 0, mag = 0;
                for (int p = 0; p < c.k; p++) {
                    size_t ia = size_t(b * sa + (c.ta == CUBLAS_OP_N
                                                     ? row + (long long)p * lda
                                                     : p + (long long)row * lda));
                    size_t ib = size_t(b * sb + (c.tb == CUBLAS_OP_N
                                                     ? p + (long long)col * ldb
                                                     : col + (long long)p * ldb));
                    double x = input_rounding(c.compute, av[ia]) *
                               input_rounding(c.compute, bv[ib]);
                    sum += x;
                    mag += std::fabs(x);
                }
                size_t ic = size_t(b * sc + row + (long long)col * ldc);
                double want = alpha_v * sum;
                double scale = std::fabs(alpha_v) * mag;
                if (beta_v != 0) {
                    want += beta_v * cv[ic];
                    scale += std::fabs(beta_v * cv[ic]);
                }
                double got = C.at(ic);
                double tol = (c.k + 4) * u_acc * scale + unit_roundoff(c.out) * std::fabs(want) +
                             1e-300 + (c.out == T::F16 ? std::ldexp(1.0, -24) : 0.0);
                // A 16-bit C with beta != 0: `alpha * sum` is rounded to C's type first (as
                // cuBLAS did on an H200; see cublas.cpp), one rounding of the product more.
                if (beta_v != 0 && (c.out == T::F16 || c.out == T::BF16))
                    tol += unit_roundoff(c.out) * std::fabs(alpha_v * sum);
                if (!(std::fabs(got - want) <= tol)) {
                    if (bad++ < 3)
                        CHECK(false, "%s: C[b%d](%d,%d) = %.9g, want %.9g (tol %.3g)", what, b,
                              row, col, got, want, tol);
                }
            }
    CHECK(bad == 0, "%s: %d wrong outputs", what, bad);
    // Everything outside the m x n matrices of C is untouched.
    int stray = 0;
    for (size_t i = 0; i < ncs; i++) {
        long long b = (long long)i / sc, off = (long long)i % sc;
        bool inside = b < batch && off < (long long)ldc * c.n && off % ldc < c.m;
        if (!inside && C.at(i) != sentinel) stray++;
    }
    CHECK(stray == 0, "%s: %d writes outside C's matrices", what, stray);
}

// ---------------------------------------------------------------------------------------------

static void test_exports() {
    void* lib = dlopen("libcublas.so", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != nullptr, "libcublas.so is not loaded by name");
    // devtype's probe list (src/backend/cuda/loader.rs), what it calls (blas.rs), and what
    // cudarc's safe CudaBlas/Gemm wrappers call.
    const char* names[] = {"cublasCreate_v2",          "cublasDestroy_v2",
                           "cublasSetStream_v2",       "cublasSgemmStridedBatched",
                           "cublasDgemmStridedBatched", "cublasGemmStridedBatchedEx",
                           "cublasSgemm_v2",           "cublasDgemm_v2",
                           "cublasHgemm",              "cublasHgemmStridedBatched",
                           "cublasGemmEx",             "cublasSetPointerMode_v2",
                           "cublasGetPointerMode_v2",  "cublasSetMathMode",
                           "cublasGetMathMode",        "cublasGetStream_v2",
                           "cublasGetVersion_v2",      "cublasGetStatusString",
                           "cublasGetStatusName",      "cublasSetWorkspace_v2"};
    for (const char* n : names) CHECK(lib && dlsym(lib, n) != nullptr, "%s is not exported", n);
    // libcublasLt.so is loaded with it, from the same folder.
    void* lt = dlopen("libcublasLt.so", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lt != nullptr, "libcublasLt.so was not loaded with libcublas.so");
    Dl_info a{}, b{};
    if (lib && lt && dladdr(dlsym(lib, "cublasCreate_v2"), &a) &&
        dladdr(dlsym(lt, "cublasLtGetVersion"), &b)) {
        std::string fa = a.dli_fname, fb = b.dli_fname;
        CHECK(fa.substr(0, fa.rfind('/')) == fb.substr(0, fb.rfind('/')),
              "libcublas (%s) and libcublasLt (%s) in two folders", fa.c_str(), fb.c_str());
    }
}

static void test_validation(cublasHandle_t h) {
    std::vector<float> A(64, 1), B(64, 1), C(64, 0);
    float one = 1, zero = 0;
    const float *a = A.data(), *b = B.data();
    float* c = C.data();
    auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    EXPECT_STATUS(cublasSgemm_v2(nullptr, N, N, 2, 2, 2, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, -1, 2, 2, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 2, -1, 2, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 2, 2, -1, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, (cublasOperation_t)7, N, 2, 2, 2, &one, a, 2, b, 2, &zero,
                                 c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, CUBLAS_OP_CONJG, 2, 2, 2, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    // lda >= max(1, m) for N, max(1, k) for T; ldb >= max(1, k) for N, max(1, n) for T.
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 3, 2, 2, &one, a, 2, b, 2, &zero, c, 3),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, T, N, 3, 2, 2, &one, a, 2, b, 2, &zero, c, 3),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, T, N, 2, 2, 3, &one, a, 2, b, 3, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 2, 2, 3, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, T, 2, 3, 2, &one, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, T, 2, 3, 2, &one, a, 2, b, 3, &zero, c, 2),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 3, 2, 2, &one, a, 3, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    // Zero sizes: leading dimensions must still be at least 1.
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 0, 0, 0, &one, a, 0, b, 1, &zero, c, 1),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 0, 0, 0, &one, a, 1, b, 1, &zero, c, 1),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, N, N, 2, 2, 2, nullptr, a, 2, b, 2, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, a, 2, 4, b, 2, 4, &zero, c,
                                            2, 4, -1),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, a, 2, 4, b, 2, 4, &zero, c,
                                            2, 4, 0),
                  CUBLAS_STATUS_SUCCESS);
    // Type combinations cuBLAS does not have.
    EXPECT_STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, a, CUDA_R_16F, 2, b, CUDA_R_16F, 2, &zero,
                               c, CUDA_R_16F, 2, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT_STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, a, CUDA_R_16F, 2, b, CUDA_R_16BF, 2,
                               &zero, c, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT_STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, a, CUDA_R_16F, 2, b, CUDA_R_16F, 2, &zero,
                               c, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F_FAST_TF32,
                               CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT_STATUS(cublasGemmEx(h, N, N, 2, 2, 2, &one, a, CUDA_R_32F, 2, b, CUDA_R_32F, 2, &zero,
                               c, CUDA_R_32F, 2, (cublasComputeType_t)12345,
                               CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_INVALID_VALUE);
    sync();
}

// Products whose only rounding is the final store: every f16 bit pattern times a few f16
// values (exact in f32), stored as f16, compared bit for bit with the compiler's conversion;
// and f16 -> f32 loads of every pattern.
static void test_f16_conversions(cublasHandle_t h) {
    const int n = 65536;
    std::vector<uint16_t> a(n), out16(n);
    std::vector<float> out32(n);
    for (int i = 0; i < n; i++) a[i] = uint16_t(i);
    float one = 1, zero = 0;
    const float factors[] = {1.0f, 0.7998046875f, 3.140625f, 0.0009765625f, 0.333251953125f,
                             1000.0f, -6.1035156e-05f};
    for (float f : factors) {
        _Float16 bf = _Float16(f);
        CHECK(float(bf) == f, "factor %g is not an f16 value", f);
        uint16_t bb;
        std::memcpy(&bb, &bf, 2);
        EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, 1, &one, a.data(),
                                   CUDA_R_16F, n, &bb, CUDA_R_16F, 1, &zero, out16.data(),
                                   CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      CUBLAS_STATUS_SUCCESS);
        sync();
        int bad = 0;
        for (int i = 0; i < n; i++) {
            _Float16 x;
            std::memcpy(&x, &a[i], 2);
            float prod = float(x) * f;  // exact: 11 x 11 significant bits
            _Float16 want = _Float16(prod);
            uint16_t wb;
            std::memcpy(&wb, &want, 2);
            bool ok = std::isnan(prod) ? ((out16[i] & 0x7c00) == 0x7c00 && (out16[i] & 0x3ff))
                                       : out16[i] == wb ||
                                             // a zero's sign: the accumulator starts at +0
                                             ((out16[i] | wb) & 0x7fff) == 0;
            if (!ok && bad++ < 3)
                CHECK(false, "f16 store: 0x%04x * %g -> 0x%04x, want 0x%04x", a[i], f, out16[i],
                      wb);
        }
        CHECK(bad == 0, "f16 store with factor %g: %d wrong", f, bad);
    }
    uint16_t one16 = 0x3c00;
    EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, 1, &one, a.data(), CUDA_R_16F,
                               n, &one16, CUDA_R_16F, 1, &zero, out32.data(), CUDA_R_32F, n,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    int bad = 0;
    for (int i = 0; i < n; i++) {
        _Float16 x;
        std::memcpy(&x, &a[i], 2);
        float want = float(x);
        bool ok = std::isnan(want) ? std::isnan(out32[i]) : out32[i] == want;
        if (!ok) bad++;
    }
    CHECK(bad == 0, "f16 load: %d of 65536 patterns wrong", bad);
}

// bf16 stores: every bf16 pattern times a few bf16 values (exact in f32), against the
// reference's frexp rounding where the result is a normal number.
static void test_bf16_conversions(cublasHandle_t h) {
    const int n = 65536;
    std::vector<uint16_t> a(n), out(n);
    for (int i = 0; i < n; i++) a[i] = uint16_t(i);
    float one = 1, zero = 0;
    const float factors[] = {1.0f, 0.75390625f, 3.140625f, 1.0078125f, -0.333984375f};
    for (float f : factors) {
        uint32_t fu;
        std::memcpy(&fu, &f, 4);
        CHECK((fu & 0xffff) == 0, "factor %g is not a bf16 value", f);
        uint16_t fb = uint16_t(fu >> 16);
        EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, 1, &one, a.data(),
                                   CUDA_R_16BF, n, &fb, CUDA_R_16BF, 1, &zero, out.data(),
                                   CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      CUBLAS_STATUS_SUCCESS);
        sync();
        int bad = 0, compared = 0;
        for (int i = 0; i < n; i++) {
            uint32_t xu = uint32_t(a[i]) << 16;
            float x;
            std::memcpy(&x, &xu, 4);
            float prod = x * f;  // exact: 8 x 8 significant bits
            double got = get(T::BF16, reinterpret_cast<unsigned char*>(&out[i]));
            bool ok;
            if (std::isnan(prod)) {
                ok = std::isnan(got);
            } else if (std::isinf(prod)) {
                ok = got == double(prod);
            } else if (std::fabs(prod) >= std::ldexp(1.0, -126) &&
                       std::fabs(prod) < std::ldexp(1.0, 127)) {
                ok = got == round_sig(prod, 8);
                compared++;
            } else {
                continue;  // subnormal or near overflow: not covered by the frexp reference
            }
            if (!ok && bad++ < 3)
                CHECK(false, "bf16 store: 0x%04x * %g -> %.9g, want %.9g", a[i], f, got,
                      round_sig(prod, 8));
        }
        CHECK(bad == 0 && compared > 50000, "bf16 store with factor %g: %d wrong of %d", f, bad,
              compared);
    }
}

// TF32 ties round to even; the f32 compute type does not round at all.
static void test_tf32_rounding(cublasHandle_t h) {
    const float xs[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f,
                        -(1.0f + 0x1p-11f + 0x1p-23f), 3.0e38f, 1.0f + 0x1p-12f};
    for (float x : xs) {
        float one = 1, zero = 0, b = 1, out = -1;
        EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, CUDA_R_32F, 1,
                                   &b, CUDA_R_32F, 1, &zero, &out, CUDA_R_32F, 1,
                                   CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                      CUBLAS_STATUS_SUCCESS);
        sync();
        double want = round_sig(x, 11);
        if (std::fabs(want) > 3.4028234663852886e38) want = std::copysign(INFINITY, want);
        CHECK(out == want, "tf32(%a) = %a, want %a", x, out, want);
        EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, CUDA_R_32F, 1,
                                   &b, CUDA_R_32F, 1, &zero, &out, CUDA_R_32F, 1,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      CUBLAS_STATUS_SUCCESS);
        sync();
        CHECK(out == x, "f32 compute changed %a to %a", x, out);
    }
    // The handle's TF32 math mode makes cublasSgemm use TF32, the pedantic compute type not.
    float x = 1.0f + 0x1p-11f + 0x1p-20f, one = 1, zero = 0, out = 0;
    EXPECT_STATUS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, 1, &one, 1,
                                 &zero, &out, 1),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    CHECK(out == float(round_sig(x, 11)), "TF32 math mode: %a, want %a", out, round_sig(x, 11));
    EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, CUDA_R_32F, 1,
                               &one, CUDA_R_32F, 1, &zero, &out, CUDA_R_32F, 1,
                               CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    CHECK(out == x, "pedantic compute under TF32 math mode: %a, want %a", out, x);
    EXPECT_STATUS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
}

// The 16F compute type accumulates in f16, rounded after every product: a sum of 4096 ones
// stops at 2048 (2048 + 1 rounds back to 2048), where an f32 accumulator would reach 4096.
static void test_f16_accumulation(cublasHandle_t h) {
    const int k = 4096;
    std::vector<uint16_t> ones(k, 0x3c00);
    uint16_t alpha = 0x3c00, beta = 0, out = 0;
    EXPECT_STATUS(cublasHgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, k, &alpha, ones.data(), k,
                              ones.data(), k, &beta, &out, 1),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    CHECK(out == 0x6800, "f16 accumulation of 4096 ones: 0x%04x, want 0x6800 (2048)", out);
    float one = 1, zero = 0;
    EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, k, &one, ones.data(),
                               CUDA_R_16F, k, ones.data(), CUDA_R_16F, k, &zero, &out,
                               CUDA_R_16F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    CHECK(out == 0x6c00, "f32 accumulation of 4096 f16 ones: 0x%04x, want 0x6c00 (4096)", out);
}

static void test_handles_and_streams() {
    cublasHandle_t h = nullptr;
    EXPECT_STATUS(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1);
    EXPECT_STATUS(cublasGetStream_v2(h, &s), CUBLAS_STATUS_SUCCESS);
    CHECK(s == nullptr, "a new handle is on the default (null) stream");
    cublasPointerMode_t pm = CUBLAS_POINTER_MODE_DEVICE;
    EXPECT_STATUS(cublasGetPointerMode_v2(h, &pm), CUBLAS_STATUS_SUCCESS);
    CHECK(pm == CUBLAS_POINTER_MODE_HOST, "a new handle is in host pointer mode");
    int version = 0;
    EXPECT_STATUS(cublasGetVersion_v2(h, &version), CUBLAS_STATUS_SUCCESS);
    CHECK(version >= 130000 && version < 140000, "version %d", version);
    CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE)) ==
              "CUBLAS_STATUS_INVALID_VALUE",
          "status name");
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0, 0, 0, 0};
    float alpha = 2, beta = 0;
#if WITH_DRIVER_STUBS
    // Queued on the handle's stream: the null stream first, then the one set.
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_SUCCESS);
    CHECK(g_queue.size() == 1 && g_queue.back().stream == nullptr, "queued on the null stream");
    cudaStream_t mine = reinterpret_cast<cudaStream_t>(0x5151);
    EXPECT_STATUS(cublasSetStream_v2(h, mine), CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_SUCCESS);
    CHECK(g_queue.size() == 2 && g_queue.back().stream == mine, "queued on the handle's stream");
    CHECK(c[0] == 0 && c[3] == 0, "C written before the stream ran");
    sync();
    CHECK(c[0] == 2 && c[1] == 4 && c[2] == 6 && c[3] == 8, "queued GEMM result");
    // Device pointer mode: alpha and beta are read when the GEMM runs, not at the call.
    EXPECT_STATUS(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_SUCCESS);
    alpha = 3;
    sync();
    CHECK(c[0] == 3 && c[3] == 12, "device pointer mode read alpha late: %g %g", c[0], c[3]);
    EXPECT_STATUS(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
    // Destroy synchronizes (runs the queue) and frees the workspace.
    CHECK(g_live_allocs == 1, "the handle holds one workspace allocation (%d)", g_live_allocs);
    c[0] = 0;
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    CHECK(g_queue.empty() && c[0] == 3, "destroy synchronized");
    CHECK(g_live_allocs == 0, "destroy freed the workspace (%d)", g_live_allocs);
    // A full device: creating a handle fails with ALLOC_FAILED and leaks nothing.
    g_fail_alloc = true;
    cublasHandle_t h2 = nullptr;
    EXPECT_STATUS(cublasCreate_v2(&h2), CUBLAS_STATUS_ALLOC_FAILED);
    CHECK(g_live_allocs == 0, "failed create leaked %d", g_live_allocs);
    g_fail_alloc = false;
#else
    EXPECT_STATUS(cublasSetStream_v2(h, reinterpret_cast<cudaStream_t>(0x5151)),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_SUCCESS);
    CHECK(c[0] == 2 && c[1] == 4 && c[2] == 6 && c[3] == 8, "synchronous GEMM without a driver");
    EXPECT_STATUS(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
#endif
    // A destroyed handle is not a handle any more.
    EXPECT_STATUS(cublasDestroy_v2(h), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasSetStream_v2(h, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta,
                                 c, 2),
                  CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasCreate_v2(nullptr), CUBLAS_STATUS_INVALID_VALUE);
}

struct Combo {
    Api api;
    T in, out;
    cublasComputeType_t compute;
};

static void test_gemms(cublasHandle_t h) {
    const Combo combos[] = {
        {Api::Sgemm, T::F32, T::F32, CUBLAS_COMPUTE_32F},
        {Api::SgemmStrided, T::F32, T::F32, CUBLAS_COMPUTE_32F},
        {Api::Dgemm, T::F64, T::F64, CUBLAS_COMPUTE_64F},
        {Api::DgemmStrided, T::F64, T::F64, CUBLAS_COMPUTE_64F},
        {Api::Hgemm, T::F16, T::F16, CUBLAS_COMPUTE_16F},
        {Api::GemmEx, T::F32, T::F32, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::F32, T::F32, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::F32, T::F32, CUBLAS_COMPUTE_32F_FAST_TF32},
        {Api::GemmStridedEx, T::F32, T::F32, CUBLAS_COMPUTE_32F_FAST_16F},
        {Api::GemmStridedEx, T::F32, T::F32, CUBLAS_COMPUTE_32F_FAST_16BF},
        {Api::GemmStridedEx, T::F16, T::F16, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::F16, T::F32, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::BF16, T::BF16, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::BF16, T::F32, CUBLAS_COMPUTE_32F},
        {Api::GemmStridedEx, T::F64, T::F64, CUBLAS_COMPUTE_64F},
        {Api::GemmEx, T::BF16, T::BF16, CUBLAS_COMPUTE_32F},
        {Api::GemmEx, T::F16, T::F16, CUBLAS_COMPUTE_16F},
    };
    const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 13}, {8, 1, 33}, {1, 6, 40}, {4, 4, 0}};
    int cases = 0;
    for (const Combo& co : combos)
        for (auto ta : ops)
            for (auto tb : ops)
                for (const auto& sh : shapes) {
                    Case c{};
                    c.api = co.api;
                    c.in = co.in;
                    c.out = co.out;
                    c.compute = co.compute;
                    c.ta = ta;
                    c.tb = tb;
                    c.m = sh[0];
                    c.n = sh[1];
                    c.k = sh[2];
                    c.pad_a = int(g_rng() % 3) * 2;  // 0, 2 or 4 rows of padding
                    c.pad_b = int(g_rng() % 3);
                    c.pad_c = int(g_rng() % 3) * 3;
                    c.batch = 1 + int(g_rng() % 3);
                    c.broadcast_a = g_rng() % 4 == 0;
                    switch (g_rng() % 4) {
                        case 0: c.alpha = 1, c.beta = 0; break;
                        case 1: c.alpha = 1, c.beta = 1; break;
                        case 2: c.alpha = 0.5, c.beta = -1.25; break;
                        default: c.alpha = -2, c.beta = 0, c.nan_c = true; break;
                    }
                    run_case(h, c);
                    cases++;
                }
    // alpha == 0: C = beta * C, and beta == 0 with a NaN C gives zeros.
    for (double beta : {0.0, 1.0, -0.5}) {
        Case c{Api::SgemmStrided, T::F32, T::F32, CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_T,
               5, 4, 3, 1, 1, 1, 2, false, 0.0, beta, beta == 0.0};
        run_case(h, c);
        cases++;
    }
    std::printf("  %d GEMM cases against the f64 reference\n", cases);
}

static void test_speed(cublasHandle_t h) {
    const int n = 512;
    std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
    for (auto& x : a) x = float(uniform(-1, 1));
    for (auto& x : b) x = float(uniform(-1, 1));
    float one = 1, zero = 0;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_STATUS(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), n,
                                 b.data(), n, &zero, c.data(), n),
                  CUBLAS_STATUS_SUCCESS);
    sync();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
    // Spot check a few outputs in f64.
    for (int t = 0; t < 5; t++) {
        int i = int(g_rng() % n), j = int(g_rng() % n);
        double want = 0, mag = 0;
        for (int p = 0; p < n; p++) {
            want += double(a[i + size_t(p) * n]) * b[p + size_t(j) * n];
            mag += std::fabs(double(a[i + size_t(p) * n]) * b[p + size_t(j) * n]);
        }
        CHECK(std::fabs(c[i + size_t(j) * n] - want) <= (n + 4) * 0x1p-24 * mag,
              "512^3 C(%d,%d) = %g, want %g", i, j, c[i + size_t(j) * n], want);
    }
    std::printf("  512x512x512 f32 GEMM: %.0f ms\n", ms);
}

int main() {
    std::printf("test_cublas (%s)\n",
                WITH_DRIVER_STUBS ? "queued on a stand-in cuLaunchHostFunc" : "no driver: synchronous");
    test_exports();
    test_handles_and_streams();
    cublasHandle_t h = nullptr;
    EXPECT_STATUS(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    test_validation(h);
    test_f16_conversions(h);
    test_bf16_conversions(h);
    test_tf32_rounding(h);
    test_f16_accumulation(h);
    test_gemms(h);
    test_speed(h);
    EXPECT_STATUS(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    std::printf("  %d checks, %d failed\n", g_checks, g_failures);
    if (g_failures) {
        std::printf("FAILED\n");
        return 1;
    }
    std::printf("ok\n");
    return 0;
}
