//! The normalisation layers and `Embedding` with a run-time device (the dynamic front's
//! `DynLayerNorm`, `DynBatchNorm1d`, `DynBatchNorm2d`, `DynGroupNorm`, `DynEmbedding`): the
//! typed layers' math (the same functions, over `DynTensor`), PyTorch's device and dtype
//! checks as `Err`, and moves in place, all or nothing.

use super::dynamic::{DynBuffer, DynModule};
use super::embedding::resolve_padding_idx;
use super::functional::{embedding_on, layer_norm_on};
use super::join_name;
use super::norm::{
    check_groups, group_norm, visit_affine, visit_affine_mut, BatchNormState, Rank1d, Rank2d,
};
use crate::core::error::{Error, Result};
use crate::device::DynDevice;
use crate::dyn_tensor::check::same_device_arguments;
use crate::tensor::DType;
use crate::DynTensor;

/// `[n]` of `value`, `f32`, on `dev`.
fn filled(n: &[usize], value: f64, dev: DynDevice) -> Result<DynTensor> {
    DynTensor::full(n, value, DType::F32, dev)
}

/// `weight` (ones) and `bias` (zeros) of `shape`, parameters, each where asked for.
fn affine_parameters(
    shape: &[usize],
    weight: bool,
    bias: bool,
    dev: DynDevice,
) -> Result<[Option<DynTensor>; 2]> {
    let make = |on: bool, value: f64| {
        on.then(|| DynTensor::parameter(filled(shape, value, dev)?))
            .transpose()
    };
    Ok([make(weight, 1.0)?, make(weight && bias, 0.0)?])
}

/// PyTorch's checks of a layer's kernel before it runs: the device check (`method`, the input
/// first, then the layer's tensors in the kernel's argument order, the first that differs
/// named), then the dtype check (each of them of the input's element type: `expected scalar
/// type Double but found Float`, the text of PyTorch's CPU kernels).
fn check_input(
    method: &'static str,
    input: &DynTensor,
    tensors: &[(&'static str, Option<&DynTensor>)],
) -> Result<()> {
    let args: Vec<(&'static str, &crate::core::raw::RawTensor)> =
        std::iter::once(("input", &input.raw))
            .chain(
                tensors
                    .iter()
                    .filter_map(|&(name, t)| t.map(|t| (name, &t.raw))),
            )
            .collect();
    same_device_arguments(method, &args)?;
    match args[1..].iter().find(|(_, t)| t.dtype != input.dtype()) {
        Some((_, t)) => Err(Error::DTypeMismatch {
            expected: input.dtype(),
            found: t.dtype,
        }),
        None => Ok(()),
    }
}

/// A layer's `DynModule` methods for its optional `weight` and `bias` fields, its only
/// tensors: moved in place together, visited under those names.
macro_rules! affine_layer_parameters {
    () => {
        fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
            visit_affine([&self.weight, &self.bias], prefix, f);
        }

        fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
            visit_affine_mut([&mut self.weight, &mut self.bias], prefix, f);
        }
    };
}

/// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)` with a run-time device:
/// [`LayerNorm`](super::LayerNorm)'s math, `weight` (ones) and `bias` (zeros) of
/// `normalized_shape` as parameters, the options plain fields.
///
/// An input on another device than the parameters is PyTorch's error, as `Err`.
///
/// ```
/// use devtype::nn::{DynLayerNorm, DynModule};
/// use devtype::{DynDevice, DynTensor};
///
/// let dev: DynDevice = "cpu".parse()?;                 // or "cuda:0"
/// let mut norm = DynLayerNorm::new(&[8], DynDevice::cpu())?;
/// norm.to(dev)?;                                      // in place
/// let y = norm.forward(&DynTensor::randn([4, 8], dev)?)?;
/// assert_eq!(y.shape(), &[4, 8]);
/// assert_eq!(norm.named_parameters()[1].0, "bias");
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynLayerNorm {
    /// `normalized_shape`, a parameter, if the layer is affine.
    pub weight: Option<DynTensor>,
    /// `normalized_shape`, a parameter, if the layer has one.
    pub bias: Option<DynTensor>,
    /// The normalised trailing sizes.
    pub normalized_shape: Vec<usize>,
    /// Added to the variance.
    pub eps: f64,
}

impl DynLayerNorm {
    /// `nn.LayerNorm(normalized_shape)`: `eps = 1e-5`, with `weight` and `bias`, `f32`, on
    /// `dev`.
    pub fn new(normalized_shape: &[usize], dev: DynDevice) -> Result<Self> {
        Self::with_options(normalized_shape, 1e-5, true, true, dev)
    }

    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)`, `f32`, on `dev`.
    pub fn with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
        dev: DynDevice,
    ) -> Result<Self> {
        let [weight, bias] = affine_parameters(normalized_shape, elementwise_affine, bias, dev)?;
        Ok(DynLayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }
}

impl DynModule for DynLayerNorm {
    /// The normalised input, scaled and shifted, recorded; PyTorch's device check
    /// (`wrapper_CUDA__native_layer_norm`) first.
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        check_input(
            "wrapper_CUDA__native_layer_norm",
            input,
            &[
                ("weight", self.weight.as_ref()),
                ("bias", self.bias.as_ref()),
            ],
        )?;
        layer_norm_on(
            input,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }

    affine_layer_parameters!();
}

/// `nn.GroupNorm(num_groups, num_channels, eps, affine)` with a run-time device:
/// [`GroupNorm`](super::GroupNorm)'s math and texts, `weight` (ones) and `bias` (zeros) per
/// channel as parameters.
///
/// ```
/// use devtype::nn::{DynGroupNorm, DynModule};
/// use devtype::{DynDevice, DynTensor};
///
/// let dev = DynDevice::cpu();
/// let gn = DynGroupNorm::new(2, 6, dev)?;
/// let y = gn.forward(&DynTensor::randn([4, 6, 5, 5], dev)?)?;
/// assert_eq!(y.shape(), &[4, 6, 5, 5]);
/// assert!(DynGroupNorm::with_options(4, 6, 1e-5, true, dev).is_err()); // 6 % 4 != 0
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynGroupNorm {
    /// `[num_channels]`, a parameter, if the layer is affine.
    pub weight: Option<DynTensor>,
    /// `[num_channels]`, a parameter, if the layer is affine.
    pub bias: Option<DynTensor>,
    num_groups: usize,
    num_channels: usize,
    /// Added to the variance.
    pub eps: f64,
}

impl DynGroupNorm {
    /// `nn.GroupNorm(num_groups, num_channels)`: `eps = 1e-5`, affine, `f32`, on `dev`.
    pub fn new(num_groups: usize, num_channels: usize, dev: DynDevice) -> Result<Self> {
        Self::with_options(num_groups, num_channels, 1e-5, true, dev)
    }

    /// `nn.GroupNorm(num_groups, num_channels, eps, affine)`, `f32`, on `dev`: an error with
    /// PyTorch's text where `num_channels` is not a multiple of `num_groups`.
    pub fn with_options(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        dev: DynDevice,
    ) -> Result<Self> {
        check_groups(num_groups, num_channels)?;
        let [weight, bias] = affine_parameters(&[num_channels], affine, true, dev)?;
        Ok(DynGroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps,
        })
    }

    /// The number of groups.
    pub fn num_groups(&self) -> usize {
        self.num_groups
    }

    /// The number of channels.
    pub fn num_channels(&self) -> usize {
        self.num_channels
    }
}

impl DynModule for DynGroupNorm {
    /// The normalised input `(N, C, *)`, scaled and shifted, recorded; PyTorch's device check
    /// (`wrapper_CUDA__native_group_norm`) first.
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        check_input(
            "wrapper_CUDA__native_group_norm",
            input,
            &[
                ("weight", self.weight.as_ref()),
                ("bias", self.bias.as_ref()),
            ],
        )?;
        group_norm(
            input,
            self.num_groups,
            self.num_channels,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }

    affine_layer_parameters!();
}

/// What both dynamic batch norms do with their shared state.
fn batch_norm_new(
    num_features: usize,
    eps: f64,
    momentum: Option<f64>,
    affine: bool,
    track_running_stats: bool,
    dev: DynDevice,
) -> Result<BatchNormState<DynTensor>> {
    let [weight, bias] = affine_parameters(&[num_features], affine, true, dev)?;
    let stats = track_running_stats
        .then(|| -> Result<_> {
            Ok([
                filled(&[num_features], 0.0, dev)?,
                filled(&[num_features], 1.0, dev)?,
            ])
        })
        .transpose()?;
    Ok(BatchNormState::from_tensors(
        weight.zip(bias).map(|(w, b)| [w, b]),
        stats,
        num_features,
        eps,
        momentum,
    ))
}

/// PyTorch's device and dtype checks of `F.batch_norm`, in the kernel it picks
/// (`_batch_norm_impl_index`): cuDNN's (`wrapper_CUDA__cudnn_batch_norm`) for an input on a
/// GPU, not `bf16`, an affine layer, `eps` at least cuDNN's `1e-5` and a batch within cuDNN's
/// limits; the native one (`wrapper_CUDA__native_batch_norm`) otherwise.
fn batch_norm_check(s: &BatchNormState<DynTensor>, input: &DynTensor) -> Result<()> {
    let stats = s.stats_snapshot();
    let training = s.training || stats.is_none();
    let batch = input.shape().first().copied().unwrap_or(0);
    let batch_limit = match (input.dim() == 2, training) {
        (true, true) => 131_070,
        (true, false) => 262_136,
        (false, true) => 880_801,
        (false, false) => 65_535,
    };
    let cudnn = !input.device().is_cpu()
        && input.dtype() != DType::BF16
        && s.weight.is_some()
        && s.eps >= 1e-5
        && batch <= batch_limit;
    let method = if cudnn {
        "wrapper_CUDA__cudnn_batch_norm"
    } else {
        "wrapper_CUDA__native_batch_norm"
    };
    check_input(
        method,
        input,
        &[
            ("weight", s.weight.as_ref()),
            ("bias", s.bias.as_ref()),
            ("running_mean", stats.as_ref().map(|s| &s.mean)),
            ("running_var", stats.as_ref().map(|s| &s.var)),
        ],
    )
}

/// A batch norm's buffers under PyTorch's names.
fn batch_norm_buffers(
    s: &BatchNormState<DynTensor>,
    prefix: &str,
    f: &mut dyn FnMut(&str, DynBuffer),
) {
    let Some(st) = s.stats_snapshot() else {
        return;
    };
    f(
        &join_name(prefix, "running_mean"),
        DynBuffer::Tensor(st.mean),
    );
    f(&join_name(prefix, "running_var"), DynBuffer::Tensor(st.var));
    f(
        &join_name(prefix, "num_batches_tracked"),
        DynBuffer::Count(st.count),
    );
}

macro_rules! dyn_batch_norm {
    ($(#[$doc:meta])* $name:ident, $kind:ident, $torch:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(BatchNormState<DynTensor>);

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.debug(stringify!($name), f)
            }
        }

        impl $name {
            #[doc = concat!("`nn.", $torch, "(num_features)`: `eps = 1e-5`, `momentum = 0.1`, ")]
            /// affine, tracking running statistics, `f32`, on `dev`, in training mode.
            pub fn new(num_features: usize, dev: DynDevice) -> Result<Self> {
                Self::with_options(num_features, 1e-5, Some(0.1), true, true, dev)
            }

            #[doc = concat!("`nn.", $torch, "(num_features, eps, momentum, affine, track_running_stats)`, `f32`, on `dev`.")]
            ///
            /// `momentum` `None` is a cumulative moving average, as PyTorch's. Without
            /// `affine` there is no `weight` or `bias`; without `track_running_stats` there
            /// are no buffers, and batch statistics are used in evaluation mode too.
            pub fn with_options(
                num_features: usize,
                eps: f64,
                momentum: Option<f64>,
                affine: bool,
                track_running_stats: bool,
                dev: DynDevice,
            ) -> Result<Self> {
                batch_norm_new(num_features, eps, momentum, affine, track_running_stats, dev)
                    .map($name)
            }

            /// The scale, a parameter of `[num_features]` (ones), if the layer is affine.
            pub fn weight(&self) -> Option<&DynTensor> {
                self.0.weight.as_ref()
            }

            /// The shift, a parameter of `[num_features]` (zeros), if the layer is affine.
            pub fn bias(&self) -> Option<&DynTensor> {
                self.0.bias.as_ref()
            }

            /// The running mean (a handle to its current value), if tracked.
            pub fn running_mean(&self) -> Option<DynTensor> {
                self.0.running_mean()
            }

            /// The running (unbiased) variance (a handle to its current value), if tracked.
            pub fn running_var(&self) -> Option<DynTensor> {
                self.0.running_var()
            }

            /// The number of training batches seen, if the layer tracks running statistics.
            pub fn num_batches_tracked(&self) -> Option<i64> {
                self.0.num_batches_tracked()
            }

            /// The number of channels.
            pub fn num_features(&self) -> usize {
                self.0.num_features
            }

            /// Whether the layer is in training mode; new layers are, as PyTorch's.
            pub fn is_training(&self) -> bool {
                self.0.training
            }
        }

        impl DynModule for $name {
            /// The normalised input, scaled and shifted, recorded; in training mode the
            /// running statistics are updated too (not recorded, on the device). PyTorch's
            /// device and dtype checks first.
            fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
                batch_norm_check(&self.0, input)?;
                self.0.forward::<$kind>(input)
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
                self.0.visit_parameters(prefix, f)
            }

            fn visit_parameters_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, &mut DynTensor),
            ) {
                self.0.visit_parameters_mut(prefix, f)
            }

            fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, DynBuffer)) {
                batch_norm_buffers(&self.0, prefix, f)
            }

            fn visit_buffers_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, &mut DynTensor),
            ) {
                if let Some(st) = self.0.stats_mut() {
                    f(&join_name(prefix, "running_mean"), &mut st.mean);
                    f(&join_name(prefix, "running_var"), &mut st.var);
                }
            }

            fn set_training(&mut self, training: bool) {
                self.0.training = training;
            }
        }
    };
}

dyn_batch_norm!(
    /// `nn.BatchNorm1d(num_features, eps, momentum, affine, track_running_stats)` with a
    /// run-time device, over `(N, C)` or `(N, C, L)` inputs: [`BatchNorm1d`](super::BatchNorm1d)'s
    /// math, texts, modes and running statistics (buffers: they move with the layer, in place,
    /// with the parameters, all or nothing).
    ///
    /// ```
    /// use devtype::nn::{DynBatchNorm1d, DynModule};
    /// use devtype::{DynDevice, DynTensor};
    ///
    /// let dev: DynDevice = "cpu".parse()?;                 // or "cuda:0"
    /// let mut bn = DynBatchNorm1d::new(3, DynDevice::cpu())?;
    /// bn.to(dev)?;                                        // the running statistics too
    /// let y = bn.forward(&DynTensor::randn([8, 3], dev)?)?;
    /// assert_eq!(y.shape(), &[8, 3]);
    /// assert_eq!(bn.num_batches_tracked(), Some(1));
    /// bn.eval();                                          // running statistics from now on
    /// let y = bn.forward(&DynTensor::randn([2, 3, 5], dev)?)?;
    /// assert_eq!(y.shape(), &[2, 3, 5]);
    /// assert_eq!(bn.named_parameters().len(), 2);         // the buffers are not trained
    /// # Ok::<(), devtype::Error>(())
    /// ```
    DynBatchNorm1d,
    Rank1d,
    "BatchNorm1d"
);

dyn_batch_norm!(
    /// `nn.BatchNorm2d(num_features, eps, momentum, affine, track_running_stats)` with a
    /// run-time device, over `(N, C, H, W)` inputs: as [`DynBatchNorm1d`], with
    /// [`BatchNorm2d`](super::BatchNorm2d)'s rank check.
    ///
    /// ```
    /// use devtype::nn::{DynBatchNorm2d, DynConv2d, DynModule, DynSequential};
    /// use devtype::{DynDevice, DynTensor};
    ///
    /// let dev = DynDevice::cpu();
    /// let mut model = DynSequential::new()
    ///     .append(DynConv2d::new(3, 4, (3, 3), dev)?)
    ///     .append(DynBatchNorm2d::new(4, dev)?);
    /// model.to(dev)?;                                     // moves the running statistics too
    /// let y = model.forward(&DynTensor::randn([2, 3, 6, 6], dev)?)?;
    /// assert_eq!(y.shape(), &[2, 4, 4, 4]);
    /// let names: Vec<String> = model.named_buffers().into_iter().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["1.running_mean", "1.running_var", "1.num_batches_tracked"]);
    /// # Ok::<(), devtype::Error>(())
    /// ```
    DynBatchNorm2d,
    Rank2d,
    "BatchNorm2d"
);

/// `nn.Embedding(num_embeddings, embedding_dim, padding_idx)` with a run-time device:
/// [`Embedding`](super::Embedding)'s lookup, `weight` `[num_embeddings, embedding_dim]` drawn
/// from N(0, 1), the padding row zeroed and given no gradient.
///
/// The ids are `i64` on the table's device (devtype has no `i32`): ids of another type are PyTorch's
/// `embedding` dtype error, ids on another device its `index_select` device error, as `Err`.
///
/// ```
/// use devtype::nn::{DynEmbedding, DynModule};
/// use devtype::{DynDevice, DynTensor};
///
/// let dev = DynDevice::cpu();
/// let emb = DynEmbedding::with_options(100, 16, Some(0), dev)?;
/// let ids = DynTensor::from_vec(vec![3i64, 14, 0, 92], [2, 2], dev)?;
/// let y = emb.forward(&ids)?;
/// assert_eq!(y.shape(), &[2, 2, 16]);
/// assert_eq!(y.to_vec::<f32>()?[32..48], [0.0; 16]);    // the padding row
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynEmbedding {
    /// `[num_embeddings, embedding_dim]`, a parameter.
    pub weight: DynTensor,
    /// The row that gets no gradient, if any (non-negative).
    pub padding_idx: Option<i64>,
}

impl DynEmbedding {
    /// `nn.Embedding(num_embeddings, embedding_dim)`, `f32`, on `dev`.
    pub fn new(num_embeddings: usize, embedding_dim: usize, dev: DynDevice) -> Result<Self> {
        Self::with_options(num_embeddings, embedding_dim, None, dev)
    }

    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx)`, `f32`, on `dev`; a negative
    /// `padding_idx` counts from the end, as in PyTorch.
    pub fn with_options(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<i64>,
        dev: DynDevice,
    ) -> Result<Self> {
        let padding_idx = resolve_padding_idx(padding_idx, num_embeddings)?;
        let mut weight = DynTensor::randn([num_embeddings, embedding_dim], dev)?;
        if let Some(p) = padding_idx {
            let row = filled(&[embedding_dim], 0.0, dev)?;
            weight = weight.select_scatter(&row, 0, p as isize)?;
        }
        Self::from_weight(weight, padding_idx)
    }

    /// A table from given rows (`nn.Embedding.from_pretrained(weight, freeze=False)`); they
    /// become a parameter.
    pub fn from_weight(weight: DynTensor, padding_idx: Option<i64>) -> Result<Self> {
        Ok(DynEmbedding {
            weight: DynTensor::parameter(weight)?,
            padding_idx,
        })
    }
}

impl DynModule for DynEmbedding {
    /// The rows at the ids `input` (`[..ids, embedding_dim]`), recorded.
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        if input.dtype() != DType::I64 {
            return Err(Error::Shape(format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding)",
                crate::api::conv::legacy_type(&input.raw)
            )));
        }
        embedding_on(input, &self.weight, self.padding_idx)
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
        f(&join_name(prefix, "weight"), &self.weight);
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
        f(&join_name(prefix, "weight"), &mut self.weight);
    }
}
