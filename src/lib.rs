//! # devtype: tensors whose device is part of their type
//!
//! In PyTorch every tensor lives on exactly one device, and an op whose inputs sit on
//! different devices fails at run time with *Expected all tensors to be on the same device*.
//! In devtype the device is a type parameter, so the same mistake does not compile, and the
//! compiler's message reads like PyTorch's and names the fix (rustc 1.95's words, abridged;
//! the lesson `cpu_plus_cuda` has them whole):
//!
//! ```text
//! error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//!    |
//! 18 |     let y = &out + &bias;
//!    |                  ^ this operand is on `devtype::Cpu`, expected `devtype::Cuda<0>`
//!    |
//!    = note: `.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`
//! ```
//!
//! When the device is only known at run time, [`DynTensor`] carries it as a value and returns
//! PyTorch's exact message as an `Err`. Both fronts sit on one untyped core, so every kernel
//! is written once.
//!
//! ## The seed, in devtype
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::Linear;
//! use devtype::device::{run_on_best_device, DeviceJob};
//!
//! struct Seed;
//! impl DeviceJob for Seed {
//!     type Output = Vec<usize>;
//!     fn run<D: Device>(self, device: D) -> Vec<usize> {
//!         let model = Linear::new(10, 2, Cpu).to(device); // the module moves; rebind it
//!         let x = Tensor::randn([4, 10], Cpu);
//!         let x = x.to(device);                           // tensors return a copy: rebind!
//!         let out = model.forward(&x);
//!         println!("{}", out.device());
//!         let ones = Tensor::ones([4, 2], device);        // created directly on the device
//!         (&out + &ones).shape().to_vec()
//!     }
//! }
//! // device = cuda if available else cpu
//! assert_eq!(run_on_best_device(Seed), vec![4, 2]);
//! ```
//!
//! See [`lessons`] for each pitfall of the seed as a compile error, with the compiler's own
//! words.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod api;
pub mod autograd {
    //! Reverse-mode automatic differentiation over the same ops as the tensors.
    //!
    //! Any floating-point [`Tensor`](crate::Tensor) or [`DynTensor`](crate::DynTensor) can
    //! track gradients, as in PyTorch since 0.4: make a parameter with
    //! [`Tensor::parameter`](crate::Tensor::parameter) (PyTorch's `nn.Parameter`), and every op
    //! on it records its backward rule. `loss.backward()` on a scalar walks the recorded graph
    //! once and adds each parameter's gradient to its `.grad()`, a tensor on the parameter's
    //! own device, typed on it. Gradients accumulate until zeroed. [`no_grad`] turns recording
    //! off for evaluation.
    //!
    //! ```
    //! use devtype::prelude::*;
    //!
    //! let dev = Cpu;                                              // or Cuda::<0>::open()?
    //! let w = Tensor::parameter(Tensor::randn([3, 2], dev));
    //! let x = Tensor::randn([4, 3], dev);
    //! let loss = x.matmul(&w).tanh().mean_all();
    //! loss.backward();
    //! let g: Tensor<Cpu> = w.grad().unwrap();                     // on w's device, by type
    //! assert_eq!(g.shape(), &[3, 2]);
    //! ```
    //!
    //! The backward rules are written once, on the untyped core, beside each op's declaration
    //! (`src/api/`), with the same device-generic ops the tensors use, so they run wherever
    //! those ops run. [`gradcheck`] compares every rule with finite differences, as
    //! `torch.autograd.gradcheck` does.

    pub use crate::api::{gradcheck, gradcheck_dyn, gradcheck_with, GradcheckOptions};
    pub use crate::graph::{is_grad_enabled, no_grad, NoGradGuard};

    /// A tensor on `D` that tracks gradients: the same type as [`Tensor`](crate::Tensor)
    /// (the name is kept for readers of older code; PyTorch merged `Variable` into `Tensor`).
    pub type Var<D, E = f32> = crate::Tensor<D, E>;

    /// The dynamic front's tracked tensor: the same type as [`DynTensor`](crate::DynTensor).
    pub type DynVar = crate::DynTensor;
}
mod backend;
mod core;
pub mod cuda {
    //! The CUDA backend on `cudarc`: one context and stream per GPU, shared by the process.
    //!
    //! The driver, NVRTC and cuBLAS are loaded at run time, so devtype builds and runs on machines
    //! without CUDA: [`Cuda::open`](crate::Cuda::open) then returns an error, never panics.
    //!
    //! - **Asynchrony.** Ops only queue work on the device's stream and return; memory is
    //!   allocated and freed in stream order. The host waits only in `to_vec`, `item`, printing,
    //!   `to(Cpu)`, [`synchronize`] and [`Timer::elapsed_ms`]. [`sync_count`] counts those waits
    //!   ([`thread_sync_count`]: the calling thread's) and [`set_sync_debug_mode`] makes implicit ones warn or fail, as
    //!   `torch.cuda.set_sync_debug_mode` does.
    //! - **Kernels** live in `kernels/*.cu`, are embedded in the crate, and are compiled by NVRTC
    //!   for the device's architecture the first time an op family runs on a device
    //!   ([`compile_kernels`] does the same without a GPU). Matrix products use cuBLAS.
    //!   Compiled kernels are kept on disk, in `$DEVTYPE_KERNEL_CACHE` (default
    //!   `~/.cache/devtype/kernels`; `off` to disable), keyed by a hash of NVRTC's version, the
    //!   architecture, the options and the sources: later processes load them without compiling.
    //! - **Pinned memory.** [`Tensor::pin_memory`](crate::Tensor::pin_memory) makes a
    //!   [`PinnedTensor`](crate::PinnedTensor) in page-locked memory from a pool
    //!   ([`pinned_memory_reserved`], [`empty_pinned_cache`]); only it has `to_async`, which
    //!   queues the upload on the GPU's copy stream, overlapping compute.
    //!   Without a driver the pool falls back to ordinary memory, with one line on stderr.
    //! - **Memory.** [`memory_allocated`] tracks the bytes of live tensors per device. Running out
    //!   of memory is [`Error::OutOfMemory`](crate::Error::OutOfMemory); the device stays usable.

    pub use crate::backend::cuda::{
        device_count, empty_cache, get_device_name, is_available, max_memory_allocated,
        memory_allocated, nvrtc_available, nvrtc_version, set_sync_debug_mode, sync_count,
        sync_debug_mode, synchronize, thread_sync_count, SyncDebugMode, Timer,
    };
    pub use crate::backend::cuda::{
        empty_pinned_cache, pinned_memory_allocated, pinned_memory_reserved,
    };
    /// CUDA graphs: capture a step's GPU work once, replay it with one launch (PyTorch's
    /// `torch.cuda.CUDAGraph`); see [`capture`].
    pub use crate::device::graph::{capture, CapturedGraph, Capturing};
    pub use crate::ops::kernel_files::{compile_kernels, KernelReport};
    pub use crate::tensor::static_io::StaticTensor;

    /// Matrix-product settings, as `torch.backends.cuda.matmul`.
    pub mod matmul {
        pub use crate::backend::cuda::{allow_tf32, set_allow_tf32};
    }
}
/// The host CPU as devtype's kernels see it: which vector instructions they run on and how
/// `bf16` products run, chosen at run time ([`capability`](cpu::capability); PyTorch's
/// `torch.backends.cpu.get_cpu_capability()`).
pub mod cpu {
    pub use crate::ops::capability::{
        capability, get_cpu_capability, Bf16Matmul, CpuCapability, VectorIsa,
    };
}
/// Mixed precision, as PyTorch's `torch.amp`: [`autocast`](amp::autocast) runs matrix
/// products in `f16` or `bf16` inside a scope while parameters stay `f32`, and
/// [`GradScaler`](amp::GradScaler) scales the loss so `f16` gradients do not underflow, and
/// skips the steps whose gradients overflowed, deciding on the device (no host sync).
pub mod amp {
    pub use crate::api::{autocast, autocast_dtype, autocast_type, LowPrecision};
    pub use crate::optim::{GradScaler, LossOn, ScaledModelOn};
}
pub mod data;
pub mod device;
mod dyn_tensor;
mod graph;
pub mod lessons;
pub mod nn;
mod ops;
pub mod optim;
mod random;
pub mod shaped;
mod tensor;

pub use crate::core::pool::empty_host_cache;
pub use crate::core::{format_size, Error, Result, ResultType};
#[doc(hidden)]
pub use api::JoinList;
#[doc(hidden)]
pub use api::{declared_ops, op_table, Dtypes, OpInfo};
pub use api::{IndexItem, IndexItems, IndexSpec, ValuesIndices};
pub use api::{MaskFor, Size2, TensorList};
pub use autograd::{no_grad, DynVar, Var};
pub use device::{CopyTo, Cpu, Cuda, Device, DynDevice, HostSync};
pub use dyn_tensor::DynTensor;
pub use random::{get_rng_state, manual_seed, set_rng_state, RngState};
#[doc(hidden)]
pub use tensor::Is;
pub use tensor::{
    ArgumentOn, AssignElementIs, ClassTargets, DType, Element, ElementIs, Float, GradElementIs,
    GradOn, HasDevice, InputElementIs, IntoShape, MatrixElementIs, ModuleInput, Numeric, OperandOn,
    Scalar, Tensor, MAX_DIMS,
};
pub use tensor::{AsyncSource, Download, HostDevice, PinnedTensor, TensorLiteral, Upload, Waited};

/// The `half` crate, whose `f16` and `bf16` are devtype's 16-bit
/// element types (`Tensor<Cpu, f16>`, `DType::F16`, `DType::BF16`); also in the prelude.
pub use half;
pub use half::{bf16, f16};

/// Everything the seed's code needs: `use devtype::prelude::*;`.
pub mod prelude {
    pub use crate::autograd::no_grad;
    pub use crate::device::{Cpu, Cuda, Device, DynDevice, HostSync};
    pub use crate::nn::{Forward, Module};
    pub use crate::optim::Optimizer;
    pub use crate::tensor::{ArgumentOn, DType, HasDevice, ModuleInput, OperandOn, Tensor};
    pub use crate::DynTensor;
    pub use half::{bf16, f16};
}
