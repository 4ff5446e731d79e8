//! CUDA graphs: a closure's GPU work captured once from the device's stream, replayed with one
//! launch (PyTorch's `torch.cuda.CUDAGraph`).
//!
//! [`capture`] runs the closure once eagerly first (the warm-up: kernels are compiled and
//! loaded, the cuBLAS handle is created, outside the capture), waits for the GPU, then runs it
//! again with the device's stream capturing, in the driver's thread-local mode: nothing of that
//! second run executes, it is recorded. [`CapturedGraph::replay`] queues the recorded work on
//! the stream again, reading and writing the same device buffers every time, as PyTorch's
//! graphs do: the step's inputs and outputs are [`StaticTensor`](crate::cuda::StaticTensor)s, buffers the graph owns;
//! [`StaticTensor::copy_from`](crate::cuda::StaticTensor::copy_from) puts new inputs in before a replay, [`StaticTensor::read`](crate::cuda::StaticTensor::read)
//! copies results out after it.
//!
//! The step runs on [`Capturing<Cuda<N>>`](Capturing), a device type without
//! [`HostSync`]: `to_vec`, `item`, printing with `{}` or `{:?}`, `to(Cpu)` (see
//! [`CopyTo`](crate::CopyTo)) and `synchronize` do not compile there.
//!
//! Random numbers: a draw recorded into the graph (dropout's mask, `rand`, `randn`) reads the
//! generator's seed and position from the graph's device memory when it runs, and
//! [`CapturedGraph::replay`] writes them there first, then moves the host's generator past what
//! one replay draws (PyTorch's philox seed and offset for graphs): each replay draws fresh
//! numbers, the very ones an eager run of the step would draw from the same generator state.
//!
//! Counts kept on the host: a batch norm's `num_batches_tracked` (PyTorch bumps it on the
//! device, inside the graph) counts the warm-up and each replay, not the recording, which runs
//! nothing; a cumulative average (`momentum: None`), whose factor is `1 / num_batches_tracked`,
//! is refused in a capture, as PyTorch's reads the count back there.
//!
//! Memory: buffers allocated during the capture are the graph's (the driver's graph memory, at
//! addresses fixed for the graph's life, freed and taken again at each launch). A buffer whose
//! last handle drops during the capture is not freed there (a free recorded into the graph
//! would run at every replay): the graph keeps it until the graph is dropped. The driver backs
//! that memory only when the graph runs: a tensor the step made and left outside the graph (in
//! a model, in a variable of the caller) holds its values once a replay has run; before that,
//! or for ever when the capture failed or the graph was dropped unreplayed, using it is an
//! error rather than a fault, and dropping it frees nothing.
//!
//! What would make the host wait during the capture and is not caught by the types (a read of
//! a tensor the closure captured from outside, `synchronize` on the plain `Cuda<N>`) fails with
//! the driver's `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` ("operation not permitted when stream
//! is capturing") and ends the capture with that error; so does a kernel compile or a cuBLAS
//! handle creation the warm-up did not do. The device stays usable afterwards.

use super::{Cuda, Device, DynDevice, HostSync};
use crate::backend::cuda::context::{driver_error, GpuContext};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::slice_ptr;
use crate::core::cuda_storage::{graph_memory, GraphMemory};
use crate::core::error::Result;
use crate::core::per_capture::PerCapture;
use crate::core::storage::capture_keep;
use cudarc::driver::{sys, CudaSlice};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// GPU `N` while its stream is captured into a CUDA graph: the device type of the tensors a
/// captured step works on (`Tensor<Capturing<Cuda<0>>>`).
///
/// Every op runs on it as on `Cuda<N>` (it is the same GPU), but what would make the host wait
/// for the GPU is not there: `to_vec`, `item`, printing (`{}` and `{:?}`) and `synchronize` ask
/// for [`HostSync`](crate::device::HostSync), which this device does not have, and `to(Cpu)`
/// for [`CopyTo<Cpu>`](crate::CopyTo), so a step that reads a value back does not compile.
/// Its tensors move to a GPU (`x.to(gpu)`): read a model trained on it that way, after the
/// replays. Its inputs come in as [`StaticTensor`](crate::cuda::StaticTensor)s, its results
/// go out through them and are read after [`CapturedGraph::replay`] with
/// [`StaticTensor::read`](crate::cuda::StaticTensor::read).
///
/// Write the step generic (`fn step<D: Device>(...)`) to run it eagerly on `Cuda<N>` too.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capturing<D> {
    _device: PhantomData<D>,
}

impl<const N: usize> Capturing<Cuda<N>> {
    /// The capturing form of `gpu`: tensors made on it live on GPU `N` and are never read
    /// back by the host (models and optimizer state that a graph updates are made on it).
    pub fn new(_gpu: Cuda<N>) -> Self {
        Capturing {
            _device: PhantomData,
        }
    }

    /// True unless the device's stream is being captured now: during [`capture`]'s eager
    /// warm-up run, and outside any capture.
    pub fn is_warm_up(&self) -> bool {
        crate::backend::cuda::context::get(N)
            .map(|g| !g.capturing.load(Ordering::SeqCst))
            .unwrap_or(true)
    }
}

impl<const N: usize> fmt::Debug for Capturing<Cuda<N>> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Capturing<Cuda<{N}>>")
    }
}

impl<const N: usize> fmt::Display for Capturing<Cuda<N>> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cuda:{N}")
    }
}

impl<const N: usize> Device for Capturing<Cuda<N>> {
    // A GPU: named as `Cuda<N>` is.
    type NamedFirst<Other: Device> = Capturing<Cuda<N>>;
    type NamedSecond<Other: Device> = Other;
    type OperandFirst<Recv: Device> = Recv::NamedFirst<Capturing<Cuda<N>>>;
    type OperandSecond<Recv: Device> = Recv::NamedSecond<Capturing<Cuda<N>>>;
    fn dyn_device(&self) -> DynDevice {
        DynDevice::cuda(N)
    }
    fn type_device() -> DynDevice {
        DynDevice::cuda(N)
    }
    fn from_dyn(device: DynDevice) -> Option<Self> {
        Cuda::<N>::from_dyn(device).map(Capturing::new)
    }
    fn synchronize(&self) -> Result<()>
    where
        Self: HostSync,
    {
        crate::backend::cuda::synchronize(N)
    }
}

/// A captured and instantiated CUDA graph of GPU `N`'s work; see [`capture`].
pub struct CapturedGraph<const N: usize> {
    // Dropped first: the graph and its executable go before the buffers it used are freed
    // (in stream order, after its last replay).
    graph: cudarc::driver::CudaGraph,
    /// What the capture allocated: real once a replay has run (see [`GraphMemory`]).
    memory: Arc<GraphMemory>,
    _kept: capture_keep::Kept,
    rng: GraphRng,
    /// Host counters that advance by one at each replay ([`replay_counter`]).
    counters: Vec<Arc<AtomicI64>>,
}

impl<const N: usize> Drop for CapturedGraph<N> {
    fn drop(&mut self) {
        // Before the fields go: a graph that never ran leaves its buffers (kept ones too) to be
        // forgotten, not freed.
        self.memory.end();
    }
}

/// Per capturing GPU ordinal, the host counters its graph will advance at each replay.
static REPLAY_COUNTERS: PerCapture<Arc<AtomicI64>> = PerCapture::new();

/// While GPU `ordinal`'s stream is being captured, a new host counter (at zero) that the graph
/// adds one to at each replay; `None` when no capture is in progress there (one atomic load
/// when none is anywhere: a batch norm's training forward asks at every call).
///
/// For state PyTorch keeps on the device and bumps inside the graph, devtype on the host: a
/// batch norm's `num_batches_tracked` (its recorded update runs at every replay; its count
/// follows the replays through this counter instead of counting the recording, which runs
/// nothing).
pub(crate) fn replay_counter(ordinal: usize) -> Option<Arc<AtomicI64>> {
    let counter = Arc::new(AtomicI64::new(0));
    match REPLAY_COUNTERS.push(ordinal, counter.clone()) {
        None => Some(counter),
        Some(_) => None,
    }
}

/// The random state a graph's draws read (`[seed, offset]` on the device), and how many
/// positions of the stream one replay draws.
struct GraphRng {
    gpu: &'static GpuContext,
    state: CudaSlice<i64>,
    per_replay: u64,
}

impl GraphRng {
    /// Two `u64` on `gpu` holding the generator's state now (which also loads the kernel that
    /// writes them, before any capture).
    fn new(gpu: &'static GpuContext) -> Result<Self> {
        let state = memory::alloc::<i64>(gpu, 2)?;
        let rng = GraphRng {
            gpu,
            state,
            per_replay: 0,
        };
        let now = crate::random::get_rng_state();
        crate::ops::creation::set_rng_state(gpu, rng.address(), now.seed, now.offset)?;
        Ok(rng)
    }

    fn address(&self) -> u64 {
        slice_ptr(&self.state)
    }
}

impl<const N: usize> CapturedGraph<N> {
    /// Queues one run of the recorded work on the device's stream and returns (the host does
    /// not wait).
    ///
    /// A graph that draws random numbers (dropout, `rand`, `randn`) draws fresh ones at each
    /// replay: the generator's seed and position are written to the graph's device state
    /// first, and the position moves past what one replay draws, as an eager run of the step
    /// moves it (PyTorch's philox seed and offset for graphs). So the numbers of the `k`-th
    /// replay are those the `k`-th eager step would draw from the same generator state, and
    /// `manual_seed` between replays applies to the next one.
    pub fn replay(&self) -> Result<()> {
        if self.rng.per_replay > 0 {
            let (seed, offset) = crate::random::reserve(self.rng.per_replay);
            crate::ops::creation::set_rng_state(self.rng.gpu, self.rng.address(), seed, offset)?;
        }
        self.graph
            .launch()
            .map_err(|e| driver_error("cuGraphLaunch", e))?;
        self.memory.launched();
        for c in &self.counters {
            c.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Captures the GPU work `step` queues on device `N`'s stream into a graph.
///
/// `step` runs twice: once eagerly (a real run, whose effects stay), then recorded. Returns
/// the first error of either run, or of ending the capture; the device stays usable.
///
/// ```no_run
/// use devtype::cuda::{capture, Capturing, StaticTensor};
/// use devtype::nn::{Linear, MSELoss};
/// use devtype::optim::{Optimizer, Sgd};
/// use devtype::prelude::*;
///
/// /// One training step, for any device; returns the loss (detached).
/// fn step<D: Device>(m: &mut Linear<D>, opt: &mut Sgd<D>, x: &Tensor<D>, y: &Tensor<D>) -> Tensor<D> {
///     opt.zero_grad(m);
///     let loss = MSELoss::new().forward(&m.forward(x), y);
///     loss.backward();
///     opt.step(m);
///     loss.detach()
/// }
///
/// # fn main() -> devtype::Result<()> {
/// let gpu = Cuda::<0>::open()?;
/// let batches: Vec<(Tensor<Cuda<0>>, Tensor<Cuda<0>>)> = (0..10)
///     .map(|_| (Tensor::randn([64, 784], gpu), Tensor::randn([64, 10], gpu)))
///     .collect();
/// let dev = Capturing::new(gpu);                      // GPU 0, never read back by the host
/// let mut model = Linear::new(784, 10, Cpu).to(dev);  // what the graph updates lives on it
/// let mut opt = Sgd::new(0.1);
/// let (mut x, mut y) = (StaticTensor::new(&batches[0].0), StaticTensor::new(&batches[0].1));
/// let mut loss = StaticTensor::new(&Tensor::zeros([], gpu));
/// let graph = capture(gpu, |dev| {
///     loss.set(&step(&mut model, &mut opt, &x.get(dev), &y.get(dev)));
///     Ok(())
/// })?;
/// for (bx, by) in &batches[1..] {
///     x.copy_from(bx);
///     y.copy_from(by);
///     graph.replay()?;
/// }
/// println!("last loss {}", loss.read().item());       // a copy, read after the replays
/// # Ok(())
/// # }
/// ```
pub fn capture<const N: usize>(
    _device: Cuda<N>,
    mut step: impl FnMut(Capturing<Cuda<N>>) -> Result<()>,
) -> Result<CapturedGraph<N>> {
    let gpu = crate::backend::cuda::context::get(N)?;
    step(Capturing::new(_device))?;
    let mut rng = GraphRng::new(gpu)?;
    gpu.synchronize()?;
    crate::backend::cuda::sync::record_sync();
    gpu.bind()?;
    capture_keep::begin(N);
    let memory = graph_memory::begin(N);
    // The draws recorded from here on read the seed and position from `rng.state` when they
    // run; the host's generator does not move until a replay.
    crate::random::begin_graph(N, rng.address());
    gpu.capturing.store(true, Ordering::SeqCst);
    REPLAY_COUNTERS.begin(N);
    let result = record(gpu, &memory, &mut step);
    let counters = REPLAY_COUNTERS.end(N);
    gpu.capturing.store(false, Ordering::SeqCst);
    graph_memory::end(N);
    // Without a graph, nothing the capture allocated will ever exist (see `GraphMemory`).
    if result.is_err() {
        memory.end();
    }
    rng.per_replay = crate::random::end_graph(N);
    // On failure the kept buffers are freed now: no graph was made that could read them.
    let kept = capture_keep::end(N);
    let graph = result?;
    Ok(CapturedGraph {
        graph,
        memory,
        _kept: kept,
        rng,
        counters,
    })
}

/// The capture proper: begin, run `step`, always end.
fn record<const N: usize>(
    gpu: &GpuContext,
    memory: &GraphMemory,
    step: &mut impl FnMut(Capturing<Cuda<N>>) -> Result<()>,
) -> Result<cudarc::driver::CudaGraph> {
    gpu.stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| driver_error("cuStreamBeginCapture", e))?;
    let ran = step(Capturing {
        _device: PhantomData,
    });
    // Buffers made during the capture that outlive it (gradients, optimizer state) are graph
    // memory: freed and allocated again, at the same address, at each launch.
    let ended = gpu.stream.end_capture(
        sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
    );
    // From here on the capture's memory is not backed until a replay (a drop must not free
    // it as a free node of a capture that has ended).
    memory.captured();
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
