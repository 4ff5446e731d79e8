//! The one error type of devtype.
//!
//! Every fallible operation returns [`Result<T>`](Result). Where PyTorch has a message for the
//! same mistake, the variant's `Display` reproduces it character for character (the texts,
//! with where each comes from in PyTorch, are collected in `docs/pytorch-reference.md`), so a search for the text finds the same answers
//! a PyTorch user would find.

use crate::core::DType;
use crate::core::DynDevice;

/// Shorthand for `std::result::Result<T, devtype::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// PyTorch's hint for a missing driver, kept in one place.
pub(crate) const NO_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

/// Everything that can go wrong in devtype.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Element-wise ops, reductions and `where` (PyTorch's TensorIterator check): the first
    /// non-CPU device is printed first, whatever the argument order.
    #[error("Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!")]
    DeviceMismatch {
        /// The first non-CPU device among the operands (PyTorch's `common_device`).
        first: DynDevice,
        /// The device of the first operand that differs from it.
        second: DynDevice,
    },

    /// Ops whose arguments PyTorch checks one by one (mm, addmm/linear, nll_loss,
    /// index_select, gather, cat): the first tensor argument sets the common device, and the
    /// first argument that differs is named (PyTorch 2.8 and later, verified in 2.15).
    #[error("Expected all tensors to be on the same device, but got {argument} is on {found}, different from other tensors on {common} (when checking argument in method {method})")]
    ArgumentDeviceMismatch {
        /// The device of the first tensor argument.
        common: DynDevice,
        /// The device of the argument that differs.
        found: DynDevice,
        /// PyTorch's name of that argument (`mat1`, `weight`, `index`, ...).
        argument: &'static str,
        /// PyTorch's generated wrapper name (`wrapper_CUDA_addmm`, ...).
        method: &'static str,
    },

    /// More than one CPU 0-dim tensor passed to an op on a GPU.
    #[error("Trying to pass too many CPU scalars to non-CPU kernel!")]
    TooManyCpuScalars,

    /// A typed conversion asked for another device than the tensor is on.
    #[error(
        "cannot view a tensor on {found} as Tensor<{expected}>, a tensor on {wanted}: move it first with `.to(...)`"
    )]
    WrongTypedDevice {
        /// The device type the conversion asked for (`Cuda<0>`).
        expected: String,
        /// That device as PyTorch writes it (`cuda:0`).
        wanted: DynDevice,
        /// The device the tensor is on.
        found: DynDevice,
    },

    /// A device string that `torch.device` rejects as malformed.
    #[error("Invalid device string: '{0}'")]
    InvalidDeviceString(String),

    /// `"".parse::<DynDevice>()`.
    #[error("Device string must not be empty")]
    EmptyDeviceString,

    /// A device string that names no device type PyTorch knows.
    #[error("Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: {0}")]
    UnknownDeviceType(String),

    /// A device index too large to parse.
    #[error("Could not parse device index '{index}' in device string '{string}'")]
    DeviceIndexParse {
        /// The index part.
        index: String,
        /// The whole string.
        string: String,
    },

    /// A device type PyTorch knows but devtype does not run on.
    #[error("devtype runs on cpu and cuda devices only, not on '{0}'")]
    UnsupportedDeviceType(String),

    /// No CUDA driver could be loaded.
    #[error("{}", NO_DRIVER)]
    NoDriver,

    /// A CUDA library other than the driver is missing (`libnvrtc`, `libcublas`).
    #[error("CUDA library {library} could not be loaded; install the CUDA 13 runtime libraries (or the `nvidia-*` wheels) and put them on LD_LIBRARY_PATH")]
    MissingLibrary {
        /// The library that failed to load.
        library: &'static str,
    },

    /// The driver is older than the CUDA version devtype is built for (PyTorch's text).
    #[error("The NVIDIA driver on your system is too old (found version {found}). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, build devtype with the cudarc `cuda-*` feature of your driver's CUDA version (devtype needs {required} or newer).")]
    DriverTooOld {
        /// The CUDA version the driver supports (`12040` for CUDA 12.4).
        found: i32,
        /// The oldest version devtype works with.
        required: i32,
    },

    /// The driver is there but has no GPU with that index.
    #[error(
        "CUDA error: invalid device ordinal (asked for cuda:{ordinal}, {count} device(s) visible)"
    )]
    InvalidDeviceOrdinal {
        /// The index asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },

    /// Any other CUDA driver, NVRTC or cuBLAS failure. The raw code is kept because cudarc's
    /// formatter calls back into the driver.
    #[error("CUDA error in {context}: {name} (code {code})")]
    Cuda {
        /// What devtype was doing.
        context: &'static str,
        /// The symbolic name of the error code.
        name: String,
        /// The raw error code.
        code: i32,
    },

    /// A CUDA library call panicked inside cudarc (a symbol missing after all); devtype caught
    /// it so that no panic reaches the caller.
    #[error("the CUDA library panicked in {call}: {message}")]
    LibraryPanicked {
        /// The call that panicked.
        call: &'static str,
        /// The panic's message.
        message: String,
    },

    /// A broken invariant inside devtype (an op dispatched to the wrong backend): a bug to
    /// report, never the user's mistake.
    #[error("internal error in devtype's {context}: {message} (this is a bug in devtype; please report it)")]
    Internal {
        /// Where it was found.
        context: &'static str,
        /// What was wrong.
        message: String,
    },

    /// A kernel failed to compile with NVRTC.
    #[error("NVRTC failed to compile kernels/{file}:\n{log}")]
    KernelCompile {
        /// The kernel source file.
        file: &'static str,
        /// The compiler's log.
        log: String,
    },

    /// The GPU has no room for an allocation. The text follows PyTorch's, then names the fix.
    #[error("CUDA out of memory. Tried to allocate {}. GPU {device} has a total capacity of {} of which {} is free. Of the allocated memory {} is allocated by devtype, and {} is reserved by devtype but unallocated. Reduce the batch size first; then drop tensors you no longer need.", format_size(*.requested), format_size(*.total), format_size(*.free), format_size(*.allocated), format_size(*.reserved))]
    OutOfMemory {
        /// The GPU index.
        device: usize,
        /// Bytes asked for.
        requested: u64,
        /// The device's total memory.
        total: u64,
        /// Free memory reported by the driver.
        free: u64,
        /// Bytes held by live devtype tensors on that device.
        allocated: u64,
        /// Bytes devtype's memory pool holds beyond `allocated` (freed, kept for reuse).
        reserved: u64,
    },

    /// A host sync happened while the sync debug mode was `error`.
    #[error("called a synchronizing CUDA operation")]
    SynchronizingOperation,

    /// Two shapes that do not broadcast.
    #[error("The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}")]
    BroadcastMismatch {
        /// Size in the first tensor.
        a: usize,
        /// Size in the second tensor.
        b: usize,
        /// The dimension, counted as PyTorch does (in the broadcast result).
        dim: usize,
    },

    /// `matmul` with inner dimensions that differ.
    #[error("{op}: mat1 and mat2 shapes cannot be multiplied ({m}x{k1} and {k2}x{n})")]
    MatmulShape {
        /// `mm` or `addmm`.
        op: &'static str,
        /// Rows of the first operand (batch dims folded in, as PyTorch does).
        m: usize,
        /// Columns of the first operand.
        k1: usize,
        /// Rows of the second operand.
        k2: usize,
        /// Columns of the second operand.
        n: usize,
    },

    /// `matmul` on tensors with fewer than the needed dimensions.
    #[error("{op}: {argument} must be a matrix, got {dims}-D tensor")]
    NotAMatrix {
        /// The op.
        op: &'static str,
        /// Which argument.
        argument: &'static str,
        /// Its number of dimensions.
        dims: usize,
    },

    /// Batched matmul with batch dimensions that do not broadcast.
    #[error("Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: [{got_batch}, {got_k}].")]
    BatchMatmulShape {
        /// Expected batch size.
        batch: usize,
        /// Expected inner size.
        k: usize,
        /// Batch size found.
        got_batch: usize,
        /// Inner size found.
        got_k: usize,
    },

    /// A dimension index outside `[-rank, rank-1]`.
    #[error("Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})")]
    DimOutOfRange {
        /// The dimension asked for.
        dim: isize,
        /// Lowest allowed.
        min: isize,
        /// Highest allowed.
        max: isize,
    },

    /// `reshape` to a shape with another number of elements.
    #[error("shape '{shape:?}' is invalid for input of size {numel}")]
    ReshapeNumel {
        /// The target shape.
        shape: Vec<usize>,
        /// Elements in the input.
        numel: usize,
    },

    /// `view` of a tensor whose strides cannot express the new shape without a copy.
    #[error("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")]
    ViewNotPossible,

    /// `permute` with an order that is not a permutation.
    #[error("permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {rank} is not equal to len(dims) = {given}")]
    PermuteRank {
        /// Rank of the tensor.
        rank: usize,
        /// Length of the order.
        given: usize,
    },

    /// `permute` with a repeated dimension.
    #[error("permute(): duplicate dims are not allowed.")]
    PermuteDuplicate,

    /// Data whose length does not fit the shape asked for.
    #[error("from_vec: {len} values cannot fill a tensor of shape {shape:?} ({numel} elements)")]
    LengthMismatch {
        /// Values given.
        len: usize,
        /// The shape asked for.
        shape: Vec<usize>,
        /// Elements it needs.
        numel: usize,
    },

    /// More dimensions than devtype supports.
    #[error("devtype supports tensors of at most {max} dimensions, got {got}")]
    TooManyDims {
        /// The limit.
        max: usize,
        /// Dimensions asked for.
        got: usize,
    },

    /// A shape whose element count (or the strides of a contiguous tensor of it) does not fit
    /// in memory's address range: no such tensor can exist, so nothing is allocated for it.
    #[error("Storage size calculation overflowed with sizes={sizes:?}")]
    SizeOverflow {
        /// The sizes asked for.
        sizes: Vec<usize>,
    },

    /// The host has no room for an allocation (PyTorch's CPU allocator text). Nothing was
    /// allocated and nothing half-written is left behind.
    #[error("DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)")]
    CpuOutOfMemory {
        /// Bytes asked for.
        bytes: u64,
    },

    /// `Module.to` with an integral dtype (PyTorch's `TypeError`); the name is PyTorch's
    /// (`torch.int64`).
    #[error("nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={}", .0.torch_name())]
    ModuleDType(DType),

    /// Two tensors of different element types in one op.
    #[error("expected scalar type {expected} but found {found}")]
    DTypeMismatch {
        /// The element type the op expected.
        expected: DType,
        /// The one it found.
        found: DType,
    },

    /// An op that needs floating point got integers or booleans.
    #[error("\"{op}\" not implemented for '{dtype}'")]
    UnsupportedDType {
        /// PyTorch's kernel name (`exp_vml_cpu`, `addmm`, ...).
        op: &'static str,
        /// The dtype.
        dtype: DType,
    },

    /// An op PyTorch refuses for these element types or values, with its text:
    /// `Integers to negative integer powers are not allowed.`, negation or subtraction of a
    /// `bool` tensor, `relu` of one.
    #[error("{0}")]
    UnsupportedOperation(&'static str),

    /// An in-place op whose result type its output cannot hold (PyTorch's `canCast` check in
    /// `TensorIterator::compute_types`): `i64_tensor.add_(&f32_tensor)`.
    #[error("result type {result} can't be cast to the desired output type {output}")]
    ResultTypeCast {
        /// The dtype the op computes in (`torch.result_type` of the operands).
        result: DType,
        /// The dtype of the tensor written in place.
        output: DType,
    },

    /// A scalar written into a tensor (a fill, a `clamp` bound) that the tensor's dtype cannot
    /// hold: PyTorch's `checked_convert` (`full([2], 1e6, F16)`, `NaN` into `I64`).
    #[error("value cannot be converted to type {type_name} without overflow")]
    ScalarOverflow {
        /// The C++ type PyTorch names: `c10::Half`, `c10::BFloat16`, `float`, `double`, `int64_t`.
        type_name: &'static str,
    },

    /// `item()` on a tensor with other than one element.
    #[error("a Tensor with {0} elements cannot be converted to Scalar")]
    ItemNotScalar(usize),

    /// An index outside a dimension's size.
    #[error("index {index} is out of bounds for dimension {dim} with size {size}")]
    IndexOutOfBounds {
        /// The index.
        index: i64,
        /// The dimension.
        dim: usize,
        /// Its size.
        size: usize,
    },

    /// An `index_select` (or embedding) index outside the selected dimension: PyTorch's text,
    /// with the index and size kept for programs.
    #[error("index out of range in self")]
    IndexOutOfRange {
        /// The index.
        index: i64,
        /// The size of the selected dimension.
        size: usize,
    },

    /// Shapes that an op cannot combine (cat, stack, gather, losses ...), with PyTorch's text.
    #[error("{0}")]
    Shape(String),

    /// A misuse of autograd (backward twice, backward of a non-scalar, a gradient check that
    /// fails), with PyTorch's text where it has one.
    #[error("{0}")]
    Autograd(String),

    /// An error returned by the backward rule of a graph node: `node` is the node's name
    /// (`MulBackward0`, PyTorch's `grad_fn` name) and the text is `error`'s, unchanged, as in
    /// PyTorch (whose text names the node only in anomaly mode). [`Error::backward_node`]
    /// reads the name; [`Error::root_cause`] the error itself.
    #[error("{error}")]
    InBackward {
        /// The name of the node whose rule failed.
        node: &'static str,
        /// The rule's error.
        error: Box<Error>,
    },

    /// A checkpoint lacks a tensor the module has (PyTorch's `load_state_dict` text).
    #[error("Error(s) in loading state_dict: Missing key(s) in state_dict: \"{name}\".")]
    MissingTensor {
        /// The parameter's name, as in `named_parameters()`.
        name: String,
    },

    /// A checkpoint tensor whose shape differs from the module's (PyTorch's text).
    #[error("Error(s) in loading state_dict: size mismatch for {name}: copying a param with shape {found:?} from checkpoint, the shape in current model is {expected:?}.")]
    TensorShapeMismatch {
        /// The parameter's name.
        name: String,
        /// The shape the module has.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },

    /// A checkpoint that cannot be read or written (I/O, format, dtype, unexpected keys).
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },

    /// A data file that cannot be read or is malformed (an IDX file, one of MNIST's files):
    /// missing, a bad header, truncated, or values a data set cannot hold.
    #[error("data file {path}: {message}")]
    DataFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },

    /// An optimizer hyper-parameter PyTorch rejects, in PyTorch's words
    /// (`Invalid learning rate: -0.1`), or a NaN one (which devtype rejects too).
    #[error("{0}")]
    InvalidOptimizerArgument(String),

    /// Optimizer state that does not fit its parameter: state made for another model, or
    /// loaded from a file written for one. Checked before anything is updated.
    #[error("optimizer state {state} of parameter \"{name}\" has shape {found:?} ({found_dtype}), but the parameter has shape {expected:?} ({expected_dtype}): the state belongs to another model; load the matching state or start a new optimizer")]
    OptimizerStateMismatch {
        /// The parameter's name, as in `named_parameters()`.
        name: String,
        /// Which buffer (`momentum_buffer`, `exp_avg`, `exp_avg_sq`).
        state: &'static str,
        /// The parameter's shape.
        expected: Vec<usize>,
        /// The state buffer's shape.
        found: Vec<usize>,
        /// The parameter's dtype.
        expected_dtype: DType,
        /// The state buffer's dtype.
        found_dtype: DType,
    },

    /// Optimizer state kept for a parameter the model does not have: state of another model.
    #[error("optimizer state {state} is kept for parameter \"{name}\", which the model does not have: the state belongs to another model; load the matching state or start a new optimizer")]
    OptimizerStateUnknownParameter {
        /// The name in the state.
        name: String,
        /// Which buffer (`momentum_buffer`, `exp_avg`).
        state: &'static str,
    },

    /// A CUDA device index past the range a device index can hold (PyTorch's `DeviceIndex`
    /// is an int8, so at most 127).
    #[error("Device index {index} is out of range: CUDA device indices go from 0 to {max}")]
    DeviceIndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The largest index there can be.
        max: usize,
    },

    /// A CUDA library was found and loaded but is not the library it is named after: it lacks
    /// a function devtype needs (a stub `libcuda.so`, a wrong file first on `LD_LIBRARY_PATH`).
    #[error("CUDA library {library} loaded from {path} lacks the symbol `{symbol}`: it is not a usable {library} (a stub or a wrong file first on LD_LIBRARY_PATH?)")]
    BrokenLibrary {
        /// The library devtype wanted (`libcuda`, `libnvrtc`, `libcublas`).
        library: &'static str,
        /// The file that was loaded (its path when known, else the name it was opened by).
        path: String,
        /// The first missing symbol.
        symbol: String,
    },

    /// A data set or collate function panicked while a
    /// [`DataLoader`](crate::data::DataLoader) prepared a batch (in a worker thread, or in the
    /// calling thread with no workers). The loader caught the panic and hands it back at that
    /// batch's place (PyTorch: `Caught ValueError in DataLoader worker process 0.`).
    #[error("Caught panic in DataLoader while preparing batch {batch}: {message}")]
    DataLoaderPanicked {
        /// The batch's position in the epoch (0 for the first).
        batch: usize,
        /// The panic's message.
        message: String,
    },
}

impl Error {
    /// True for both forms of PyTorch's device-mismatch error (also when a backward rule
    /// returned it).
    pub fn is_device_mismatch(&self) -> bool {
        matches!(
            self.root_cause(),
            Error::DeviceMismatch { .. }
                | Error::ArgumentDeviceMismatch { .. }
                | Error::TooManyCpuScalars
        )
    }

    /// The name of the graph node (`MulBackward0`, ...) whose backward rule returned this
    /// error, or `None` for an error of anything else.
    pub fn backward_node(&self) -> Option<&'static str> {
        match self {
            Error::InBackward { node, .. } => Some(node),
            _ => None,
        }
    }

    /// The error itself, without the backward node it came from.
    pub fn root_cause(&self) -> &Error {
        match self {
            Error::InBackward { error, .. } => error.root_cause(),
            e => e,
        }
    }
}

/// Formats a byte count exactly as PyTorch's `c10::CachingAllocator::format_size`:
/// `512 bytes`, `1024.00 KiB` for exactly 1 MiB, `20.00 MiB`, `1.50 GiB`.
///
/// ```
/// assert_eq!(devtype::format_size(1024), "1024 bytes");
/// assert_eq!(devtype::format_size(20 << 20), "20.00 MiB");
/// ```
pub fn format_size(size: u64) -> String {
    if size <= 1024 {
        format!("{size} bytes")
    } else if size <= 1_048_576 {
        format!("{:.2} KiB", size as f64 / 1024.0)
    } else if size <= 1_073_741_824 {
        format!("{:.2} MiB", size as f64 / 1_048_576.0)
    } else {
        format!("{:.2} GiB", size as f64 / 1_073_741_824.0)
    }
}
