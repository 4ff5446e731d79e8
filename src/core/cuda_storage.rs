//! Device memory of a tensor, one variant per element type.

use crate::core::{DType, Element};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// The values of a CUDA tensor, in the device's memory.
///
/// Dropping it frees the memory in stream order (`cuMemFreeAsync` on the device's stream, so
/// after every kernel already queued that reads it) and updates the device's
/// [`memory_allocated`](super::memory_allocated); memory a CUDA graph capture allocated
/// follows its graph instead (see [`GraphMemory`]).
pub(crate) struct CudaStorage {
    data: ManuallyDrop<CudaData>,
    /// Set when the memory was allocated while its GPU's stream was capturing a graph.
    graph: Option<Arc<GraphMemory>>,
}

impl Deref for CudaStorage {
    type Target = CudaData;
    #[inline]
    fn deref(&self) -> &CudaData {
        &self.data
    }
}

impl CudaStorage {
    /// False for memory of a capture whose graph has not run (see [`GraphMemory`]): there is
    /// nothing at its address to read or write.
    #[inline]
    pub(crate) fn is_backed(&self) -> bool {
        self.graph.as_ref().is_none_or(|g| g.is_backed())
    }
}

/// The device buffer of a [`CudaStorage`], one variant per element type.
pub(crate) enum CudaData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    I64(CudaSlice<i64>),
    Bool(CudaSlice<bool>),
    F16(CudaSlice<half::f16>),
    BF16(CudaSlice<half::bf16>),
}

impl CudaData {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            CudaData::F32(_) => DType::F32,
            CudaData::F64(_) => DType::F64,
            CudaData::I64(_) => DType::I64,
            CudaData::Bool(_) => DType::Bool,
            CudaData::F16(_) => DType::F16,
            CudaData::BF16(_) => DType::BF16,
        }
    }

    /// The GPU this memory is on.
    pub(crate) fn ordinal(&self) -> usize {
        match self {
            CudaData::F32(s) => s.ordinal(),
            CudaData::F64(s) => s.ordinal(),
            CudaData::I64(s) => s.ordinal(),
            CudaData::Bool(s) => s.ordinal(),
            CudaData::F16(s) => s.ordinal(),
            CudaData::BF16(s) => s.ordinal(),
        }
    }

    /// Bytes held.
    pub(crate) fn num_bytes(&self) -> usize {
        match self {
            CudaData::F32(s) => s.num_bytes(),
            CudaData::F64(s) => s.num_bytes(),
            CudaData::I64(s) => s.num_bytes(),
            CudaData::Bool(s) => s.num_bytes(),
            CudaData::F16(s) => s.num_bytes(),
            CudaData::BF16(s) => s.num_bytes(),
        }
    }

    /// The device address of the first element.
    pub(crate) fn device_ptr(&self) -> u64 {
        match self {
            CudaData::F32(s) => slice_ptr(s),
            CudaData::F64(s) => slice_ptr(s),
            CudaData::I64(s) => slice_ptr(s),
            CudaData::Bool(s) => slice_ptr(s),
            CudaData::F16(s) => slice_ptr(s),
            CudaData::BF16(s) => slice_ptr(s),
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

impl CudaData {
    fn context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        match self {
            CudaData::F32(s) => s.context(),
            CudaData::F64(s) => s.context(),
            CudaData::I64(s) => s.context(),
            CudaData::Bool(s) => s.context(),
            CudaData::F16(s) => s.context(),
            CudaData::BF16(s) => s.context(),
        }
    }
}

impl Drop for CudaStorage {
    fn drop(&mut self) {
        on_free(self.ordinal(), self.num_bytes());
        // SAFETY: this is the storage's drop: `data` is taken once and never used again.
        let data = unsafe { ManuallyDrop::take(&mut self.data) };
        match &self.graph {
            Some(graph) => {
                if let Some(data) = graph.release(data) {
                    free(data);
                }
            }
            None => free(data),
        }
    }
}

/// Frees a buffer in stream order (`cuMemFreeAsync`, when `data` drops).
fn free(data: CudaData) {
    // The last handle may go away on a thread that never ran a CUDA op, so make the buffer's
    // context current there first. Setting it directly (not `bind_to_thread`) keeps any error
    // cudarc recorded for the next op to report.
    let ctx = data.context().cu_ctx();
    if cudarc::driver::result::ctx::get_current().ok().flatten() != Some(ctx) {
        // SAFETY: `ctx` is the live context that owns this buffer (its `Arc` is held by the
        // buffer's stream); making it current only changes this thread's current context.
        let _ = unsafe { cudarc::driver::result::ctx::set_current(ctx) };
    }
    drop(data);
}

/// The memory of one CUDA graph capture: what its stream-ordered allocations returned.
///
/// The driver backs an allocation made during a capture (a graph's memory node) only when a
/// graph made from the capture runs: before the first replay there is nothing at its address,
/// and when the capture failed or its graph is dropped without a replay, there never will be.
/// Such an address must not be freed either (the driver answers `CUDA_ERROR_INVALID_VALUE`,
/// which cudarc would hand to the next unrelated call). So each storage made during a capture
/// holds this record, and its drop asks it what to do: free (during the capture itself, or
/// once the graph has run), hand the buffer to the graph until the graph is dropped (graph
/// made, not run yet), or forget it (nothing was ever there).
pub(crate) struct GraphMemory {
    state: AtomicU8,
    /// Buffers dropped after the capture, before the graph first ran: freed with the graph if
    /// it ran by then, else forgotten.
    orphans: Mutex<Vec<CudaData>>,
}

const CAPTURING: u8 = 0;
const CAPTURED: u8 = 1;
const LAUNCHED: u8 = 2;
const DISCARDED: u8 = 3;

impl GraphMemory {
    fn new() -> Arc<Self> {
        Arc::new(GraphMemory {
            state: AtomicU8::new(CAPTURING),
            orphans: Mutex::new(Vec::new()),
        })
    }

    /// The capture made a graph (nothing of it has run).
    pub(crate) fn captured(&self) {
        let _ =
            self.state
                .compare_exchange(CAPTURING, CAPTURED, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// The graph was launched: its memory is real from here on.
    pub(crate) fn launched(&self) {
        self.state.store(LAUNCHED, Ordering::SeqCst);
    }

    /// The capture failed, or its graph is being dropped: frees the buffers handed over if the
    /// graph ever ran, else forgets them (and every later drop forgets its buffer).
    pub(crate) fn end(&self) {
        // The state changes with the list locked: a drop deciding to hand its buffer over
        // (`release`) does so before this takes the list, or sees the new state.
        let (ran, orphans) = {
            let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
            let ran = self.state.load(Ordering::SeqCst) == LAUNCHED;
            if !ran {
                self.state.store(DISCARDED, Ordering::SeqCst);
            }
            (ran, std::mem::take(&mut *orphans))
        };
        for data in orphans {
            if ran {
                free(data);
            } else {
                std::mem::forget(data);
            }
        }
    }

    fn is_backed(&self) -> bool {
        matches!(self.state.load(Ordering::SeqCst), CAPTURING | LAUNCHED)
    }

    /// What a dropped storage's buffer becomes: `Some` to free now, `None` when kept or
    /// forgotten here.
    fn release(&self, data: CudaData) -> Option<CudaData> {
        // A free during the capture is the graph's own (a free node); after a replay the
        // memory is real.
        if matches!(self.state.load(Ordering::SeqCst), CAPTURING | LAUNCHED) {
            return Some(data);
        }
        // Read again with the list locked (see `end`).
        let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
        match self.state.load(Ordering::SeqCst) {
            CAPTURED => {
                // A replay may still come: `end` frees it if one ran, else forgets it.
                orphans.push(data);
                None
            }
            LAUNCHED => Some(data),
            _ => {
                std::mem::forget(data);
                None
            }
        }
    }
}

/// Per GPU ordinal, the memory record of the capture in progress (`device::graph::capture`
/// begins and ends it).
pub(crate) mod graph_memory {
    use super::GraphMemory;
    use crate::core::per_capture::PerCapture;
    use std::sync::Arc;

    static CURRENT: PerCapture<Arc<GraphMemory>> = PerCapture::new();

    /// Starts recording GPU `ordinal`'s capture: storage made from here on holds the record.
    pub(crate) fn begin(ordinal: usize) -> Arc<GraphMemory> {
        let memory = GraphMemory::new();
        CURRENT.begin(ordinal);
        let _ = CURRENT.push(ordinal, memory.clone());
        memory
    }

    /// Stops recording GPU `ordinal`'s capture.
    pub(crate) fn end(ordinal: usize) {
        CURRENT.end(ordinal);
    }

    /// The record of GPU `ordinal`'s capture in progress, if one is.
    #[inline]
    pub(super) fn current(ordinal: usize) -> Option<Arc<GraphMemory>> {
        if !CURRENT.any_active() {
            return None;
        }
        CURRENT.first(ordinal)
    }
}

/// An element type that lives in CUDA memory: the link between `E` and its storage variant
/// and kernel name suffix.
pub(crate) trait CudaElement: Element + DeviceRepr + ValidAsZeroBits {
    /// The kernel name suffix: `f32`, `f64`, `i64`, `bool`, `f16`, `bf16`.
    const SUFFIX: &'static str;
    /// The storage variant of this type.
    fn variant(slice: CudaSlice<Self>) -> CudaData;

    /// Wraps device memory of this type as tensor storage, counting its bytes in
    /// [`memory_allocated`](super::memory_allocated) until the storage is dropped.
    fn wrap(slice: CudaSlice<Self>) -> CudaStorage {
        on_alloc(slice.ordinal(), slice.num_bytes());
        let graph = graph_memory::current(slice.ordinal());
        CudaStorage {
            data: ManuallyDrop::new(Self::variant(slice)),
            graph,
        }
    }
}

impl CudaElement for f32 {
    const SUFFIX: &'static str = "f32";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::F32(slice)
    }
}
impl CudaElement for f64 {
    const SUFFIX: &'static str = "f64";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::F64(slice)
    }
}
impl CudaElement for i64 {
    const SUFFIX: &'static str = "i64";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::I64(slice)
    }
}
impl CudaElement for bool {
    const SUFFIX: &'static str = "bool";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::Bool(slice)
    }
}
impl CudaElement for half::f16 {
    const SUFFIX: &'static str = "f16";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::F16(slice)
    }
}
impl CudaElement for half::bf16 {
    const SUFFIX: &'static str = "bf16";
    fn variant(slice: CudaSlice<Self>) -> CudaData {
        CudaData::BF16(slice)
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

/// Runs `$body` with `$slice` bound to the typed `CudaSlice` of a `&`[`CudaStorage`] and `$T`
/// to its element type.
macro_rules! with_cuda_slice {
    ($storage:expr, |$slice:ident : $T:ident| $body:expr) => {
        match ::std::ops::Deref::deref($storage) {
            $crate::core::cuda_storage::CudaData::F32($slice) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::core::cuda_storage::CudaData::F64($slice) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            $crate::core::cuda_storage::CudaData::I64($slice) => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::core::cuda_storage::CudaData::Bool($slice) => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            $crate::core::cuda_storage::CudaData::F16($slice) => {
                #[allow(dead_code)]
                type $T = half::f16;
                $body
            }
            $crate::core::cuda_storage::CudaData::BF16($slice) => {
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
