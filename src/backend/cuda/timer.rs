//! Timing GPU work with CUDA events.
//!
//! Host clocks measure when work was *queued*; a [`Timer`] records events on the device's
//! stream, so it measures when the GPU ran it. Its events are created with timing enabled
//! (`CU_EVENT_DEFAULT`; cudarc's default disables timing).

use super::context::GpuContext;
use crate::core::error::Result;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;

/// Measures GPU time on one device between [`Timer::start`] and [`Timer::elapsed_ms`].
///
/// ```no_run
/// use devtype::prelude::*;
/// # fn main() -> Result<(), devtype::Error> {
/// let gpu = Cuda::<0>::open()?;
/// let x = Tensor::<Cuda<0>>::randn([1024, 1024], gpu);
/// let timer = devtype::cuda::Timer::start(0)?;
/// let y = x.matmul(&x);
/// println!("matmul took {:.3} ms on the GPU", timer.elapsed_ms()?);
/// # drop(y); Ok(()) }
/// ```
pub struct Timer {
    gpu: &'static GpuContext,
    start: CudaEvent,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Timer(cuda:{})", self.gpu.ordinal)
    }
}

fn record(gpu: &GpuContext) -> Result<CudaEvent> {
    gpu.stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(|e| gpu.error("cuEventRecord", e))
}

impl Timer {
    /// Records a start event on GPU `ordinal`'s stream (opening the device if needed). Does not
    /// wait for anything.
    pub fn start(ordinal: usize) -> Result<Timer> {
        let gpu = super::context::get(ordinal)?;
        Ok(Timer {
            gpu,
            start: record(gpu)?,
        })
    }

    /// Milliseconds of GPU time from the start event to now: records an end event, waits for
    /// it (a host sync, counted by [`sync_count`](super::sync_count)) and returns the time
    /// between the two events. May be called several times; each call measures up to itself.
    pub fn elapsed_ms(&self) -> Result<f32> {
        let end = record(self.gpu)?;
        let ms = self
            .start
            .elapsed_ms(&end)
            .map_err(|e| self.gpu.error("cuEventElapsedTime", e))?;
        super::sync::record_sync();
        Ok(ms)
    }

    /// Starts measuring again from now.
    pub fn restart(&mut self) -> Result<()> {
        self.start = record(self.gpu)?;
        Ok(())
    }
}
