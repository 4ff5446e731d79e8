//! `MultiheadAttention` (batch first), built from `linear`, `matmul`, `softmax` and
//! `masked_fill`, with PyTorch's parameters and their names.

use super::functional::{attend, input_tensor, or_panic, AttnMask};
use super::{join_name, Linear, Module, Output, Placement};
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};

/// Multi-head attention (`nn.MultiheadAttention(embed_dim, num_heads, dropout,
/// batch_first=True)`): inputs `[batch, len, embed_dim]`, parameters `in_proj_weight`
/// `[3·E, E]`, `in_proj_bias` `[3·E]` and `out_proj` (a [`Linear`]), initialised as
/// PyTorch's (Xavier-uniform projections, zero biases), so checkpoints carry PyTorch's names.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::MultiheadAttention;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let attn = MultiheadAttention::new(16, 4, Cpu).to(dev);
/// let x = Tensor::randn([2, 5, 16], Cpu).to(dev);
/// let y = attn.forward(&x, &x, &x, None, true);    // causal self-attention
/// assert_eq!(y.shape(), &[2, 5, 16]);
/// ```
#[derive(Clone)]
pub struct MultiheadAttention<D: Device, E: Float = f32> {
    in_proj_weight: Tensor<D, E>,
    in_proj_bias: Tensor<D, E>,
    out_proj: Linear<D, E>,
    num_heads: usize,
    dropout: f64,
    training: bool,
}

crate::tensor::debug_on_host!(MultiheadAttention<D, E: crate::tensor::Float> { in_proj_weight, in_proj_bias, out_proj, num_heads, dropout, training });

impl<D: Device> MultiheadAttention<D, f32> {
    /// `nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)` in `f32` on `dev`.
    #[track_caller]
    pub fn new(embed_dim: usize, num_heads: usize, dev: D) -> Self {
        or_panic(Self::try_with_options(embed_dim, num_heads, 0.0, dev))
    }
}

impl<D: Device, E: Float> MultiheadAttention<D, E> {
    /// `nn.MultiheadAttention(embed_dim, num_heads, dropout, batch_first=True)` of `E` on
    /// `dev`; `dropout` applies to the attention weights while training.
    pub fn try_with_options(
        embed_dim: usize,
        num_heads: usize,
        dropout: f64,
        dev: D,
    ) -> Result<Self> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::Shape(
                "embed_dim must be divisible by num_heads".into(),
            ));
        }
        if !(0.0..=1.0).contains(&dropout) {
            return Err(Error::Shape(format!(
                "dropout probability has to be between 0 and 1, but got {dropout}"
            )));
        }
        // Xavier-uniform over [3E, E]: bound √(6 / (E + 3E)).
        let bound = (6.0 / (4 * embed_dim) as f64).sqrt();
        let w = Tensor::<D, E>::random([3 * embed_dim, embed_dim], dev, false)?
            .try_mul_scalar(E::from_f64(2.0 * bound))?
            .try_add_scalar(E::from_f64(-bound))?;
        let mut out_proj = Linear::try_with_element(embed_dim, embed_dim, dev)?;
        out_proj.set_bias(Tensor::<D, E>::try_zeros([embed_dim], dev)?);
        Ok(MultiheadAttention {
            in_proj_weight: Tensor::parameter(w),
            in_proj_bias: Tensor::parameter(Tensor::<D, E>::try_zeros([3 * embed_dim], dev)?),
            out_proj,
            num_heads,
            dropout,
            training: true,
        })
    }

    /// A module from given values (`in_proj_weight` `[3·E, E]`, `in_proj_bias` `[3·E]`), which
    /// become parameters, with no dropout.
    pub fn try_from_parameters(
        in_proj_weight: Tensor<D, E>,
        in_proj_bias: Tensor<D, E>,
        out_proj: Linear<D, E>,
        num_heads: usize,
    ) -> Result<Self> {
        let e = in_proj_weight.shape().get(1).copied().unwrap_or(0);
        if num_heads == 0 || !e.is_multiple_of(num_heads) {
            return Err(Error::Shape(
                "embed_dim must be divisible by num_heads".into(),
            ));
        }
        if in_proj_weight.shape() != [3 * e, e] || in_proj_bias.shape() != [3 * e] {
            return Err(Error::Shape(format!(
                "MultiheadAttention: in_proj_weight must be [{}, {e}] and in_proj_bias [{}], got {:?} and {:?}",
                3 * e,
                3 * e,
                in_proj_weight.shape(),
                in_proj_bias.shape()
            )));
        }
        Ok(MultiheadAttention {
            in_proj_weight: Tensor::parameter(in_proj_weight),
            in_proj_bias: Tensor::parameter(in_proj_bias),
            out_proj,
            num_heads,
            dropout: 0.0,
            training: true,
        })
    }

    /// `[3·E, E]`: the query, key and value projections stacked, a parameter.
    pub fn in_proj_weight(&self) -> &Tensor<D, E> {
        &self.in_proj_weight
    }

    /// `[3·E]`, a parameter.
    pub fn in_proj_bias(&self) -> &Tensor<D, E> {
        &self.in_proj_bias
    }

    /// The output projection.
    pub fn out_proj(&self) -> &Linear<D, E> {
        &self.out_proj
    }

    /// The number of heads.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// The attention output `[batch, L, E]` and the attention weights averaged over the heads
    /// `[batch, L, S]` (PyTorch's `need_weights=True`), recorded.
    ///
    /// `attn_mask` follows PyTorch's `MultiheadAttention`, **not** `scaled_dot_product_attention`:
    /// a `bool` mask is `true` where a query may **not** attend; a float mask is added to the
    /// scores; either broadcastable to `[batch, heads, L, S]` (an `[L, S]` mask serves every
    /// batch and head), on the module's device. `is_causal` hides the later keys with a mask
    /// made on the module's device (PyTorch takes it as a hint that needs `attn_mask`; here it
    /// builds the mask, as `scaled_dot_product_attention` does); giving both is an error.
    pub fn try_forward_with_weights<Q, K, V, M>(
        &self,
        query: Q,
        key: K,
        value: V,
        attn_mask: M,
        is_causal: bool,
    ) -> Result<(Tensor<D, E>, Tensor<D, E>)>
    where
        Q: ModuleInput<D> + HasDevice<Element = E>,
        K: ModuleInput<D> + HasDevice<Element = E>,
        V: ModuleInput<D> + HasDevice<Element = E>,
        M: AttnMask<D, E>,
    {
        let (out, weights) = self.attention(query, key, value, attn_mask, is_causal)?;
        Ok((out, weights.try_mean_dims(&[1], false)?))
    }

    /// The output and the weights of each head, `[batch, heads, L, S]`.
    fn attention<Q, K, V, M>(
        &self,
        query: Q,
        key: K,
        value: V,
        attn_mask: M,
        is_causal: bool,
    ) -> Result<(Tensor<D, E>, Tensor<D, E>)>
    where
        Q: ModuleInput<D> + HasDevice<Element = E>,
        K: ModuleInput<D> + HasDevice<Element = E>,
        V: ModuleInput<D> + HasDevice<Element = E>,
        M: AttnMask<D, E>,
    {
        let (q, k, v) = (
            input_tensor::<D, E, _>(&query),
            input_tensor::<D, E, _>(&key),
            input_tensor::<D, E, _>(&value),
        );
        let e = self.in_proj_weight.shape()[1];
        let h = self.num_heads;
        for (name, t) in [("query", &q), ("key", &k), ("value", &v)] {
            if t.dim() != 3 || t.shape()[2] != e {
                return Err(Error::Shape(format!(
                    "MultiheadAttention (batch_first): {name} must be [batch, len, {e}], got {:?}",
                    t.shape()
                )));
            }
        }
        let project = |x: &Tensor<D, E>, i: usize| -> Result<Tensor<D, E>> {
            let w = self.in_proj_weight.try_narrow(0, i * e, e)?;
            let b = self.in_proj_bias.try_narrow(0, i * e, e)?;
            let y = x.try_linear(&w, Some(&b))?;
            // [b, len, E] -> [b, heads, len, E / heads]
            let (n, len) = (y.shape()[0] as isize, y.shape()[1] as isize);
            y.try_reshape(&[n, len, h as isize, (e / h) as isize])?
                .try_transpose(1, 2)
        };
        let (qh, kh, vh) = (project(&q, 0)?, project(&k, 1)?, project(&v, 2)?);
        let p = if self.training { self.dropout } else { 0.0 };
        let (out, weights) = attend(&qh, &kh, &vh, attn_mask.mask(), false, is_causal, p)?;
        let (n, l) = (q.shape()[0] as isize, q.shape()[1] as isize);
        let out = out.try_transpose(1, 2)?.try_reshape(&[n, l, e as isize])?;
        Ok((self.out_proj.try_forward(&out)?, weights))
    }

    /// The attention output `[batch, L, E]` (see
    /// [`try_forward_with_weights`](Self::try_forward_with_weights) for the mask), recorded.
    pub fn try_forward<Q, K, V, M>(
        &self,
        query: Q,
        key: K,
        value: V,
        attn_mask: M,
        is_causal: bool,
    ) -> Result<Tensor<D, E>>
    where
        Q: ModuleInput<D> + HasDevice<Element = E>,
        K: ModuleInput<D> + HasDevice<Element = E>,
        V: ModuleInput<D> + HasDevice<Element = E>,
        M: AttnMask<D, E>,
    {
        // PyTorch's `need_weights=False`: the head-averaged weights are not computed.
        self.attention(query, key, value, attn_mask, is_causal)
            .map(|(out, _)| out)
    }

    /// The attention output `[batch, L, E]`; query, key, value and mask on the module's
    /// device. Panics with the error's text where [`try_forward`](Self::try_forward) returns
    /// it.
    #[track_caller]
    pub fn forward<Q, K, V, M>(
        &self,
        query: Q,
        key: K,
        value: V,
        attn_mask: M,
        is_causal: bool,
    ) -> Output<Q, D, E>
    where
        Q: ModuleInput<D> + HasDevice<Element = E>,
        K: ModuleInput<D> + HasDevice<Element = E>,
        V: ModuleInput<D> + HasDevice<Element = E>,
        M: AttnMask<D, E>,
    {
        or_panic(self.try_forward(query, key, value, attn_mask, is_causal))
    }
}

impl<D: Device, E: Float> Placement for MultiheadAttention<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for MultiheadAttention<D, E> {
    type On<D2: Device> = MultiheadAttention<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<MultiheadAttention<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        super::move_scope(|| {
            Ok(MultiheadAttention {
                in_proj_weight: Module::<D, E>::try_to(&self.in_proj_weight, dev)?,
                in_proj_bias: Module::<D, E>::try_to(&self.in_proj_bias, dev)?,
                out_proj: self.out_proj.try_to(dev)?,
                num_heads: self.num_heads,
                dropout: self.dropout,
                training: self.training,
            })
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        f(&join_name(prefix, "in_proj_weight"), &self.in_proj_weight);
        f(&join_name(prefix, "in_proj_bias"), &self.in_proj_bias);
        Module::<D, E>::visit_parameters(&self.out_proj, &join_name(prefix, "out_proj"), f);
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        f(
            &join_name(prefix, "in_proj_weight"),
            &mut self.in_proj_weight,
        );
        f(&join_name(prefix, "in_proj_bias"), &mut self.in_proj_bias);
        Module::<D, E>::visit_parameters_mut(&mut self.out_proj, &join_name(prefix, "out_proj"), f);
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}
