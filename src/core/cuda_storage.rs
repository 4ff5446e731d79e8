//! Device memory of a tensor, one variant per element type.

use crate::core::{DType, Element};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use std::sync::atomic::{AtomicU64, Ordering};

/// The values of a CUDA tensor, in the device's memory.
///
/// Dropping it frees the memory in stream order (`cuMemFreeAsync` on the device's stream, so
/// after every kernel already queued that reads it) and updates the device's
/// [`memory_allocated`](super::memory_allocated).
pub(crate) enum CudaStorage {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    I64(CudaSlice<i64>),
    Bool(CudaSlice<bool>),
    F16(CudaSlice<half::f16>),
    BF16(CudaSlice<half::bf16>),
}

impl CudaStorage {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            CudaStorage::F32(_) => DType::F32,
            CudaStorage::F64(_) => DType::F64,
            CudaStorage::I64(_) => DType::I64,
            CudaStorage::Bool(_) => DType::Bool,
            CudaStorage::F16(_) => DType::F16,
            CudaStorage::BF16(_) => DType::BF16,
        }
    }

    /// The GPU this memory is on.
    pub(crate) fn ordinal(&self) -> usize {
        match self {
            CudaStorage::F32(s) => s.ordinal(),
            CudaStorage::F64(s) => s.ordinal(),
            CudaStorage::I64(s) => s.ordinal(),
            CudaStorage::Bool(s) => s.ordinal(),
            CudaStorage::F16(s) => s.ordinal(),
            CudaStorage::BF16(s) => s.ordinal(),
        }
    }

    /// Bytes held.
    pub(crate) fn num_bytes(&self) -> usize {
        match self {
            CudaStorage::F32(s) => s.num_bytes(),
            CudaStorage::F64(s) => s.num_bytes(),
            CudaStorage::I64(s) => s.num_bytes(),
            CudaStorage::Bool(s) => s.num_bytes(),
            CudaStorage::F16(s) => s.num_bytes(),
            CudaStorage::BF16(s) => s.num_bytes(),
        }
    }

    /// The device address of the first element.
    pub(crate) fn device_ptr(&self) -> u64 {
        match self {
            CudaStorage::F32(s) => slice_ptr(s),
            CudaStorage::F64(s) => slice_ptr(s),
            CudaStorage::I64(s) => slice_ptr(s),
            CudaStorage::Bool(s) => slice_ptr(s),
            CudaStorage::F16(s) => slice_ptr(s),
            CudaStorage::BF16(s) => slice_ptr(s),
        }
    }
}

/// The device address of a buffer's first element.
pub(crate) fn slice_ptr<T>(s: &CudaSlice<T>) -> u64 {
    // Event tracking is off on every devtype context (see `context.rs`), so the guard records
    // nothing and can be dropped at once.
    let (p, _guard) = s.device_ptr(s.stream());
    p
}

impl CudaStorage {
    fn context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        match self {
            CudaStorage::F32(s) => s.context(),
            CudaStorage::F64(s) => s.context(),
            CudaStorage::I64(s) => s.context(),
            CudaStorage::Bool(s) => s.context(),
            CudaStorage::F16(s) => s.context(),
            CudaStorage::BF16(s) => s.context(),
        }
    }
}

impl Drop for CudaStorage {
    fn drop(&mut self) {
        on_free(self.ordinal(), self.num_bytes());
        // The buffer is freed (`cuMemFreeAsync`) when the field drops right after this; the last
        // handle may go away on a thread that never ran a CUDA op, so make the buffer's context
        // current there first. Setting it directly (not `bind_to_thread`) keeps any error cudarc
        // recorded for the next op to report.
        let ctx = self.context().cu_ctx();
        if cudarc::driver::result::ctx::get_current().ok().flatten() != Some(ctx) {
            // SAFETY: `ctx` is the live context that owns this buffer (its `Arc` is held by the
            // buffer's stream); making it current only changes this thread's current context.
            let _ = unsafe { cudarc::driver::result::ctx::set_current(ctx) };
        }
    }
}

/// An element type that lives in CUDA memory: the link between `E` and its storage variant
/// and kernel name suffix.
pub(crate) trait CudaElement: Element + DeviceRepr + ValidAsZeroBits {
    /// The kernel name suffix: `f32`, `f64`, `i64`, `bool`, `f16`, `bf16`.
    const SUFFIX: &'static str;
    /// The storage variant of this type.
    fn variant(slice: CudaSlice<Self>) -> CudaStorage;

    /// Wraps device memory of this type as tensor storage, counting its bytes in
    /// [`memory_allocated`](super::memory_allocated) until the storage is dropped.
    fn wrap(slice: CudaSlice<Self>) -> CudaStorage {
        on_alloc(slice.ordinal(), slice.num_bytes());
        Self::variant(slice)
    }
}

impl CudaElement for f32 {
    const SUFFIX: &'static str = "f32";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::F32(slice)
    }
}
impl CudaElement for f64 {
    const SUFFIX: &'static str = "f64";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::F64(slice)
    }
}
impl CudaElement for i64 {
    const SUFFIX: &'static str = "i64";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::I64(slice)
    }
}
impl CudaElement for bool {
    const SUFFIX: &'static str = "bool";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::Bool(slice)
    }
}
impl CudaElement for half::f16 {
    const SUFFIX: &'static str = "f16";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::F16(slice)
    }
}
impl CudaElement for half::bf16 {
    const SUFFIX: &'static str = "bf16";
    fn variant(slice: CudaSlice<Self>) -> CudaStorage {
        CudaStorage::BF16(slice)
    }
}

/// The kernel name suffix of a dtype.
pub(crate) fn suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I64 => "i64",
        DType::Bool => "bool",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
    }
}

/// Runs `$body` with `$T` bound to the Rust type of a [`DType`](crate::core::DType) (`$op`
/// names the op in errors; every dtype has a CUDA storage type, so none is returned here).
macro_rules! with_dtype {
    ($dtype:expr, $op:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::core::DType::F16 => {
                #[allow(dead_code)]
                type $T = half::f16;
                $body
            }
            $crate::core::DType::BF16 => {
                #[allow(dead_code)]
                type $T = half::bf16;
                $body
            }
            $crate::core::DType::F32 => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::core::DType::F64 => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            $crate::core::DType::I64 => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::core::DType::Bool => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;

/// Runs `$body` with `$data` bound to the slice of a host storage and `$T` to its element type
/// (`$op` names the op in errors; every host storage can go to a GPU).
macro_rules! with_host_slice {
    ($storage:expr, $op:expr, |$data:ident : $T:ident| $body:expr) => {
        match $storage {
            $crate::core::cpu_storage::CpuStorage::F32($data) => {
                type $T = f32;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::F64($data) => {
                type $T = f64;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::I64($data) => {
                type $T = i64;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::Bool($data) => {
                type $T = bool;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::F16($data) => {
                type $T = half::f16;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::BF16($data) => {
                type $T = half::bf16;
                let $data = $data.as_slice();
                $body
            }
        }
    };
}
pub(crate) use with_host_slice;

/// Runs `$body` with `$slice` bound to the typed `CudaSlice` of a [`CudaStorage`] and `$T` to
/// its element type.
macro_rules! with_cuda_slice {
    ($storage:expr, |$slice:ident : $T:ident| $body:expr) => {
        match $storage {
            $crate::core::cuda_storage::CudaStorage::F32($slice) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::core::cuda_storage::CudaStorage::F64($slice) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            $crate::core::cuda_storage::CudaStorage::I64($slice) => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::core::cuda_storage::CudaStorage::Bool($slice) => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            $crate::core::cuda_storage::CudaStorage::F16($slice) => {
                #[allow(dead_code)]
                type $T = half::f16;
                $body
            }
            $crate::core::cuda_storage::CudaStorage::BF16($slice) => {
                #[allow(dead_code)]
                type $T = half::bf16;
                $body
            }
        }
    };
}
pub(crate) use with_cuda_slice;

/// Devices whose memory is accounted (ordinals at or above are not counted).
const TRACKED_DEVICES: usize = 64;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: [AtomicU64; TRACKED_DEVICES] = [ZERO; TRACKED_DEVICES];
static PEAK: [AtomicU64; TRACKED_DEVICES] = [ZERO; TRACKED_DEVICES];

/// Bytes held by live devtype tensors on GPU `ordinal` (PyTorch's
/// `torch.cuda.memory_allocated`).
pub fn memory_allocated(ordinal: usize) -> u64 {
    ALLOCATED
        .get(ordinal)
        .map_or(0, |a| a.load(Ordering::SeqCst))
}

/// The most bytes devtype tensors have held at once on GPU `ordinal` (PyTorch's
/// `torch.cuda.max_memory_allocated`).
pub fn max_memory_allocated(ordinal: usize) -> u64 {
    PEAK.get(ordinal).map_or(0, |a| a.load(Ordering::SeqCst))
}

/// Called when device memory becomes tensor storage ([`CudaElement::wrap`]).
pub(crate) fn on_alloc(ordinal: usize, bytes: usize) {
    if let (Some(a), Some(p)) = (ALLOCATED.get(ordinal), PEAK.get(ordinal)) {
        let now = a.fetch_add(bytes as u64, Ordering::SeqCst) + bytes as u64;
        p.fetch_max(now, Ordering::SeqCst);
    }
}

/// Called when a [`CudaStorage`] is dropped.
pub(crate) fn on_free(ordinal: usize, bytes: usize) {
    if let Some(a) = ALLOCATED.get(ordinal) {
        a.fetch_sub(bytes as u64, Ordering::SeqCst);
    }
}
