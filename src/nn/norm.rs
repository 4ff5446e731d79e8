//! `LayerNorm` and `RMSNorm` (over the trailing dims), `BatchNorm1d`, `BatchNorm2d` (per channel,
//! over the batch, with running statistics as buffers) and `GroupNorm`, with PyTorch's parameters
//! (`weight` ones, `bias` zeros), typed on their device.

use super::functional::{input_tensor, or_panic, try_layer_norm, try_rms_norm};
use super::{join_name, Buffer, BufferMut, Forward, Module, Placement};
use crate::core::error::Result;
use crate::device::Device;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};
use crate::DynTensor;

/// The recorded ops the normalisation layers are written in, on both fronts (`Tensor<D, E>`'s
/// `try_` methods, `DynTensor`'s methods), so each layer's math is written once and the
/// dynamic layers compute exactly what the typed ones do. Scalars are `f64`, converted to the
/// element type as the typed front converts them (`E::from_f64`).
pub(crate) trait NormTensor: Clone + Sized {
    fn shape(&self) -> &[usize];
    fn try_mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<Self>;
    fn try_sub(&self, other: &Self) -> Result<Self>;
    fn try_mul(&self, other: &Self) -> Result<Self>;
    fn try_add(&self, other: &Self) -> Result<Self>;
    fn try_square(&self) -> Result<Self>;
    fn try_sqrt(&self) -> Result<Self>;
    fn try_reciprocal(&self) -> Result<Self>;
    fn try_add_scalar(&self, v: f64) -> Result<Self>;
    fn try_mul_scalar(&self, v: f64) -> Result<Self>;
    fn try_reshape(&self, shape: &[isize]) -> Result<Self>;
    fn detach(&self) -> Self;
    /// `*self = value`, for a running statistic (see [`store_in_place`]).
    fn store(&mut self, value: Self) -> Result<()>;
    /// A counter of the replays of the CUDA graph being recorded on this tensor's GPU, if one
    /// is (see [`replay_counter`](crate::device::graph::replay_counter)).
    fn replay_counter(&self) -> Option<std::sync::Arc<std::sync::atomic::AtomicI64>>;
}

/// Trait methods that call the front's own method of that name (`try_sub => sub`).
macro_rules! norm_tensor_ops {
    ($($name:ident => $target:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $name(&self, $($arg: $ty),*) -> Result<Self> {
            Self::$target(self, $($arg),*)
        })*
    };
}

impl<D: Device, E: Float> NormTensor for Tensor<D, E> {
    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
    norm_tensor_ops!(
        try_mean_dims => try_mean_dims(dims: &[isize], keepdim: bool),
        try_sub => try_sub(other: &Self),
        try_mul => try_mul(other: &Self),
        try_add => try_add(other: &Self),
        try_square => try_square(),
        try_sqrt => try_sqrt(),
        try_reciprocal => try_reciprocal(),
        try_reshape => try_reshape(shape: &[isize]),
    );
    fn try_add_scalar(&self, v: f64) -> Result<Self> {
        Tensor::try_add_scalar(self, E::from_f64(v))
    }
    fn try_mul_scalar(&self, v: f64) -> Result<Self> {
        Tensor::try_mul_scalar(self, E::from_f64(v))
    }
    fn detach(&self) -> Self {
        Tensor::detach(self)
    }
    fn store(&mut self, value: Self) -> Result<()> {
        if !store_in_place(&mut self.raw, &value.raw)? {
            *self = value;
        }
        Ok(())
    }
    fn replay_counter(&self) -> Option<std::sync::Arc<std::sync::atomic::AtomicI64>> {
        crate::device::graph::replay_counter(self.raw.device.cuda_index()?)
    }
}

impl NormTensor for DynTensor {
    fn shape(&self) -> &[usize] {
        DynTensor::shape(self)
    }
    norm_tensor_ops!(
        try_mean_dims => mean_dims(dims: &[isize], keepdim: bool),
        try_sub => sub(other: &Self),
        try_mul => mul(other: &Self),
        try_add => add(other: &Self),
        try_square => square(),
        try_sqrt => sqrt(),
        try_reciprocal => reciprocal(),
        try_reshape => reshape(shape: &[isize]),
        try_add_scalar => add_scalar(v: f64),
        try_mul_scalar => mul_scalar(v: f64),
    );
    fn detach(&self) -> Self {
        DynTensor::detach(self)
    }
    fn store(&mut self, value: Self) -> Result<()> {
        if !store_in_place(&mut self.raw, &value.raw)? {
            *self = value;
        }
        Ok(())
    }
    fn replay_counter(&self) -> Option<std::sync::Arc<std::sync::atomic::AtomicI64>> {
        crate::device::graph::replay_counter(self.raw.device.cuda_index()?)
    }
}

/// Moves an optional parameter.
fn move_opt<D: crate::device::CopyTo<D2>, E: Float, D2: Device>(
    p: &Option<Tensor<D, E>>,
    dev: D2,
) -> Result<Option<Tensor<D2, E>>> {
    p.as_ref()
        .map(|p| Module::<D, E>::try_to(p, dev))
        .transpose()
}

/// Visits an optional `weight` and `bias`, under those names.
pub(crate) fn visit_affine<T>(
    [weight, bias]: [&Option<T>; 2],
    prefix: &str,
    f: &mut dyn FnMut(&str, &T),
) {
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p {
            f(&join_name(prefix, name), p);
        }
    }
}

/// [`visit_affine`], mutably.
pub(crate) fn visit_affine_mut<T>(
    [weight, bias]: [&mut Option<T>; 2],
    prefix: &str,
    f: &mut dyn FnMut(&str, &mut T),
) {
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p {
            f(&join_name(prefix, name), p);
        }
    }
}

/// Layer normalisation over the last dims (`nn.LayerNorm(normalized_shape, eps,
/// elementwise_affine, bias)`): `weight` (ones) and `bias` (zeros) of `normalized_shape`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::LayerNorm;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let norm = LayerNorm::new(&[8], Cpu).to(dev);
/// let y = norm.forward(&Tensor::randn([4, 8], Cpu).to(dev));
/// assert_eq!(y.shape(), &[4, 8]);
/// assert_eq!(norm.named_parameters()[1].0, "bias");
/// ```
#[derive(Clone)]
pub struct LayerNorm<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    bias: Option<Tensor<D, E>>,
    normalized_shape: Vec<usize>,
    eps: f64,
}

crate::tensor::debug_on_host!(LayerNorm<D, E: crate::tensor::Float> { weight, bias, normalized_shape, eps });

impl<D: Device> LayerNorm<D, f32> {
    /// `nn.LayerNorm(normalized_shape)`: `eps = 1e-5`, with `weight` and `bias`, in `f32`.
    #[track_caller]
    pub fn new(normalized_shape: &[usize], dev: D) -> Self {
        or_panic(Self::try_with_options(
            normalized_shape,
            1e-5,
            true,
            true,
            dev,
        ))
    }
}

impl<D: Device, E: Float> LayerNorm<D, E> {
    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)` of `E`, on `dev`.
    pub fn try_with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
        dev: D,
    ) -> Result<Self> {
        let weight = elementwise_affine
            .then(|| Tensor::<D, E>::try_ones(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        let bias = (elementwise_affine && bias)
            .then(|| Tensor::<D, E>::try_zeros(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }

    /// The scale, a parameter of `normalized_shape`, if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The shift, a parameter of `normalized_shape`, if the layer has one.
    pub fn bias(&self) -> Option<&Tensor<D, E>> {
        self.bias.as_ref()
    }

    /// The normalised trailing sizes.
    pub fn normalized_shape(&self) -> &[usize] {
        &self.normalized_shape
    }

    /// The normalised input, scaled and shifted, recorded.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        try_layer_norm(
            &input_tensor(&input),
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

impl<D: Device, E: Float> Forward<D, E> for LayerNorm<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        or_panic(self.try_forward(input))
    }
}

impl<D: Device, E: Float> Placement for LayerNorm<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for LayerNorm<D, E> {
    type On<D2: Device> = LayerNorm<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<LayerNorm<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(LayerNorm {
            weight: move_opt(&self.weight, dev)?,
            bias: move_opt(&self.bias, dev)?,
            normalized_shape: self.normalized_shape.clone(),
            eps: self.eps,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        visit_affine([&self.weight, &self.bias], prefix, f);
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        visit_affine_mut([&mut self.weight, &mut self.bias], prefix, f);
    }
}

/// RMS normalisation over the last dims (`nn.RMSNorm(normalized_shape, eps,
/// elementwise_affine)`): `x / √(mean(x²) + eps) · weight`, `weight` ones; `eps` `None` is
/// the element type's machine epsilon, as PyTorch's.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::RMSNorm;
///
/// let norm = RMSNorm::new(&[8], Cpu);
/// let y = norm.forward(&Tensor::randn([4, 8], Cpu));
/// assert_eq!(y.shape(), &[4, 8]);
/// ```
#[derive(Clone)]
pub struct RMSNorm<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    normalized_shape: Vec<usize>,
    eps: Option<f64>,
}

crate::tensor::debug_on_host!(RMSNorm<D, E: crate::tensor::Float> { weight, normalized_shape, eps });

impl<D: Device> RMSNorm<D, f32> {
    /// `nn.RMSNorm(normalized_shape)`: `eps = None`, with `weight`, in `f32`.
    #[track_caller]
    pub fn new(normalized_shape: &[usize], dev: D) -> Self {
        or_panic(Self::try_with_options(normalized_shape, None, true, dev))
    }
}

impl<D: Device, E: Float> RMSNorm<D, E> {
    /// `nn.RMSNorm(normalized_shape, eps, elementwise_affine)` of `E`, on `dev`.
    pub fn try_with_options(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
        dev: D,
    ) -> Result<Self> {
        let weight = elementwise_affine
            .then(|| Tensor::<D, E>::try_ones(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }

    /// The scale, a parameter of `normalized_shape`, if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The normalised input, scaled, recorded.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        try_rms_norm(
            &input_tensor(&input),
            &self.normalized_shape,
            self.weight.as_ref(),
            self.eps,
        )
    }
}

impl<D: Device, E: Float> Forward<D, E> for RMSNorm<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        or_panic(self.try_forward(input))
    }
}

impl<D: Device, E: Float> Placement for RMSNorm<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for RMSNorm<D, E> {
    type On<D2: Device> = RMSNorm<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<RMSNorm<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(RMSNorm {
            weight: move_opt(&self.weight, dev)?,
            normalized_shape: self.normalized_shape.clone(),
            eps: self.eps,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        if let Some(w) = &self.weight {
            f(&join_name(prefix, "weight"), w);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        if let Some(w) = &mut self.weight {
            f(&join_name(prefix, "weight"), w);
        }
    }
}

/// Which batch-norm layer: the input ranks it takes and PyTorch's message for another one.
pub(crate) trait BatchNormKind {
    /// Whether an input of `ndim` dims is accepted.
    fn accepts(ndim: usize) -> bool;
    /// PyTorch's text for an input of `ndim` dims.
    fn rank_error(ndim: usize) -> String;
}

/// The running statistics of a batch-norm layer: `running_mean`, `running_var` on the device,
/// `num_batches_tracked` on the host: `count`, plus the replays of the CUDA graphs that
/// recorded an update (`replays`, see [`replay_counter`](crate::device::graph::replay_counter)).
pub(crate) struct RunningStats<T> {
    pub(crate) mean: T,
    pub(crate) var: T,
    pub(crate) count: i64,
    pub(crate) replays: Vec<std::sync::Arc<std::sync::atomic::AtomicI64>>,
}

impl<T> RunningStats<T> {
    pub(crate) fn new(mean: T, var: T, count: i64) -> Self {
        RunningStats {
            mean,
            var,
            count,
            replays: Vec::new(),
        }
    }

    /// `num_batches_tracked`: the batches counted on the host and those graph replays ran.
    pub(crate) fn tracked(&self) -> i64 {
        let replayed: i64 = self
            .replays
            .iter()
            .map(|r| r.load(std::sync::atomic::Ordering::SeqCst))
            .sum();
        self.count + replayed
    }

    /// Counts an update that the CUDA graph being recorded will make at each replay, through
    /// its counter (once per update: a layer used twice in a graph holds its counter twice).
    /// The counters of graphs already dropped (no handles left but this list's: nothing can
    /// advance them any more) are folded into `count` first, so a layer recorded into a new
    /// graph every epoch keeps only the live graphs' counters, not one per recording.
    pub(crate) fn count_replays(&mut self, counter: std::sync::Arc<std::sync::atomic::AtomicI64>) {
        use std::sync::Arc;
        let dropped: Vec<bool> = self
            .replays
            .iter()
            .map(|r| {
                let here = self.replays.iter().filter(|o| Arc::ptr_eq(o, r)).count();
                Arc::strong_count(r) == here
            })
            .collect();
        let mut dropped = dropped.into_iter();
        let mut folded = 0;
        self.replays.retain(|r| {
            let gone = dropped.next().unwrap_or(false);
            if gone {
                folded += r.load(std::sync::atomic::Ordering::SeqCst);
            }
            !gone
        });
        self.count += folded;
        self.replays.push(counter);
    }

    /// `count` made the whole of `num_batches_tracked` (the replays so far folded in), for a
    /// caller that sets it (loading a checkpoint); later replays count on from there.
    pub(crate) fn count_mut(&mut self) -> &mut i64 {
        for r in &self.replays {
            self.count += r.swap(0, std::sync::atomic::Ordering::SeqCst);
        }
        &mut self.count
    }
}

/// A copy is a layer of its own: the statistics' handles and the count so far, not the
/// graphs' counters (their replays update the original's buffers, not the copy's).
impl<T: Clone> Clone for RunningStats<T> {
    fn clone(&self) -> Self {
        RunningStats::new(self.mean.clone(), self.var.clone(), self.tracked())
    }
}

/// For `*dst = value` on a running statistic: on a GPU, where no other tensor holds `dst`'s
/// buffer (no handle from `running_mean()`, no view), the values are copied into that buffer
/// on the stream and `true` is returned: a CUDA graph that captured the update then updates
/// the statistic at every replay, as PyTorch's in-place `running_mean` update does (a new
/// buffer would be rewritten from the captured old one each time). Elsewhere `false`: the
/// caller rebinds `dst` (value semantics: a handle taken earlier keeps its values).
fn store_in_place(
    raw: &mut crate::core::raw::RawTensor,
    value: &crate::core::raw::RawTensor,
) -> Result<bool> {
    let same = raw.shape() == value.shape() && raw.dtype == value.dtype;
    if raw.device.is_cuda() && same && raw.storage.get_mut().is_some() {
        crate::ops::copy::copy_into_gpu(raw, value)?;
        return Ok(true);
    }
    Ok(false)
}

/// What the batch-norm layers of both fronts share (`BatchNorm1d`, `BatchNorm2d` over
/// `Tensor<D, E>`, `DynBatchNorm1d`, `DynBatchNorm2d` over `DynTensor`): the parameters, the
/// running statistics (behind a lock, as `forward` takes `&self` and updates them in training,
/// as PyTorch does in place), and the options.
pub(crate) struct BatchNormState<T> {
    pub(crate) weight: Option<T>,
    pub(crate) bias: Option<T>,
    pub(crate) stats: Option<std::sync::Mutex<RunningStats<T>>>,
    pub(crate) num_features: usize,
    pub(crate) eps: f64,
    pub(crate) momentum: Option<f64>,
    pub(crate) training: bool,
}

impl<T: Clone> BatchNormState<T> {
    /// A layer in training mode with the given tensors: `affine` `[weight, bias]` (ones,
    /// zeros) and `stats` `[running_mean, running_var]` (zeros, ones) when tracked.
    pub(crate) fn from_tensors(
        affine: Option<[T; 2]>,
        stats: Option<[T; 2]>,
        num_features: usize,
        eps: f64,
        momentum: Option<f64>,
    ) -> Self {
        let (weight, bias) = match affine {
            Some([w, b]) => (Some(w), Some(b)),
            None => (None, None),
        };
        BatchNormState {
            weight,
            bias,
            stats: stats.map(|[mean, var]| std::sync::Mutex::new(RunningStats::new(mean, var, 0))),
            num_features,
            eps,
            momentum,
            training: true,
        }
    }

    /// The running statistics, locked (a panic elsewhere while they were held leaves them
    /// whole: every update replaces them at once).
    pub(crate) fn stats(&self) -> Option<std::sync::MutexGuard<'_, RunningStats<T>>> {
        self.stats
            .as_ref()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The running statistics, mutably, without locking (`&mut self`).
    pub(crate) fn stats_mut(&mut self) -> Option<&mut RunningStats<T>> {
        self.stats
            .as_mut()
            .map(|s| s.get_mut().unwrap_or_else(|e| e.into_inner()))
    }

    /// The options and mode, as a layer's `Debug` shows them (not the tensors: no host sync).
    pub(crate) fn debug(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("num_features", &self.num_features)
            .field("eps", &self.eps)
            .field("momentum", &self.momentum)
            .field("affine", &self.weight.is_some())
            .field("track_running_stats", &self.stats.is_some())
            .field("training", &self.training)
            .finish()
    }

    /// A handle to the running mean, if tracked.
    pub(crate) fn running_mean(&self) -> Option<T> {
        self.stats().map(|s| s.mean.clone())
    }

    /// A handle to the running variance, if tracked.
    pub(crate) fn running_var(&self) -> Option<T> {
        self.stats().map(|s| s.var.clone())
    }

    /// The number of training batches seen, if tracked.
    pub(crate) fn num_batches_tracked(&self) -> Option<i64> {
        self.stats().map(|s| s.tracked())
    }

    /// Handles to the running statistics, taken before a visitor runs (it may use the layer:
    /// its forward locks too).
    pub(crate) fn stats_snapshot(&self) -> Option<RunningStats<T>> {
        self.stats().map(|s| s.clone())
    }
}

impl<D: Device, E: Float> BatchNormState<Tensor<D, E>> {
    fn new(
        num_features: usize,
        eps: f64,
        momentum: Option<f64>,
        affine: bool,
        track_running_stats: bool,
        dev: D,
    ) -> Result<Self> {
        let filled = |one: bool| {
            if one {
                Tensor::<D, E>::try_ones([num_features], dev)
            } else {
                Tensor::<D, E>::try_zeros([num_features], dev)
            }
        };
        let affine = affine
            .then(|| -> Result<_> {
                Ok([
                    Tensor::parameter(filled(true)?),
                    Tensor::parameter(filled(false)?),
                ])
            })
            .transpose()?;
        let stats = track_running_stats
            .then(|| -> Result<_> { Ok([filled(false)?, filled(true)?]) })
            .transpose()?;
        Ok(Self::from_tensors(
            affine,
            stats,
            num_features,
            eps,
            momentum,
        ))
    }

    fn try_to<D2: Device>(&self, dev: D2) -> Result<BatchNormState<Tensor<D2, E>>>
    where
        D: crate::device::CopyTo<D2>,
    {
        let stats = match self.stats() {
            Some(s) => Some(std::sync::Mutex::new(RunningStats::new(
                Module::<D, E>::try_to(&s.mean, dev)?,
                Module::<D, E>::try_to(&s.var, dev)?,
                s.tracked(),
            ))),
            None => None,
        };
        Ok(BatchNormState {
            weight: move_opt(&self.weight, dev)?,
            bias: move_opt(&self.bias, dev)?,
            stats,
            num_features: self.num_features,
            eps: self.eps,
            momentum: self.momentum,
            training: self.training,
        })
    }

    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, Buffer<D, E>)) {
        let Some(s) = self.stats_snapshot() else {
            return;
        };
        f(&join_name(prefix, "running_mean"), Buffer::Tensor(s.mean));
        f(&join_name(prefix, "running_var"), Buffer::Tensor(s.var));
        f(
            &join_name(prefix, "num_batches_tracked"),
            Buffer::Count(s.count), // a snapshot: replays folded in
        );
    }

    fn visit_buffers_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, BufferMut<'_, D, E>)) {
        let Some(s) = self.stats_mut() else {
            return;
        };
        f(
            &join_name(prefix, "running_mean"),
            BufferMut::Tensor(&mut s.mean),
        );
        f(
            &join_name(prefix, "running_var"),
            BufferMut::Tensor(&mut s.var),
        );
        f(
            &join_name(prefix, "num_batches_tracked"),
            BufferMut::Count(s.count_mut()),
        );
    }
}

impl<T: NormTensor> BatchNormState<T> {
    pub(crate) fn forward<K: BatchNormKind>(&self, x: &T) -> Result<T> {
        let shape = x.shape().to_vec();
        let ndim = shape.len();
        if !K::accepts(ndim) {
            return Err(crate::Error::Shape(K::rank_error(ndim)));
        }
        let batch_stats = self.training || self.stats.is_none();
        let per_channel: usize = shape[0] * shape[2..].iter().product::<usize>();
        if batch_stats && per_channel == 1 {
            return Err(crate::Error::Shape(format!(
                "Expected more than 1 value per channel when training, got input size torch.Size([{}])",
                shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        let c = shape[1];
        if c != self.num_features {
            let what = if self.stats.is_some() {
                Some("running_mean")
            } else if self.weight.is_some() {
                Some("weight")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(crate::Error::Shape(format!(
                    "{what} should contain {c} elements not {}",
                    self.num_features
                )));
            }
        }
        // `[1, C, 1, ...]`: a per-channel vector broadcast over the input.
        let mut channel_shape = vec![1isize; ndim];
        channel_shape[1] = c as isize;
        let per_channel_view = |t: &T| t.try_reshape(&channel_shape);
        let y = if batch_stats {
            let dims: Vec<isize> = std::iter::once(0).chain(2..ndim as isize).collect();
            let mean = x.try_mean_dims(&dims, true)?;
            let centred = x.try_sub(&mean)?;
            let var = centred.try_square()?.try_mean_dims(&dims, true)?;
            if self.training {
                if let Some(mut s) = self.stats() {
                    // Not recorded (detached), on the device: no host sync. The running
                    // variance is the unbiased one, as PyTorch's. On a GPU each is written
                    // back into its own buffer where nothing else holds it (see
                    // `store_in_place`).
                    // In a CUDA graph's recording the update runs at each replay, and the count
                    // follows the replays. A cumulative average (`momentum: None`) would bake
                    // `1 / count` into the graph: refused there, as PyTorch's reads the count
                    // back (`float(num_batches_tracked)`), a host sync the driver refuses.
                    let replays = s.mean.replay_counter();
                    if replays.is_some() && self.momentum.is_none() {
                        return Err(crate::backend::cuda::context::driver_error(
                            "BatchNorm with momentum=None (its factor reads num_batches_tracked)",
                            cudarc::driver::DriverError(
                                cudarc::driver::sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                            ),
                        ));
                    }
                    let count = s.tracked() + 1;
                    let factor = self.momentum.unwrap_or(1.0 / count as f64);
                    let n = per_channel as f64;
                    let batch_mean = mean
                        .detach()
                        .try_reshape(&[c as isize])?
                        .try_mul_scalar(factor)?;
                    let batch_var = var
                        .detach()
                        .try_reshape(&[c as isize])?
                        .try_mul_scalar(n / (n - 1.0))?
                        .try_mul_scalar(factor)?;
                    let new_mean = s.mean.try_mul_scalar(1.0 - factor)?.try_add(&batch_mean)?;
                    let new_var = s.var.try_mul_scalar(1.0 - factor)?.try_add(&batch_var)?;
                    s.mean.store(new_mean)?;
                    s.var.store(new_var)?;
                    match replays {
                        Some(r) => s.count_replays(r),
                        None => s.count += 1,
                    }
                }
            }
            let rstd = var.try_add_scalar(self.eps)?.try_sqrt()?.try_reciprocal()?;
            centred.try_mul(&rstd)?
        } else {
            let s = self
                .stats()
                .expect("eval mode without batch statistics has running stats");
            let mean = per_channel_view(&s.mean)?;
            let rstd = per_channel_view(
                &s.var
                    .try_add_scalar(self.eps)?
                    .try_sqrt()?
                    .try_reciprocal()?,
            )?;
            x.try_sub(&mean)?.try_mul(&rstd)?
        };
        affine(y, self.weight.as_ref(), self.bias.as_ref(), &channel_shape)
    }

    pub(crate) fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &T)) {
        visit_affine([&self.weight, &self.bias], prefix, f);
    }

    pub(crate) fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut T)) {
        visit_affine_mut([&mut self.weight, &mut self.bias], prefix, f);
    }
}

impl<T: Clone> Clone for BatchNormState<T> {
    /// A copy whose running statistics go their own way from here (as `copy.deepcopy`'s);
    /// the parameters are the same handles, as every layer's `clone`.
    fn clone(&self) -> Self {
        BatchNormState {
            weight: self.weight.clone(),
            bias: self.bias.clone(),
            stats: self.stats().map(|s| std::sync::Mutex::new(s.clone())),
            num_features: self.num_features,
            eps: self.eps,
            momentum: self.momentum,
            training: self.training,
        }
    }
}

/// `y · weight + bias`, the per-channel parameters viewed as `channel_shape`.
fn affine<T: NormTensor>(
    mut y: T,
    weight: Option<&T>,
    bias: Option<&T>,
    channel_shape: &[isize],
) -> Result<T> {
    if let Some(w) = weight {
        y = y.try_mul(&w.try_reshape(channel_shape)?)?;
    }
    if let Some(b) = bias {
        y = y.try_add(&b.try_reshape(channel_shape)?)?;
    }
    Ok(y)
}

macro_rules! batch_norm {
    ($(#[$doc:meta])* $name:ident, $kind:ident, $torch:literal, $accepts:expr, $rank_error:expr) => {
        /// The input ranks of
        #[doc = concat!("[`", stringify!($name), "`].")]
        pub(crate) struct $kind;

        impl BatchNormKind for $kind {
            fn accepts(ndim: usize) -> bool {
                ($accepts)(ndim)
            }
            fn rank_error(ndim: usize) -> String {
                ($rank_error)(ndim)
            }
        }

        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name<D: Device, E: Float = f32>(BatchNormState<Tensor<D, E>>);

        impl<D: crate::device::HostSync, E: Float> std::fmt::Debug for $name<D, E> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.debug(stringify!($name), f)
            }
        }

        impl<D: Device> $name<D, f32> {
            #[doc = concat!("`nn.", $torch, "(num_features)`: `eps = 1e-5`, `momentum = 0.1`, ")]
            /// affine, tracking running statistics, in `f32`, in training mode.
            #[track_caller]
            pub fn new(num_features: usize, dev: D) -> Self {
                or_panic(Self::try_with_options(num_features, 1e-5, Some(0.1), true, true, dev))
            }
        }

        impl<D: Device, E: Float> $name<D, E> {
            #[doc = concat!("`nn.", $torch, "(num_features, eps, momentum, affine, track_running_stats)` of `E`, on `dev`.")]
            ///
            /// `momentum` `None` is a cumulative moving average (each batch weighs
            /// `1 / num_batches_tracked`), as PyTorch's. Without `affine` there is no `weight`
            /// or `bias`; without `track_running_stats` there are no buffers, and batch
            /// statistics are used in evaluation mode too.
            pub fn try_with_options(
                num_features: usize,
                eps: f64,
                momentum: Option<f64>,
                affine: bool,
                track_running_stats: bool,
                dev: D,
            ) -> Result<Self> {
                BatchNormState::new(num_features, eps, momentum, affine, track_running_stats, dev)
                    .map($name)
            }

            /// The scale, a parameter of `[num_features]` (ones), if the layer is affine.
            pub fn weight(&self) -> Option<&Tensor<D, E>> {
                self.0.weight.as_ref()
            }

            /// The shift, a parameter of `[num_features]` (zeros), if the layer is affine.
            pub fn bias(&self) -> Option<&Tensor<D, E>> {
                self.0.bias.as_ref()
            }

            /// The running mean (a handle to its current value; zeros at first), if the layer
            /// tracks running statistics.
            pub fn running_mean(&self) -> Option<Tensor<D, E>> {
                self.0.running_mean()
            }

            /// The running (unbiased) variance (a handle to its current value; ones at first),
            /// if the layer tracks running statistics.
            pub fn running_var(&self) -> Option<Tensor<D, E>> {
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

            /// Whether the layer is in training mode (batch statistics, running statistics
            /// updated); new layers are, as PyTorch's.
            pub fn is_training(&self) -> bool {
                self.0.training
            }

            /// The normalised input, scaled and shifted, recorded. In training mode the
            /// running statistics are updated too (not recorded, on the device).
            pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
                &self,
                input: I,
            ) -> Result<Tensor<D, E>> {
                self.0.forward::<$kind>(&input_tensor(&input))
            }
        }

        impl<D: Device, E: Float> Forward<D, E> for $name<D, E> {
            #[track_caller]
            fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
                or_panic(self.try_forward(input))
            }
        }

        impl<D: Device, E: Float> Placement for $name<D, E> {
            type Device = D;
        }

        impl<D: Device, E: Float> super::Precision for $name<D, E> {
            type Element = E;
        }

        impl<D: Device, E: Float> Module<D, E> for $name<D, E> {
            type On<D2: Device> = $name<D2, E>;

            fn try_to<D2: Device>(&self, dev: D2) -> Result<$name<D2, E>>
            where
                D: crate::device::CopyTo<D2>,
            {
                self.0.try_to(dev).map($name)
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
                self.0.visit_parameters(prefix, f)
            }

            fn visit_parameters_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, &mut Tensor<D, E>),
            ) {
                self.0.visit_parameters_mut(prefix, f)
            }

            fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, Buffer<D, E>)) {
                self.0.visit_buffers(prefix, f)
            }

            fn visit_buffers_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, BufferMut<'_, D, E>),
            ) {
                self.0.visit_buffers_mut(prefix, f)
            }

            fn set_training(&mut self, training: bool) {
                self.0.training = training;
            }
        }
    };
}

batch_norm!(
    /// Batch normalisation over `(N, C)` or `(N, C, L)` inputs (`nn.BatchNorm1d(num_features,
    /// eps, momentum, affine, track_running_stats)`): each channel normalised with the
    /// batch's mean and biased variance in training mode, with `running_mean` and
    /// `running_var` in evaluation mode; `weight` (ones) and `bias` (zeros) per channel.
    ///
    /// The running statistics are buffers, not parameters: they move with the layer, are
    /// saved and loaded with it (`running_mean`, `running_var`, `num_batches_tracked`, as
    /// PyTorch's `state_dict`), and are updated by every training-mode `forward` with
    /// `momentum` (0.1) and the unbiased variance, on the device and unrecorded.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::BatchNorm1d;
    ///
    /// let dev = Cpu;                                   // or Cuda::<0>::open()?
    /// let mut bn = BatchNorm1d::new(3, Cpu).to(dev);
    /// let y = bn.forward(&Tensor::randn([8, 3], Cpu).to(dev));
    /// assert_eq!(y.shape(), &[8, 3]);
    /// assert_eq!(bn.num_batches_tracked(), Some(1));
    /// bn.eval();                                       // running statistics from now on
    /// let y = bn.forward(&Tensor::randn([2, 3, 5], Cpu).to(dev));
    /// assert_eq!(y.shape(), &[2, 3, 5]);
    /// assert_eq!(bn.parameters().len(), 2);            // weight, bias: the buffers are not trained
    /// ```
    BatchNorm1d,
    Rank1d,
    "BatchNorm1d",
    |ndim| ndim == 2 || ndim == 3,
    |ndim| format!("expected 2D or 3D input (got {ndim}D input)")
);

batch_norm!(
    /// Batch normalisation over `(N, C, H, W)` inputs (`nn.BatchNorm2d(num_features, eps,
    /// momentum, affine, track_running_stats)`): each channel normalised over the batch and
    /// the image, as [`BatchNorm1d`] (the same buffers, updates and modes).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::{BatchNorm2d, Conv2d};
    ///
    /// let dev = Cpu;                                   // or Cuda::<0>::open()?
    /// let conv = Conv2d::new(3, 4, (3, 3), Cpu).to(dev);
    /// let bn = BatchNorm2d::new(4, Cpu).to(dev);      // moves the running statistics too
    /// let y = bn.forward(conv.forward(&Tensor::randn([2, 3, 6, 6], Cpu).to(dev)));
    /// assert_eq!(y.shape(), &[2, 4, 4, 4]);
    /// let names: Vec<String> = bn.named_buffers().into_iter().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["running_mean", "running_var", "num_batches_tracked"]);
    /// ```
    BatchNorm2d,
    Rank2d,
    "BatchNorm2d",
    |ndim| ndim == 4,
    |ndim| format!("expected 4D input (got {ndim}D input)")
);

/// Group normalisation (`nn.GroupNorm(num_groups, num_channels, eps, affine)`): the channels
/// of each sample split into `num_groups` groups, each normalised with its own mean and biased
/// variance over its channels and every position; `weight` (ones) and `bias` (zeros) per
/// channel. The same in training and evaluation mode (no buffers).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::GroupNorm;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let gn = GroupNorm::new(2, 6, Cpu).to(dev);
/// let y = gn.forward(&Tensor::randn([4, 6, 5, 5], Cpu).to(dev));
/// assert_eq!(y.shape(), &[4, 6, 5, 5]);
/// assert!(GroupNorm::<Cpu>::try_with_options(4, 6, 1e-5, true, Cpu).is_err()); // 6 % 4 != 0
/// ```
#[derive(Clone)]
pub struct GroupNorm<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    bias: Option<Tensor<D, E>>,
    num_groups: usize,
    num_channels: usize,
    eps: f64,
}

crate::tensor::debug_on_host!(GroupNorm<D, E: crate::tensor::Float> { weight, bias, num_groups, num_channels, eps });

impl<D: Device> GroupNorm<D, f32> {
    /// `nn.GroupNorm(num_groups, num_channels)`: `eps = 1e-5`, affine, in `f32`. Panics with
    /// PyTorch's text where `num_channels` is not a multiple of `num_groups`.
    #[track_caller]
    pub fn new(num_groups: usize, num_channels: usize, dev: D) -> Self {
        or_panic(Self::try_with_options(
            num_groups,
            num_channels,
            1e-5,
            true,
            dev,
        ))
    }
}

impl<D: Device, E: Float> GroupNorm<D, E> {
    /// `nn.GroupNorm(num_groups, num_channels, eps, affine)` of `E`, on `dev`: an error with
    /// PyTorch's text where `num_channels` is not a multiple of `num_groups`.
    pub fn try_with_options(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        dev: D,
    ) -> Result<Self> {
        check_groups(num_groups, num_channels)?;
        let weight = affine
            .then(|| Tensor::<D, E>::try_ones([num_channels], dev).map(Tensor::parameter))
            .transpose()?;
        let bias = affine
            .then(|| Tensor::<D, E>::try_zeros([num_channels], dev).map(Tensor::parameter))
            .transpose()?;
        Ok(GroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps,
        })
    }

    /// The scale, a parameter of `[num_channels]`, if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The shift, a parameter of `[num_channels]`, if the layer is affine.
    pub fn bias(&self) -> Option<&Tensor<D, E>> {
        self.bias.as_ref()
    }

    /// The number of groups.
    pub fn num_groups(&self) -> usize {
        self.num_groups
    }

    /// The normalised input `(N, C, *)`, scaled and shifted, recorded.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        group_norm(
            &input_tensor(&input),
            self.num_groups,
            self.num_channels,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

/// PyTorch's check of `nn.GroupNorm(num_groups, num_channels)`'s arguments.
pub(crate) fn check_groups(num_groups: usize, num_channels: usize) -> Result<()> {
    if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
        return Err(crate::Error::Shape(format!(
            "num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
        )));
    }
    Ok(())
}

/// Group normalisation of `x` `(N, C, *)` with PyTorch's checks and texts, on either front
/// (`GroupNorm`, `DynGroupNorm`).
pub(crate) fn group_norm<T: NormTensor>(
    x: &T,
    num_groups: usize,
    num_channels: usize,
    weight: Option<&T>,
    bias: Option<&T>,
    eps: f64,
) -> Result<T> {
    let shape = x.shape().to_vec();
    let dims = |s: &[usize]| {
        let d: Vec<String> = s.iter().map(|d| d.to_string()).collect();
        format!("[{}]", d.join(", "))
    };
    if shape.len() < 2 {
        return Err(crate::Error::Shape(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            shape.len()
        )));
    }
    let (n, c, g) = (shape[0], shape[1], num_groups);
    if !c.is_multiple_of(g) {
        return Err(crate::Error::Shape(format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={g}",
                dims(&shape)
            )));
    }
    if weight.is_some() && c != num_channels {
        return Err(crate::Error::Shape(format!(
                "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [{}] and input of shape {}",
                num_channels,
                dims(&shape)
            )));
    }
    let grouped = x.try_reshape(&[n as isize, g as isize, -1])?;
    let mean = grouped.try_mean_dims(&[2], true)?;
    let centred = grouped.try_sub(&mean)?;
    let var = centred.try_square()?.try_mean_dims(&[2], true)?;
    let rstd = var.try_add_scalar(eps)?.try_sqrt()?.try_reciprocal()?;
    let shape_isize: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    let y = centred.try_mul(&rstd)?.try_reshape(&shape_isize)?;
    let mut channel_shape = vec![1isize; shape.len()];
    channel_shape[1] = c as isize;
    affine(y, weight, bias, &channel_shape)
}

impl<D: Device, E: Float> Forward<D, E> for GroupNorm<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        or_panic(self.try_forward(input))
    }
}

impl<D: Device, E: Float> Placement for GroupNorm<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> super::Precision for GroupNorm<D, E> {
    type Element = E;
}

impl<D: Device, E: Float> Module<D, E> for GroupNorm<D, E> {
    type On<D2: Device> = GroupNorm<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<GroupNorm<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(GroupNorm {
            weight: move_opt(&self.weight, dev)?,
            bias: move_opt(&self.bias, dev)?,
            num_groups: self.num_groups,
            num_channels: self.num_channels,
            eps: self.eps,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        visit_affine([&self.weight, &self.bias], prefix, f);
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        visit_affine_mut([&mut self.weight, &mut self.bias], prefix, f);
    }
}

#[cfg(test)]
mod tests {
    use super::RunningStats;
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;

    /// A graph's counter counts while the graph holds it; once the graph is dropped, the next
    /// recording folds its replays into the host count and lets it go, and the total never
    /// changes by the pruning.
    #[test]
    fn dropped_graphs_counters_fold_into_the_count() {
        let mut s = RunningStats::new((), (), 3);
        let (first, second) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)));
        s.count_replays(first.clone());
        s.count_replays(second.clone());
        first.fetch_add(5, Ordering::SeqCst);
        second.fetch_add(2, Ordering::SeqCst);
        assert_eq!(s.tracked(), 10);
        drop(first); // the first graph is gone
        let third = Arc::new(AtomicI64::new(0));
        s.count_replays(third.clone());
        assert_eq!(s.replays.len(), 2, "the dropped graph's counter is let go");
        assert_eq!((s.count, s.tracked()), (8, 10));
        second.fetch_add(1, Ordering::SeqCst);
        third.fetch_add(4, Ordering::SeqCst);
        assert_eq!(s.tracked(), 15);
        // Recorded every epoch into a graph dropped before the next: the list stays short.
        for epoch in 0..100 {
            let graph = Arc::new(AtomicI64::new(0));
            s.count_replays(graph.clone());
            graph.fetch_add(epoch, Ordering::SeqCst);
        }
        assert!(s.replays.len() <= 3, "{}", s.replays.len());
        assert_eq!(s.tracked(), 15 + (0..100).sum::<i64>());
    }

    /// A layer used twice in one graph counts two updates per replay; once that graph is
    /// dropped, both entries fold (the list holding a counter twice is no graph's handle).
    #[test]
    fn a_counter_held_twice_folds_once_its_graph_is_gone() {
        let mut s = RunningStats::new((), (), 0);
        let graph = Arc::new(AtomicI64::new(0));
        s.count_replays(graph.clone());
        s.count_replays(graph.clone());
        graph.fetch_add(3, Ordering::SeqCst); // three replays
        assert_eq!(s.tracked(), 6);
        let next = Arc::new(AtomicI64::new(0));
        s.count_replays(next.clone());
        assert_eq!(s.replays.len(), 3, "the first graph is still alive");
        drop(graph);
        s.count_replays(next.clone());
        assert_eq!(
            s.replays.len(),
            2,
            "both entries of the dropped graph are folded"
        );
        assert_eq!((s.count, s.tracked()), (6, 6));
    }
}
