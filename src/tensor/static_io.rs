//! Static inputs and outputs of a CUDA graph ([`crate::cuda::capture`]): buffers the graph
//! owns, filled before a replay and read after it. They live with the tensors (they hand out
//! and take `Tensor`s); the capture itself is in the device layer.

use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::Element;
use crate::device::graph::Capturing;
use crate::device::Cuda;
use crate::tensor::Tensor;
use std::marker::PhantomData;

/// A buffer a CUDA graph owns: a static input the graph reads at every replay, or a static
/// output it writes (PyTorch's pattern of static tensors for `torch.cuda.CUDAGraph`).
///
/// devtype's tensors keep their values, so the graph's buffers are not user tensors changed
/// behind their backs: this object holds the buffer; [`copy_from`](Self::copy_from) puts new
/// values in it before a replay, [`set`](Self::set) makes a step's result the output buffer,
/// and [`read`](Self::read) returns a copy of its current values as an ordinary
/// `Tensor<Cuda<N>>`. Inside the step, [`get`](Self::get) hands out the buffer on the
/// capturing device.
pub struct StaticTensor<const N: usize, E: Element = f32> {
    buffer: RawTensor,
    _element: PhantomData<E>,
}

impl<const N: usize, E: Element> StaticTensor<N, E> {
    /// A new buffer holding a copy of `init`'s values (its shape is the buffer's for good).
    pub fn try_new(init: &Tensor<Cuda<N>, E>) -> Result<Self> {
        let gpu = crate::backend::cuda::context::get(N)?;
        Ok(StaticTensor {
            buffer: crate::ops::copy::cuda::contiguous(gpu, &init.raw)?,
            _element: PhantomData,
        })
    }

    /// A new buffer holding a copy of `init`'s values.
    ///
    /// Panics with the error's text where [`try_new`](Self::try_new) returns it.
    #[track_caller]
    pub fn new(init: &Tensor<Cuda<N>, E>) -> Self {
        match Self::try_new(init) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// The buffer's shape.
    pub fn shape(&self) -> &[usize] {
        &self.buffer.layout.shape
    }

    /// The buffer as a tensor on the capturing device, for the step to read (not tracked by
    /// autograd; the graph reads this address at every replay).
    pub fn get(&self, dev: Capturing<Cuda<N>>) -> Tensor<Capturing<Cuda<N>>, E> {
        Tensor::from_raw(self.buffer.clone(), dev)
    }

    /// Makes `out` (a step's result) this buffer: the graph writes it at every replay.
    /// Call it inside the captured step; after the capture the buffer is the graph's, and
    /// holds the last replay's values (none before the first replay).
    pub fn set(&mut self, out: &Tensor<Capturing<Cuda<N>>, E>) {
        self.buffer = out.raw.clone();
    }

    /// Queues a copy of `src`'s values into the buffer (PyTorch's `static_input.copy_(x)`),
    /// on the device's stream: the next replay reads them, the host does not wait. `src`
    /// broadcasts to the buffer's shape; anything else is PyTorch's size error.
    pub fn try_copy_from(&mut self, src: &Tensor<Cuda<N>, E>) -> Result<()> {
        // A buffer the graph's step made may be a view (`set` of a strided result).
        crate::ops::copy::copy_into_gpu(&mut self.buffer, &src.raw)
    }

    /// Queues a copy of `src`'s values into the buffer.
    ///
    /// Panics with the error's text where [`try_copy_from`](Self::try_copy_from) returns it.
    #[track_caller]
    pub fn copy_from(&mut self, src: &Tensor<Cuda<N>, E>) {
        if let Err(e) = self.try_copy_from(src) {
            panic!("{e}")
        }
    }

    /// A copy of the buffer's current values (after the replays queued so far, in stream
    /// order), as an ordinary tensor: it keeps these values when the graph runs again.
    pub fn try_read(&self) -> Result<Tensor<Cuda<N>, E>> {
        let gpu = crate::backend::cuda::context::get(N)?;
        let copy = crate::ops::copy::cuda::contiguous(gpu, &self.buffer)?;
        Ok(Tensor::from_raw(copy, Cuda::<N>::open()?))
    }

    /// A copy of the buffer's current values.
    ///
    /// Panics with the error's text where [`try_read`](Self::try_read) returns it.
    #[track_caller]
    pub fn read(&self) -> Tensor<Cuda<N>, E> {
        match self.try_read() {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
