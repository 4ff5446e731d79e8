// Simulated libcublas.so: the GEMM entry points devtype and cudarc call, computed in plain
// loops on the host, queued in order on the handle's stream of the simulated CUDA driver.
//
// Device pointers of the simulated driver are host addresses, so a GEMM reads and writes them
// directly. Like the real library, a call only validates its arguments and queues the work:
// it is enqueued with the driver's `cuLaunchHostFunc` on the handle's stream (resolved at run
// time from the already loaded libcuda.so), with every argument copied into a heap job that
// the callback frees. Without a driver that exports `cuLaunchHostFunc` it runs synchronously.
//
// Numbers: products summed one after another in the compute type's accumulator (f32 for the
// 32F compute types, f64 for 64F, f16 rounded after every step for 16F), then
// `alpha * sum + beta * C` in that precision, rounded once to C's type (round to nearest
// even); for a 16-bit C with beta != 0, `alpha * sum` is rounded to C's type first, then
// `beta * C` added and rounded again, as cuBLAS 13 did on an H200 for most shapes (a
// 256x512x128 f16 product with beta = 1 differed from the once-rounded result in 26% of its
// elements; a 65x129x33 one in none), so code that needs one rounding cannot pass here by
// luck. TF32 compute rounds each input to a 10-bit mantissa first (round to nearest even).
// beta == 0 means C is not read (a NaN there does not leak), as in cuBLAS.
#include "cublas_sim.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------
// 16-bit float formats (bit patterns), round to nearest even.

float bits_to_f32(uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

uint32_t f32_to_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0) {
        // Zero or subnormal: m * 2^-24, exact in f32.
        float v = std::ldexp(float(m), -24);
        return sign ? -v : v;
    }
    if (e == 31) return bits_to_f32(sign | 0x7f800000u | (m << 13));
    return bits_to_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t f32_to_f16(float f) {
    uint32_t x = f32_to_bits(f);
    uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN
    if (ax >= 0x47800000u) return uint16_t(sign | 0x7c00u);  // >= 65536 (and inf): inf
    if (ax < 0x38800000u) {
        // Below the smallest normal f16 (2^-14): a subnormal m * 2^-24, or zero.
        if (ax < 0x33000000u) return sign;  // below 2^-25: rounds to zero
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;  // 14..24
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return uint16_t(sign | r);
    }
    uint32_t r = (ax - 0x38000000u) >> 13;  // exponent rebiased from 127 to 15
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;  // may carry into inf: correct
    return uint16_t(sign | r);
}

float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
}

// TensorFloat-32: f32 with a 10-bit mantissa (round to nearest even); NaN and inf unchanged.
float round_tf32(float f) {
    uint32_t x = f32_to_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u) return f;
    x += 0xfffu + ((x >> 13) & 1u);
    return bits_to_f32(x & ~0x1fffu);
}

float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }
float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

// ---------------------------------------------------------------------------------------------
// The simulated driver's functions, found at run time.

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*HostFn)(void*);

struct Driver {
    CUresult (*launch_host_func)(cudaStream_t, HostFn, void*) = nullptr;
    CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
    CUresult (*mem_free)(CUdeviceptr) = nullptr;
    CUresult (*ctx_get_current)(void**) = nullptr;
    CUresult (*ctx_set_current)(void*) = nullptr;
    CUresult (*ctx_synchronize)() = nullptr;
    CUresult (*stream_is_capturing)(cudaStream_t, int*) = nullptr;
};

void* find(const char* name) {
    // cudarc opens libcuda.so with RTLD_LOCAL, so its symbols are not global: look in the
    // already loaded library first (RTLD_NOLOAD never loads a new one), then globally.
    static const char* const libs[] = {"libcuda.so", "libcuda.so.1"};
    for (const char* lib : libs) {
        if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
            if (void* s = dlsym(h, name)) return s;
        }
    }
    return dlsym(RTLD_DEFAULT, name);
}

template <typename F>
void resolve(F& f, const char* name) {
    f = reinterpret_cast<F>(find(name));
}

std::mutex g_driver_mu;
Driver g_driver;
bool g_driver_found = false;

// Resolved when the first handle is created (cudarc loads the driver first, and a handle is
// only created once a stream exists); until then every field is null.
Driver driver(bool refresh) {
    std::lock_guard<std::mutex> lock(g_driver_mu);
    if (refresh && !g_driver_found) {
        Driver d;
        resolve(d.launch_host_func, "cuLaunchHostFunc");
        resolve(d.mem_alloc, "cuMemAlloc_v2");
        resolve(d.mem_free, "cuMemFree_v2");
        resolve(d.ctx_get_current, "cuCtxGetCurrent");
        resolve(d.ctx_set_current, "cuCtxSetCurrent");
        resolve(d.ctx_synchronize, "cuCtxSynchronize");
        resolve(d.stream_is_capturing, "cuStreamIsCapturing");
        g_driver = d;
        g_driver_found = d.launch_host_func != nullptr;
    }
    return g_driver;
}

// ---------------------------------------------------------------------------------------------
// Handles.

// cuBLAS's default workspace on pre-Hopper GPUs, allocated by cublasCreate from the current
// context (so creating a handle on a full device fails with ALLOC_FAILED, as it does there).
constexpr size_t kWorkspaceBytes = 4u << 20;

struct Handle {
    cudaStream_t stream = nullptr;
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
    cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
    CUdeviceptr workspace = 0;
    void* context = nullptr;
};

std::mutex g_handles_mu;
// Live handles: a null, destroyed or foreign handle is NOT_INITIALIZED instead of a crash.
std::unordered_map<cublasContext*, Handle*> g_handles;

// Copies the state of a live handle; false if `h` is not one.
bool lookup(cublasHandle_t h, Handle* out) {
    if (h == nullptr) return false;
    std::lock_guard<std::mutex> lock(g_handles_mu);
    auto it = g_handles.find(h);
    if (it == g_handles.end()) return false;
    *out = *it->second;
    return true;
}

template <typename F>
cublasStatus_t with_handle(cublasHandle_t h, F f) {
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    std::lock_guard<std::mutex> lock(g_handles_mu);
    auto it = g_handles.find(h);
    if (it == g_handles.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return f(*it->second);
}

// ---------------------------------------------------------------------------------------------
// GEMM jobs.

enum class Compute {
    F32,        // f32 accumulation, inputs as given
    F32_TF32,   // inputs rounded to TF32, f32 accumulation
    F32_F16,    // inputs rounded to f16, f32 accumulation
    F32_BF16,   // inputs rounded to bf16, f32 accumulation
    F16,        // f16 accumulation (rounded after every step)
    F64,        // f64 accumulation
};

enum class Scale { F16, F32, F64 };

struct Job {
    int transa, transb;
    int64_t m, n, k;
    const void* A;
    int64_t lda, strideA;
    const void* B;
    int64_t ldb, strideB;
    void* C;
    int64_t ldc, strideC;
    int64_t batch;
    cudaDataType at, bt, ct;
    Compute compute;
    Scale scale;
    double alpha, beta;  // exact copies of the host scalars (host pointer mode)
    const void* alpha_ptr;  // device pointer mode: read when the job runs
    const void* beta_ptr;
};

double read_scalar(const void* p, Scale s) {
    switch (s) {
        case Scale::F16: return f16_to_f32(*static_cast<const uint16_t*>(p));
        case Scale::F32: return *static_cast<const float*>(p);
        case Scale::F64: return *static_cast<const double*>(p);
    }
    return 0;
}

template <typename Acc>
Acc load(const void* base, cudaDataType t, int64_t i) {
    switch (t) {
        case CUDA_R_32F: return Acc(static_cast<const float*>(base)[i]);
        case CUDA_R_64F: return Acc(static_cast<const double*>(base)[i]);
        case CUDA_R_16F: return Acc(f16_to_f32(static_cast<const uint16_t*>(base)[i]));
        case CUDA_R_16BF: return Acc(bf16_to_f32(static_cast<const uint16_t*>(base)[i]));
        default: return Acc(0);
    }
}

template <typename Acc>
void store(void* base, cudaDataType t, int64_t i, Acc v) {
    switch (t) {
        case CUDA_R_32F: static_cast<float*>(base)[i] = float(v); break;
        case CUDA_R_64F: static_cast<double*>(base)[i] = double(v); break;
        case CUDA_R_16F: static_cast<uint16_t*>(base)[i] = f32_to_f16(float(v)); break;
        case CUDA_R_16BF: static_cast<uint16_t*>(base)[i] = f32_to_bf16(float(v)); break;
        default: break;
    }
}

template <typename Acc>
Acc round_input(Acc v, Compute c) {
    switch (c) {
        case Compute::F32_TF32: return Acc(round_tf32(float(v)));
        case Compute::F32_F16: return Acc(round_f16(float(v)));
        case Compute::F32_BF16: return Acc(round_bf16(float(v)));
        default: return v;
    }
}

// op(X) as a dense rows x k array, row r contiguous: packed[r * k + p] = op(X)[r, p] for A
// (rows = m), or op(B)[p, r] for B (rows = n), so that every output is a contiguous dot product.
template <typename Acc>
void pack(std::vector<Acc>& out, const void* base, cudaDataType t, int64_t ld, bool contiguous_k,
          int64_t rows, int64_t k, Compute c) {
    out.resize(size_t(rows * k));
    if (contiguous_k) {
        // Element (r, p) at base[p + r * ld].
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < k; p++)
                out[size_t(r * k + p)] = round_input(load<Acc>(base, t, p + r * ld), c);
    } else {
        // Element (r, p) at base[r + p * ld].
        for (int64_t p = 0; p < k; p++)
            for (int64_t r = 0; r < rows; r++)
                out[size_t(r * k + p)] = round_input(load<Acc>(base, t, r + p * ld), c);
    }
}

template <typename Acc, bool kRoundF16>
void run_typed(const Job& j, double alpha_d, double beta_d) {
    const Acc alpha = Acc(alpha_d), beta = Acc(beta_d);
    const size_t at_size = (j.at == CUDA_R_64F) ? 8 : (j.at == CUDA_R_32F) ? 4 : 2;
    const size_t bt_size = (j.bt == CUDA_R_64F) ? 8 : (j.bt == CUDA_R_32F) ? 4 : 2;
    const size_t ct_size = (j.ct == CUDA_R_64F) ? 8 : (j.ct == CUDA_R_32F) ? 4 : 2;
    const bool scale_only = alpha_d == 0.0 || j.k == 0;
    std::vector<Acc> pa, pb;
    for (int64_t b = 0; b < j.batch; b++) {
        const char* A = static_cast<const char*>(j.A) + b * j.strideA * int64_t(at_size);
        const char* B = static_cast<const char*>(j.B) + b * j.strideB * int64_t(bt_size);
        char* C = static_cast<char*>(j.C) + b * j.strideC * int64_t(ct_size);
        if (scale_only) {
            // C = beta * C; A and B are not read (reference BLAS semantics).
            for (int64_t col = 0; col < j.n; col++)
                for (int64_t row = 0; row < j.m; row++) {
                    int64_t at = row + col * j.ldc;
                    Acc v = beta_d == 0.0 ? Acc(0) : beta * load<Acc>(C, j.ct, at);
                    if (kRoundF16) v = Acc(round_f16(float(v)));
                    store<Acc>(C, j.ct, at, v);
                }
            continue;
        }
        // op(A)[i, p] is A[i + p * lda] for N, A[p + i * lda] for T and C (real types).
        pack(pa, A, j.at, j.lda, j.transa != CUBLAS_OP_N, j.m, j.k, j.compute);
        // op(B)[p, c] is B[p + c * ldb] for N, B[c + p * ldb] for T and C.
        pack(pb, B, j.bt, j.ldb, j.transb == CUBLAS_OP_N, j.n, j.k, j.compute);
        for (int64_t col = 0; col < j.n; col++) {
            const Acc* bcol = pb.data() + col * j.k;
            for (int64_t row = 0; row < j.m; row++) {
                const Acc* arow = pa.data() + row * j.k;
                Acc acc = 0;
                for (int64_t p = 0; p < j.k; p++) {
                    acc += arow[p] * bcol[p];
                    if (kRoundF16) acc = Acc(round_f16(float(acc)));
                }
                int64_t at = row + col * j.ldc;
                Acc v = alpha * acc;
                if (beta_d != 0.0) {
                    if (j.ct == CUDA_R_16F) v = Acc(round_f16(float(v)));
                    if (j.ct == CUDA_R_16BF) v = Acc(round_bf16(float(v)));
                    v += beta * load<Acc>(C, j.ct, at);
                }
                if (kRoundF16) v = Acc(round_f16(float(v)));
                store<Acc>(C, j.ct, at, v);
            }
        }
    }
}

void run(const Job& j) {
    double alpha = j.alpha, beta = j.beta;
    if (j.alpha_ptr) alpha = read_scalar(j.alpha_ptr, j.scale);
    if (j.beta_ptr) beta = read_scalar(j.beta_ptr, j.scale);
    try {
        switch (j.compute) {
            case Compute::F64: run_typed<double, false>(j, alpha, beta); break;
            case Compute::F16: run_typed<float, true>(j, alpha, beta); break;
            default: run_typed<float, false>(j, alpha, beta); break;
        }
    } catch (const std::bad_alloc&) {
        // A host callback cannot report an error: stop loudly rather than lose the result.
        std::fprintf(stderr, "simulated cuBLAS: out of host memory in a queued GEMM\n");
        std::abort();
    }
}

void run_and_free(void* p) {
    Job* j = static_cast<Job*>(p);
    run(*j);
    delete j;
}

// A GEMM queued during a stream capture runs at every replay of the graph (as cuBLAS's kernel
// nodes do, with their arguments copied into the graph): its job is the graph's and is kept.
void run_kept(void* p) { run(*static_cast<Job*>(p)); }

bool known_compute(int c) {
    return (c >= CUBLAS_COMPUTE_16F && c <= CUBLAS_COMPUTE_32F_FAST_16BF &&
            c != 66 && c != 67) ||
           c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_EMULATED_16BFX9 ||
           c == CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
}

bool known_algo(int a) {
    return (a >= -1 && a <= 23) || (a >= 99 && a <= 115) || a == CUBLAS_GEMM_AUTOTUNE;
}

// The (compute, scale type) for these types, or false when cuBLAS does not support the
// combination (CUBLAS_STATUS_NOT_SUPPORTED).
bool plan(cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t ctype,
          cublasMath_t math, Compute* compute, Scale* scale) {
    if (at != bt) return false;
    switch (ctype) {
        case CUBLAS_COMPUTE_16F:
        case CUBLAS_COMPUTE_16F_PEDANTIC:
            if (at != CUDA_R_16F || ct != CUDA_R_16F) return false;
            *compute = Compute::F16;
            *scale = Scale::F16;
            return true;
        case CUBLAS_COMPUTE_32F:
        case CUBLAS_COMPUTE_32F_PEDANTIC:
            *scale = Scale::F32;
            *compute = Compute::F32;
            if (at == CUDA_R_32F && ct == CUDA_R_32F) {
                // The handle's math mode may allow TF32 for f32 (not in the pedantic mode).
                if (ctype == CUBLAS_COMPUTE_32F &&
                    (int(math) & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH)
                    *compute = Compute::F32_TF32;
                return true;
            }
            if (at == CUDA_R_16F) return ct == CUDA_R_16F || ct == CUDA_R_32F;
            if (at == CUDA_R_16BF) return ct == CUDA_R_16BF || ct == CUDA_R_32F;
            return false;
        case CUBLAS_COMPUTE_32F_FAST_TF32:
        case CUBLAS_COMPUTE_32F_FAST_16F:
        case CUBLAS_COMPUTE_32F_FAST_16BF:
            if (at != CUDA_R_32F || ct != CUDA_R_32F) return false;
            *scale = Scale::F32;
            *compute = ctype == CUBLAS_COMPUTE_32F_FAST_TF32  ? Compute::F32_TF32
                       : ctype == CUBLAS_COMPUTE_32F_FAST_16F ? Compute::F32_F16
                                                              : Compute::F32_BF16;
            return true;
        case CUBLAS_COMPUTE_64F:
        case CUBLAS_COMPUTE_64F_PEDANTIC:
            if (at != CUDA_R_64F || ct != CUDA_R_64F) return false;
            *compute = Compute::F64;
            *scale = Scale::F64;
            return true;
        default:
            return false;  // integer and emulated compute types are not simulated
    }
}

// Validates like cuBLAS, then queues the GEMM on the handle's stream.
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int64_t m, int64_t n, int64_t k, const void* alpha, const void* A,
                    cudaDataType at, int64_t lda, long long strideA, const void* B,
                    cudaDataType bt, int64_t ldb, long long strideB, const void* beta, void* C,
                    cudaDataType ct, int64_t ldc, long long strideC, int64_t batch,
                    cublasComputeType_t ctype, cublasGemmAlgo_t algo) {
    Handle h;
    if (!lookup(handle, &h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    auto valid_op = [](int op) {
        return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
    };
    if (!valid_op(transa) || !valid_op(transb)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int64_t a_rows = transa == CUBLAS_OP_N ? m : k;
    int64_t b_rows = transb == CUBLAS_OP_N ? k : n;
    if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (!known_compute(ctype) || !known_algo(algo)) return CUBLAS_STATUS_INVALID_VALUE;
    Compute compute;
    Scale scale;
    if (!plan(at, bt, ct, ctype, h.math_mode, &compute, &scale))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;

    Job* j = new (std::nothrow) Job{};
    if (j == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    *j = Job{int(transa), int(transb), m, n, k, A, lda, strideA, B, ldb, strideB, C, ldc,
             strideC, batch, at, bt, ct, compute, scale, 0.0, 0.0, nullptr, nullptr};
    if (h.pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
        j->alpha_ptr = alpha;
        j->beta_ptr = beta;
    } else {
        j->alpha = read_scalar(alpha, scale);
        j->beta = read_scalar(beta, scale);
        if ((j->alpha == 0.0 || k == 0) && j->beta == 1.0) {
            delete j;  // C is unchanged: nothing to queue
            return CUBLAS_STATUS_SUCCESS;
        }
    }
    Driver d = driver(false);
    if (d.launch_host_func == nullptr) {
        run_and_free(j);
        return CUBLAS_STATUS_SUCCESS;
    }
    int capturing = 0;
    if (d.stream_is_capturing && d.stream_is_capturing(h.stream, &capturing) != 0) capturing = 0;
    if (d.launch_host_func(h.stream, capturing ? run_kept : run_and_free, j) != 0) {
        delete j;
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

const char* status_name(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "<unknown>";
}

const char* status_string(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "success";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
        case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
        case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
        case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
        case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
    }
    return "<unknown>";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Exported API.

EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
    if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    Driver d = driver(true);
    Handle* h = new (std::nothrow) Handle{};
    if (h == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    if (d.ctx_get_current) d.ctx_get_current(&h->context);
    if (d.mem_alloc) {
        CUresult r = d.mem_alloc(&h->workspace, kWorkspaceBytes);
        if (r != 0) {
            delete h;
            return r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */ ? CUBLAS_STATUS_ALLOC_FAILED
                                                         : CUBLAS_STATUS_NOT_INITIALIZED;
        }
    }
    // The handle's address is the key; the opaque type is never dereferenced.
    cublasHandle_t key = reinterpret_cast<cublasHandle_t>(h);
    {
        std::lock_guard<std::mutex> lock(g_handles_mu);
        g_handles[key] = h;
    }
    *handle = key;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    Handle* h = nullptr;
    {
        std::lock_guard<std::mutex> lock(g_handles_mu);
        auto it = handle ? g_handles.find(handle) : g_handles.end();
        if (it == g_handles.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
        h = it->second;
        g_handles.erase(it);
    }
    // cublasDestroy synchronizes the device (documented), then frees the workspace, both on the
    // context the handle was created in.
    Driver d = driver(false);
    void* previous = nullptr;
    bool switched = false;
    if (h->context && d.ctx_get_current && d.ctx_set_current &&
        d.ctx_get_current(&previous) == 0 && previous != h->context)
        switched = d.ctx_set_current(h->context) == 0;
    if (d.ctx_synchronize) d.ctx_synchronize();
    if (h->workspace && d.mem_free) d.mem_free(h->workspace);
    if (switched) d.ctx_set_current(previous);
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
    if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    (void)handle;  // cuBLAS answers without a handle too
    *version = 130000;
    return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
    if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
        case MAJOR_VERSION: *value = 13; return CUBLAS_STATUS_SUCCESS;
        case MINOR_VERSION: *value = 0; return CUBLAS_STATUS_SUCCESS;
        case PATCH_LEVEL: *value = 0; return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

EXPORT size_t cublasGetCudartVersion(void) { return 13000; }

EXPORT const char* cublasGetStatusName(cublasStatus_t status) { return status_name(status); }

EXPORT const char* cublasGetStatusString(cublasStatus_t status) {
    return status_string(status);
}

EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    return with_handle(handle, [&](Handle& h) {
        h.stream = stream;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
    if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        *stream = h.stream;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                            size_t bytes) {
    // The simulated GEMM needs no workspace; the user's buffer is accepted and unused.
    (void)workspace;
    (void)bytes;
    return with_handle(handle, [](Handle&) { return CUBLAS_STATUS_SUCCESS; });
}

EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        h.pointer_mode = mode;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        *mode = h.pointer_mode;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    int base = int(mode) & ~int(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
        base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
        base != CUBLAS_FP32_EMULATED_BF16X9_MATH && base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        h.math_mode = mode;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        *mode = h.math_mode;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
    return with_handle(handle, [&](Handle& h) {
        h.atomics = mode;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return with_handle(handle, [&](Handle& h) {
        *mode = h.atomics;
        return CUBLAS_STATUS_SUCCESS;
    });
}

EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                     cublasOperation_t transb, int m, int n, int k,
                                     const float* alpha, const float* A, int lda, const float* B,
                                     int ldb, const float* beta, float* C, int ldc) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F,
                ldb, 0, beta, C, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                     cublasOperation_t transb, int m, int n, int k,
                                     const double* alpha, const double* A, int lda,
                                     const double* B, int ldb, const double* beta, double* C,
                                     int ldc) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_64F, lda, 0, B, CUDA_R_64F,
                ldb, 0, beta, C, CUDA_R_64F, ldc, 0, 1, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k,
                                  const cublas_half_bits* alpha, const cublas_half_bits* A,
                                  int lda, const cublas_half_bits* B, int ldb,
                                  const cublas_half_bits* beta, cublas_half_bits* C, int ldc) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_16F, lda, 0, B, CUDA_R_16F,
                ldb, 0, beta, C, CUDA_R_16F, ldc, 0, 1, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float* alpha, const float* A, int lda,
                                                long long strideA, const float* B, int ldb,
                                                long long strideB, const float* beta, float* C,
                                                int ldc, long long strideC, int batchCount) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, strideA, B,
                CUDA_R_32F, ldb, strideB, beta, C, CUDA_R_32F, ldc, strideC, batchCount,
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const double* alpha, const double* A, int lda,
                                                long long strideA, const double* B, int ldb,
                                                long long strideB, const double* beta, double* C,
                                                int ldc, long long strideC, int batchCount) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_64F, lda, strideA, B,
                CUDA_R_64F, ldb, strideB, beta, C, CUDA_R_64F, ldc, strideC, batchCount,
                CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasHgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const cublas_half_bits* alpha, const cublas_half_bits* A, int lda, long long strideA,
    const cublas_half_bits* B, int ldb, long long strideB, const cublas_half_bits* beta,
    cublas_half_bits* C, int ldc, long long strideC, int batchCount) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, CUDA_R_16F, lda, strideA, B,
                CUDA_R_16F, ldb, strideB, beta, C, CUDA_R_16F, ldc, strideC, batchCount,
                CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);
}

EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k,
                                   const void* alpha, const void* A, cudaDataType Atype, int lda,
                                   const void* B, cudaDataType Btype, int ldb, const void* beta,
                                   void* C, cudaDataType Ctype, int ldc,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta,
                C, Ctype, ldc, 0, 1, computeType, algo);
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA,
    const void* B, cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    return gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}
