//! Calls the simulated `libcublas.so` through cudarc 0.19's `cublas::sys` bindings (the ABI
//! devtype uses), the way `src/backend/cuda/blas.rs` does, without a driver: the library then
//! runs each GEMM synchronously. Expects the library first on `LD_LIBRARY_PATH`.

use cudarc::cublas::sys::{self, cublasOperation_t::*, cublasStatus_t::*, cudaDataType};
use std::ffi::c_void;

fn to_bits(dt: cudaDataType, v: &[f32]) -> Vec<u16> {
    v.iter()
        .map(|&x| match dt {
            cudaDataType::CUDA_R_16F => half::f16::from_f32(x).to_bits(),
            _ => half::bf16::from_f32(x).to_bits(),
        })
        .collect()
}

fn from_bits(dt: cudaDataType, v: &[u16]) -> Vec<f32> {
    v.iter()
        .map(|&x| match dt {
            cudaDataType::CUDA_R_16F => half::f16::from_bits(x).to_f32(),
            _ => half::bf16::from_bits(x).to_f32(),
        })
        .collect()
}

fn main() {
    // SAFETY: every pointer handed to cuBLAS points to a live local array at least as large as
    // the matrices its dimensions, leading dimensions and strides describe; without a driver
    // the simulated library runs each GEMM before returning.
    unsafe {
        assert!(sys::is_culib_present(), "libcublas.so not found");
        let mut h: sys::cublasHandle_t = std::ptr::null_mut();
        assert_eq!(sys::cublasCreate_v2(&mut h), CUBLAS_STATUS_SUCCESS);
        assert_eq!(
            sys::cublasSetStream_v2(h, std::ptr::null_mut()),
            CUBLAS_STATUS_SUCCESS
        );
        // Row-major [2,3] @ [3,2] as devtype computes it: column-major C^T = B^T A^T.
        let a = [1f32, 2., 3., 4., 5., 6.];
        let b = [7f32, 8., 9., 10., 11., 12.];
        let want = [58f32, 64., 139., 154.];
        let (one, zero) = (1f32, 0f32);
        let mut c = [f32::NAN; 4];
        let s = sys::cublasSgemmStridedBatched(
            h,
            CUBLAS_OP_N,
            CUBLAS_OP_N,
            2,
            2,
            3,
            &one,
            b.as_ptr(),
            2,
            6,
            a.as_ptr(),
            3,
            6,
            &zero,
            c.as_mut_ptr(),
            2,
            4,
            1,
        );
        assert_eq!(s, CUBLAS_STATUS_SUCCESS);
        assert_eq!(c, want);

        let ad: Vec<f64> = a.iter().map(|&x| x as f64).collect();
        let bd: Vec<f64> = b.iter().map(|&x| x as f64).collect();
        let (oned, zerod) = (1f64, 0f64);
        let mut cd = [f64::NAN; 4];
        let s = sys::cublasDgemmStridedBatched(
            h,
            CUBLAS_OP_N,
            CUBLAS_OP_N,
            2,
            2,
            3,
            &oned,
            bd.as_ptr(),
            2,
            6,
            ad.as_ptr(),
            3,
            6,
            &zerod,
            cd.as_mut_ptr(),
            2,
            4,
            1,
        );
        assert_eq!(s, CUBLAS_STATUS_SUCCESS);
        assert_eq!(cd, [58., 64., 139., 154.]);

        // B given as its transpose (stored [2,3]) with the T flag; f16 and bf16 through Ex.
        let bt = [7f32, 9., 11., 8., 10., 12.];
        for dt in [cudaDataType::CUDA_R_16BF, cudaDataType::CUDA_R_16F] {
            let (ah, bh) = (to_bits(dt, &a), to_bits(dt, &bt));
            let mut ch = [0u16; 4];
            let s = sys::cublasGemmStridedBatchedEx(
                h,
                CUBLAS_OP_T,
                CUBLAS_OP_N,
                2,
                2,
                3,
                (&one as *const f32).cast(),
                bh.as_ptr() as *const c_void,
                dt,
                3,
                6,
                ah.as_ptr() as *const c_void,
                dt,
                3,
                6,
                (&zero as *const f32).cast(),
                ch.as_mut_ptr() as *mut c_void,
                dt,
                2,
                4,
                1,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            );
            assert_eq!(s, CUBLAS_STATUS_SUCCESS);
            assert_eq!(from_bits(dt, &ch), want, "{dt:?}");
        }

        // TF32 compute: 1 + 2^-11 + 2^-20 rounds to 1 + 2^-10.
        let x = [1.0f32 + 2f32.powi(-11) + 2f32.powi(-20)];
        let mut y = [0f32];
        let s = sys::cublasGemmStridedBatchedEx(
            h,
            CUBLAS_OP_N,
            CUBLAS_OP_N,
            1,
            1,
            1,
            (&one as *const f32).cast(),
            x.as_ptr().cast(),
            cudaDataType::CUDA_R_32F,
            1,
            1,
            [1f32].as_ptr().cast(),
            cudaDataType::CUDA_R_32F,
            1,
            1,
            (&zero as *const f32).cast(),
            y.as_mut_ptr().cast(),
            cudaDataType::CUDA_R_32F,
            1,
            1,
            1,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        );
        assert_eq!(s, CUBLAS_STATUS_SUCCESS);
        assert_eq!(y[0], 1.0 + 2f32.powi(-10));

        // Statuses come back as cudarc's enum: lda 1 < m 2.
        let s = sys::cublasSgemmStridedBatched(
            h,
            CUBLAS_OP_N,
            CUBLAS_OP_N,
            2,
            2,
            3,
            &one,
            b.as_ptr(),
            1,
            6,
            a.as_ptr(),
            3,
            6,
            &zero,
            c.as_mut_ptr(),
            2,
            4,
            1,
        );
        assert_eq!(s, CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(sys::cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
        assert_eq!(sys::cublasDestroy_v2(h), CUBLAS_STATUS_NOT_INITIALIZED);
    }
    println!("cudarc ABI check: ok");
}
