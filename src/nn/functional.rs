//! The layers as functions (PyTorch's `torch.nn.functional`): each is composed from the
//! recorded ops of [`Tensor`], so its gradient is theirs, on every device, with nothing new to
//! get wrong; GELU, on the hot path of every transformer, is one op of its own with its own
//! backward kernel, as in PyTorch. Each has a `try_` form that returns the error where the
//! plain one panics with its text.
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::functional::{gelu, layer_norm, Approximate};
//!
//! let dev = Cpu;                                   // or Cuda::<0>::open()?
//! let x = Tensor::randn([4, 8], dev);
//! let y = layer_norm(&gelu(&x, Approximate::None), &[8], None, None, 1e-5);
//! assert_eq!(y.shape(), &[4, 8]);
//! ```

use super::norm::NormTensor;
use crate::api::rules;
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::ops::UnaryOp;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, HasDevice, Tensor};

pub use crate::ops::unary::Approximate;

/// Runs `f`, panicking with the error's text where it fails (the plain forms).
#[track_caller]
pub(crate) fn or_panic<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn s<E: Float>(v: f64) -> E {
    E::from_f64(v)
}

/// GELU, `x Φ(x)` (PyTorch's `F.gelu`), exact or with the tanh approximation.
///
/// One op forward and one backward, PyTorch's `gelu` and `gelu_backward` kernels (recorded as
/// `GeluBackward0`, which saves `x`), rather than five to nine element-wise ops each way, each
/// a pass over the tensor, a new tensor and a recorded node.
pub fn try_gelu<D: Device, E: Float>(
    x: &Tensor<D, E>,
    approximate: Approximate,
) -> Result<Tensor<D, E>> {
    let out = rules::unary(x.input(), UnaryOp::gelu(approximate))?;
    Ok(Tensor::from_out(out, x.device()))
}

/// GELU (see [`try_gelu`]); panics with the error's text where it returns one.
#[track_caller]
pub fn gelu<D: Device, E: Float>(x: &Tensor<D, E>, approximate: Approximate) -> Tensor<D, E> {
    or_panic(try_gelu(x, approximate))
}

/// SiLU (swish), `x σ(x)` (PyTorch's `F.silu`).
pub fn try_silu<D: Device, E: Float>(x: &Tensor<D, E>) -> Result<Tensor<D, E>> {
    x.try_mul(&x.try_sigmoid()?)
}

/// SiLU (see [`try_silu`]).
#[track_caller]
pub fn silu<D: Device, E: Float>(x: &Tensor<D, E>) -> Tensor<D, E> {
    or_panic(try_silu(x))
}

/// `x` where `x > 0`, else `negative_slope · x` (PyTorch's `F.leaky_relu`; the gradient at
/// 0 is `negative_slope`, as PyTorch's).
pub fn try_leaky_relu<D: Device, E: Float>(
    x: &Tensor<D, E>,
    negative_slope: f64,
) -> Result<Tensor<D, E>> {
    x.try_gt_scalar(s(0.0))?
        .try_where_cond(x, &x.try_mul_scalar(s(negative_slope))?)
}

/// Leaky ReLU (see [`try_leaky_relu`]).
#[track_caller]
pub fn leaky_relu<D: Device, E: Float>(x: &Tensor<D, E>, negative_slope: f64) -> Tensor<D, E> {
    or_panic(try_leaky_relu(x, negative_slope))
}

/// Zeroes each element with probability `p` while `training` and scales the rest by
/// `1 / (1 - p)` (PyTorch's `F.dropout`); `x` itself otherwise. The mask is drawn on `x`'s
/// device from the seeded stream.
pub fn try_dropout<D: Device, E: Float>(
    x: &Tensor<D, E>,
    p: f64,
    training: bool,
) -> Result<Tensor<D, E>> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Shape(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        )));
    }
    super::Dropout { p, training }.try_forward(x)
}

/// Dropout (see [`try_dropout`]).
#[track_caller]
pub fn dropout<D: Device, E: Float>(x: &Tensor<D, E>, p: f64, training: bool) -> Tensor<D, E> {
    or_panic(try_dropout(x, p, training))
}

/// `"[a, b]"`, as PyTorch prints a size.
fn sizes(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Checks that `x`'s trailing sizes are `normalized_shape` and that an affine parameter has
/// that shape; the dims to reduce over.
fn normalized_dims(
    shape: &[usize],
    normalized_shape: &[usize],
    params: [Option<(&str, &[usize])>; 2],
    rms: bool,
) -> Result<Vec<isize>> {
    let k = normalized_shape.len();
    for (name, p) in params.into_iter().flatten() {
        if p != normalized_shape {
            return Err(Error::Shape(format!(
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                sizes(p),
                sizes(normalized_shape)
            )));
        }
    }
    if k == 0 || shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
        let inner = sizes(normalized_shape);
        let star = if rms {
            format!("[*{}]", &inner[1..inner.len() - 1])
        } else {
            format!("[*, {}]", &inner[1..inner.len() - 1])
        };
        return Err(Error::Shape(format!(
            "Given normalized_shape={inner}, expected input with shape {star}, but got input of size{}",
            sizes(shape)
        )));
    }
    Ok((0..k as isize).map(|i| -1 - i).collect())
}

/// Layer normalisation over the last `normalized_shape.len()` dims (PyTorch's
/// `F.layer_norm`): `(x - mean) / √(var + eps) · weight + bias`, the variance biased.
pub fn try_layer_norm<D: Device, E: Float>(
    x: &Tensor<D, E>,
    normalized_shape: &[usize],
    weight: Option<&Tensor<D, E>>,
    bias: Option<&Tensor<D, E>>,
    eps: f64,
) -> Result<Tensor<D, E>> {
    layer_norm_on(x, normalized_shape, weight, bias, eps)
}

/// [`try_layer_norm`] on either front (`LayerNorm`, `DynLayerNorm`).
pub(crate) fn layer_norm_on<T: NormTensor>(
    x: &T,
    normalized_shape: &[usize],
    weight: Option<&T>,
    bias: Option<&T>,
    eps: f64,
) -> Result<T> {
    let dims = normalized_dims(
        x.shape(),
        normalized_shape,
        [
            weight.map(|w| ("weight", w.shape())),
            bias.map(|b| ("bias", b.shape())),
        ],
        false,
    )?;
    let centred = x.try_sub(&x.try_mean_dims(&dims, true)?)?;
    let var = centred.try_square()?.try_mean_dims(&dims, true)?;
    let rstd = var.try_add_scalar(eps)?.try_sqrt()?.try_reciprocal()?;
    let mut y = centred.try_mul(&rstd)?;
    if let Some(w) = weight {
        y = y.try_mul(w)?;
    }
    if let Some(b) = bias {
        y = y.try_add(b)?;
    }
    Ok(y)
}

/// Layer normalisation (see [`try_layer_norm`]).
#[track_caller]
pub fn layer_norm<D: Device, E: Float>(
    x: &Tensor<D, E>,
    normalized_shape: &[usize],
    weight: Option<&Tensor<D, E>>,
    bias: Option<&Tensor<D, E>>,
    eps: f64,
) -> Tensor<D, E> {
    or_panic(try_layer_norm(x, normalized_shape, weight, bias, eps))
}

/// RMS normalisation over the last `normalized_shape.len()` dims (PyTorch's `F.rms_norm`):
/// `x / √(mean(x²) + eps) · weight`; `eps` `None` is the element type's machine epsilon, as
/// PyTorch's `torch.finfo(x.dtype).eps`.
pub fn try_rms_norm<D: Device, E: Float>(
    x: &Tensor<D, E>,
    normalized_shape: &[usize],
    weight: Option<&Tensor<D, E>>,
    eps: Option<f64>,
) -> Result<Tensor<D, E>> {
    let dims = normalized_dims(
        x.shape(),
        normalized_shape,
        [weight.map(|w| ("weight", w.shape())), None],
        true,
    )?;
    let eps = eps.unwrap_or_else(|| machine_epsilon(x.dtype()));
    let rstd = x
        .try_square()?
        .try_mean_dims(&dims, true)?
        .try_add_scalar(s(eps))?
        .try_sqrt()?
        .try_reciprocal()?;
    let y = x.try_mul(&rstd)?;
    match weight {
        Some(w) => y.try_mul(w),
        None => Ok(y),
    }
}

/// RMS normalisation (see [`try_rms_norm`]).
#[track_caller]
pub fn rms_norm<D: Device, E: Float>(
    x: &Tensor<D, E>,
    normalized_shape: &[usize],
    weight: Option<&Tensor<D, E>>,
    eps: Option<f64>,
) -> Tensor<D, E> {
    or_panic(try_rms_norm(x, normalized_shape, weight, eps))
}

/// `torch.finfo(dtype).eps`.
fn machine_epsilon(dtype: crate::DType) -> f64 {
    match dtype {
        crate::DType::F64 => f64::EPSILON,
        crate::DType::F16 => 0.000_976_562_5,
        crate::DType::BF16 => 0.007_812_5,
        _ => f32::EPSILON as f64,
    }
}

/// The rows of `weight` at `ids` (PyTorch's `F.embedding`): the result has `ids`' shape plus
/// `weight`'s row size. The row `padding_idx` (counted from the end when negative) gets no
/// gradient, as in PyTorch; its value is read as it is.
pub fn try_embedding<D: Device, E: Float>(
    ids: &Tensor<D, i64>,
    weight: &Tensor<D, E>,
    padding_idx: Option<i64>,
) -> Result<Tensor<D, E>> {
    embedding_on(ids, weight, padding_idx)
}

/// A table of rows looked up by ids, on either front: `Tensor<D, E>` with `Tensor<D, i64>`
/// ids, `DynTensor` with `DynTensor` ids.
pub(crate) trait EmbeddingTable: NormTensor {
    /// The ids' tensor.
    type Ids;
    /// The ids' shape.
    fn ids_shape(ids: &Self::Ids) -> &[usize];
    /// The ids as one dim.
    fn flat_ids(ids: &Self::Ids) -> Result<Self::Ids>;
    /// The rows at `flat` ids.
    fn rows(&self, flat: &Self::Ids) -> Result<Self>;
    /// `on_pad`'s row where `flat` is `p`, else `other`'s.
    fn where_id(flat: &Self::Ids, p: i64, on_pad: &Self, other: &Self) -> Result<Self>;
}

impl<D: Device, E: Float> EmbeddingTable for Tensor<D, E> {
    type Ids = Tensor<D, i64>;
    fn ids_shape(ids: &Self::Ids) -> &[usize] {
        ids.shape()
    }
    fn flat_ids(ids: &Self::Ids) -> Result<Self::Ids> {
        ids.try_reshape(&[-1])
    }
    fn rows(&self, flat: &Self::Ids) -> Result<Self> {
        self.try_index_select(0, flat)
    }
    fn where_id(flat: &Self::Ids, p: i64, on_pad: &Self, other: &Self) -> Result<Self> {
        flat.try_eq_scalar(p)?
            .try_reshape(&[-1, 1])?
            .try_where_cond(on_pad, other)
    }
}

impl EmbeddingTable for crate::DynTensor {
    type Ids = crate::DynTensor;
    fn ids_shape(ids: &Self::Ids) -> &[usize] {
        ids.shape()
    }
    fn flat_ids(ids: &Self::Ids) -> Result<Self::Ids> {
        ids.reshape(&[-1])
    }
    fn rows(&self, flat: &Self::Ids) -> Result<Self> {
        self.index_select(0, flat)
    }
    fn where_id(flat: &Self::Ids, p: i64, on_pad: &Self, other: &Self) -> Result<Self> {
        flat.eq_scalar(p)?
            .reshape(&[-1, 1])?
            .where_cond(on_pad, other)
    }
}

/// [`try_embedding`] on either front (`Embedding`, `DynEmbedding`).
pub(crate) fn embedding_on<T: EmbeddingTable>(
    ids: &T::Ids,
    weight: &T,
    padding_idx: Option<i64>,
) -> Result<T> {
    let rows = weight.shape().first().copied().unwrap_or(0);
    let dim = weight.shape().get(1).copied().unwrap_or(0);
    let flat = T::flat_ids(ids)?;
    let mut out = weight.rows(&flat)?;
    if let Some(p) = padding_idx {
        let p = if p < 0 { p + rows as i64 } else { p };
        if !(0..rows as i64).contains(&p) {
            return Err(Error::Shape(
                "Padding_idx must be within num_embeddings".into(),
            ));
        }
        // The padding positions read the detached table, so no gradient reaches that row.
        let frozen = weight.detach().rows(&flat)?;
        out = T::where_id(&flat, p, &frozen, &out)?;
    }
    let mut shape: Vec<isize> = T::ids_shape(ids).iter().map(|&d| d as isize).collect();
    shape.push(dim as isize);
    out.try_reshape(&shape)
}

/// Embedding lookup (see [`try_embedding`]).
#[track_caller]
pub fn embedding<D: Device, E: Float>(
    ids: &Tensor<D, i64>,
    weight: &Tensor<D, E>,
    padding_idx: Option<i64>,
) -> Tensor<D, E> {
    or_panic(try_embedding(ids, weight, padding_idx))
}

/// The mask argument of [`scaled_dot_product_attention`] and
/// [`MultiheadAttention`](super::MultiheadAttention): `None`, a `bool` mask or an additive
/// float mask, broadcastable to the scores `[..., L, S]`, on the query's device `D`.
///
/// A mask on another device (one created inside `forward` on the CPU, say) is a compile
/// error in PyTorch's words. Leave `Found` out.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "this mask is on `{Found}`, but the query, key and value are on `{D}`",
    note = "create the mask on the input's device, `Tensor::<_, bool>::ones([l, s], q.device())`, or pass `is_causal: true`, which builds the causal mask there"
)]
pub trait AttnMask<D: Device, E: Float, Found: Device = <Self as MaskPlace>::Device>:
    MaskPlace
{
    /// The mask as the attention code takes it.
    #[doc(hidden)]
    fn mask(&self) -> Option<MaskRef<'_, D, E>>;
}

/// Where a mask argument is (its `Found` device); implemented for the mask types.
#[doc(hidden)]
pub trait MaskPlace {
    /// The mask's device.
    type Device: Device;
}

/// A mask, by kind.
#[doc(hidden)]
pub enum MaskRef<'a, D: Device, E: Float> {
    /// `true` where a position is kept (sdpa) or masked out (MHA's `attn_mask`).
    Bool(&'a Tensor<D, bool>),
    /// Added to the scores.
    Additive(&'a Tensor<D, E>),
}

impl<D2: Device, E2: crate::tensor::Element> MaskPlace for &Tensor<D2, E2> {
    type Device = D2;
}

impl<D2: Device> MaskPlace for Option<&Tensor<D2, bool>> {
    type Device = D2;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> AttnMask<D, E> for &Tensor<D, bool> {
    fn mask(&self) -> Option<MaskRef<'_, D, E>> {
        Some(MaskRef::Bool(self))
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> AttnMask<D, E> for &Tensor<D, E> {
    fn mask(&self) -> Option<MaskRef<'_, D, E>> {
        Some(MaskRef::Additive(self))
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> AttnMask<D, E> for Option<&Tensor<D, bool>> {
    fn mask(&self) -> Option<MaskRef<'_, D, E>> {
        self.map(MaskRef::Bool)
    }
}

// `&m` where `m: &Tensor` (see `HasDevice`): the mask `m` points to. (Not inside `Some`: a
// second `Option` impl would leave a plain `None` without a type.)
impl<D2: Device, E2: crate::tensor::Element> MaskPlace for &&Tensor<D2, E2> {
    type Device = D2;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> AttnMask<D, E> for &&Tensor<D, bool> {
    fn mask(&self) -> Option<MaskRef<'_, D, E>> {
        (**self).mask()
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> AttnMask<D, E> for &&Tensor<D, E> {
    fn mask(&self) -> Option<MaskRef<'_, D, E>> {
        (**self).mask()
    }
}

/// `[l, s]`, `true` above the diagonal (`j > i`): the positions a causal mask hides, made on
/// `dev` (the query's device), so it cannot be on another one.
pub(crate) fn try_causal_hidden<D: Device>(l: usize, s: usize, dev: D) -> Result<Tensor<D, bool>> {
    let rows = Tensor::<D, i64>::try_arange(l, dev)?.try_reshape(&[l as isize, 1])?;
    let cols = Tensor::<D, i64>::try_arange(s, dev)?.try_reshape(&[1, s as isize])?;
    cols.try_gt(&rows)
}

/// The attention core shared by [`try_scaled_dot_product_attention`] and
/// `MultiheadAttention`: `softmax(q kᵀ · scale + mask) v`, with the `bool` mask's sense given
/// by `bool_keeps`.
pub(crate) fn attend<D: Device, E: Float>(
    q: &Tensor<D, E>,
    k: &Tensor<D, E>,
    v: &Tensor<D, E>,
    mask: Option<MaskRef<'_, D, E>>,
    bool_keeps: bool,
    is_causal: bool,
    dropout_p: f64,
) -> Result<(Tensor<D, E>, Tensor<D, E>)> {
    if is_causal && mask.is_some() {
        return Err(Error::Shape(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
                .into(),
        ));
    }
    let (qs, ks) = (q.shape(), k.shape());
    if qs.len() < 2 || ks.len() < 2 {
        return Err(Error::Shape(format!(
            "scaled_dot_product_attention: query and key must have at least 2 dimensions, got {} and {}",
            qs.len(),
            ks.len()
        )));
    }
    let (l, e) = (qs[qs.len() - 2], qs[qs.len() - 1]);
    let sk = ks[ks.len() - 2];
    let scale = 1.0 / (e as f64).sqrt();
    let mut scores = q
        .try_matmul(&k.try_transpose(-2, -1)?)?
        .try_mul_scalar(s(scale))?;
    if is_causal {
        let hidden = try_causal_hidden(l, sk, q.device())?;
        scores = scores.try_masked_fill(&hidden, s(f64::NEG_INFINITY))?;
    }
    match mask {
        Some(MaskRef::Bool(m)) => {
            let hidden = if bool_keeps {
                m.try_eq_scalar(false)?
            } else {
                m.clone()
            };
            scores = scores.try_masked_fill(&hidden, s(f64::NEG_INFINITY))?;
        }
        Some(MaskRef::Additive(m)) => scores = scores.try_add(m)?,
        None => {}
    }
    let weights = scores.try_softmax(-1)?;
    let dropped = try_dropout(&weights, dropout_p, dropout_p > 0.0)?;
    Ok((dropped.try_matmul(v)?, weights))
}

/// PyTorch's `F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)`
/// (argument order as the call reads): `softmax(q kᵀ / √E + mask) v` over `q: [..., L, E]`,
/// `k: [..., S, E]`, `v: [..., S, Ev]`, batch dims broadcast.
///
/// `attn_mask`: `None`, a `bool` mask (`true` where a query may attend, PyTorch's sense) or a
/// float mask added to the scores, broadcastable to `[..., L, S]` and on the query's device.
/// `is_causal` hides every key after the query's position (`j > i`) with a mask made on the
/// query's device; giving both is PyTorch's error. Dropout with `dropout_p` is applied to the
/// attention weights (PyTorch applies it whenever `dropout_p > 0`; pass `0.0` in evaluation).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::functional::scaled_dot_product_attention;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let q = Tensor::randn([2, 4, 5, 8], dev);        // [batch, heads, L, E]
/// let out = scaled_dot_product_attention(&q, &q, &q, None, true, 0.0);
/// assert_eq!(out.shape(), &[2, 4, 5, 8]);
/// ```
pub fn try_scaled_dot_product_attention<D: Device, E: Float, M: AttnMask<D, E>>(
    q: &Tensor<D, E>,
    k: &Tensor<D, E>,
    v: &Tensor<D, E>,
    attn_mask: M,
    is_causal: bool,
    dropout_p: f64,
) -> Result<Tensor<D, E>> {
    attend(q, k, v, attn_mask.mask(), true, is_causal, dropout_p).map(|(out, _)| out)
}

/// Scaled dot-product attention (see [`try_scaled_dot_product_attention`]).
#[track_caller]
pub fn scaled_dot_product_attention<D: Device, E: Float, M: AttnMask<D, E>>(
    q: &Tensor<D, E>,
    k: &Tensor<D, E>,
    v: &Tensor<D, E>,
    attn_mask: M,
    is_causal: bool,
    dropout_p: f64,
) -> Tensor<D, E> {
    or_panic(try_scaled_dot_product_attention(
        q, k, v, attn_mask, is_causal, dropout_p,
    ))
}

/// `flatten(start_dim, end_dim)` of a tensor (PyTorch's `nn.Flatten`'s function).
pub fn try_flatten<D: Device, E: Float>(
    x: &Tensor<D, E>,
    start_dim: isize,
    end_dim: isize,
) -> Result<Tensor<D, E>> {
    x.try_flatten(start_dim, end_dim)
}

/// The same tensor (value and graph), typed, from a module's input.
pub(crate) fn input_tensor<D: Device, E: crate::tensor::Element, I: HasDevice<Element = E>>(
    input: &I,
) -> Tensor<D, E> {
    let device = D::from_dyn(input.raw().device).expect("typed tensors are on their device");
    Tensor::from_out(
        crate::graph::Out {
            value: input.raw().clone(),
            node: input.grad_node().cloned(),
        },
        device,
    )
}
