//! The backends: what runs on each kind of device, below the ops.
//!
//! - [`cpu`]: strided walks over host memory, split across threads.
//! - [`cuda`]: the CUDA driver on `cudarc` (contexts and streams, stream-ordered memory,
//!   NVRTC with an on-disk cubin cache, cuBLAS, launch geometry, host-sync accounting).
//!
//! Both know storages and layouts (`crate::core`) and nothing of ops: each op family's CPU and
//! CUDA kernels live beside the op in `ops/<family>/{cpu,cuda}.rs` and call in here.

pub(crate) mod cpu;
pub(crate) mod cuda;
