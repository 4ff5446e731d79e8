//! CUDA graphs: a closure's GPU work captured once from the device's stream, replayed with one
//! launch (PyTorch's `torch.cuda.CUDAGraph`).
//!
//! [`capture`] runs the closure once eagerly first (the warm-up: kernels are compiled and
//! loaded, the cuBLAS handle is created, outside the capture), waits for the GPU, then runs it
//! again with the device's stream capturing, in the driver's thread-local mode: nothing of that
//! second run executes, it is recorded. [`CapturedGraph::replay`] queues the recorded work on
//! the stream again, reading and writing the same device buffers every time, as PyTorch's
//! graphs do: put new inputs into the buffers the closure read (e.g. with `copy_`) before a
//! replay and read results from the buffers it wrote.
//!
//! Memory: buffers allocated during the capture are the graph's (the driver's graph memory, at
//! addresses fixed for the graph's life, freed and taken again at each launch). A buffer whose
//! last handle drops during the capture is not freed there (a free recorded into the graph
//! would run at every replay): the graph keeps it until the graph is dropped.
//!
//! What would make the host wait during the capture (a value read, `synchronize`) fails with
//! the driver's `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` ("operation not permitted when stream
//! is capturing") and ends the capture with that error; so does a kernel compile or a cuBLAS
//! handle creation the warm-up did not do. The device stays usable afterwards.

use super::Cuda;
use crate::backend::cuda::context::{driver_error, GpuContext};
use crate::core::error::Result;
use crate::core::storage::capture_keep;
use cudarc::driver::sys;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

/// The capture context handed to the closure of [`capture`]: proof that the closure runs inside
/// a capture of device `D`'s stream (the warm-up run gets one too).
pub struct Capturing<D> {
    warm_up: bool,
    _device: PhantomData<D>,
}

impl<D> Capturing<D> {
    /// True during the eager warm-up run, false while the work is being recorded.
    pub fn is_warm_up(&self) -> bool {
        self.warm_up
    }
}

/// A captured and instantiated CUDA graph of GPU `N`'s work; see [`capture`].
pub struct CapturedGraph<const N: usize> {
    // Dropped first: the graph and its executable go before the buffers it used are freed
    // (in stream order, after its last replay).
    graph: cudarc::driver::CudaGraph,
    _kept: capture_keep::Kept,
}

impl<const N: usize> CapturedGraph<N> {
    /// Queues one run of the recorded work on the device's stream and returns (the host does
    /// not wait).
    pub fn replay(&self) -> Result<()> {
        self.graph
            .launch()
            .map_err(|e| driver_error("cuGraphLaunch", e))
    }
}

/// Captures the GPU work `step` queues on device `N`'s stream into a graph.
///
/// `step` runs twice: once eagerly (a real run, whose effects stay), then recorded. Returns
/// the first error of either run, or of ending the capture; the device stays usable.
///
/// ```no_run
/// use devtype::prelude::*;
/// # fn main() -> devtype::Result<()> {
/// let gpu = Cuda::<0>::open()?;
/// let x = Tensor::<Cuda<0>>::ones([4], gpu); // the graph's static input
/// let mut y = None; // its output: a buffer the graph writes at every replay
/// let graph = devtype::cuda::capture(gpu, |_| {
///     y = Some(x.try_relu()? * 2.0);
///     Ok(())
/// })?;
/// graph.replay()?;
/// assert_eq!(y.unwrap().to_vec(), vec![2.0; 4]);
/// # Ok(())
/// # }
/// ```
pub fn capture<const N: usize>(
    _device: Cuda<N>,
    mut step: impl FnMut(&Capturing<Cuda<N>>) -> Result<()>,
) -> Result<CapturedGraph<N>> {
    let gpu = crate::backend::cuda::context::get(N)?;
    step(&Capturing {
        warm_up: true,
        _device: PhantomData,
    })?;
    gpu.synchronize()?;
    crate::backend::cuda::sync::record_sync();
    gpu.bind()?;
    capture_keep::begin(N);
    gpu.capturing.store(true, Ordering::SeqCst);
    let result = record(gpu, &mut step);
    gpu.capturing.store(false, Ordering::SeqCst);
    // On failure the kept buffers are freed now: no graph was made that could read them.
    let kept = capture_keep::end(N);
    let graph = result?;
    Ok(CapturedGraph { graph, _kept: kept })
}

/// The capture proper: begin, run `step`, always end.
fn record<const N: usize>(
    gpu: &GpuContext,
    step: &mut impl FnMut(&Capturing<Cuda<N>>) -> Result<()>,
) -> Result<cudarc::driver::CudaGraph> {
    gpu.stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| driver_error("cuStreamBeginCapture", e))?;
    let ran = step(&Capturing {
        warm_up: false,
        _device: PhantomData,
    });
    // Buffers made during the capture that outlive it (gradients, optimizer state) are graph
    // memory: freed and allocated again, at the same address, at each launch.
    let ended = gpu.stream.end_capture(
        sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
    );
    ran?;
    match ended {
        Ok(Some(graph)) => Ok(graph),
        Ok(None) => Err(driver_error(
            "cuStreamEndCapture",
            cudarc::driver::DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        )),
        Err(e) => Err(driver_error("cuStreamEndCapture", e)),
    }
}
