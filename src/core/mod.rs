//! The core every other layer stands on: the error type, element types, devices as values,
//! shapes and layouts (the one place sizes are checked), host and device storage, and the
//! untyped tensor.
//!
//! Nothing here knows an op or a kernel: backends (`cpu`, `cuda`) fill and read storages, ops
//! plan and dispatch, and the fronts give the untyped tensor its device and element types.
//! The error type lives here too because its variants carry dtypes and devices (as candle's
//! do), so it cannot sit below them.

pub(crate) mod cpu_storage;
pub(crate) mod cuda_storage;
pub(crate) mod device;
pub(crate) mod dtype;
pub(crate) mod error;
pub(crate) mod format;
pub(crate) mod layout;
pub(crate) mod per_capture;
pub(crate) mod pinned;
pub(crate) mod pool;
pub(crate) mod raw;
pub(crate) mod storage;

pub use device::DynDevice;
pub use dtype::{DType, Element, Float, Numeric, ResultType, Scalar};
pub use error::{format_size, Error, Result};
pub use layout::MAX_DIMS;
