//! `Embedding`: a table of rows looked up by token ids, which must be `i64` on the table's
//! device.

use super::functional::{input_tensor, or_panic, try_embedding};
use super::{join_name, Module, Output, Placement};
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};

/// `padding_idx` checked against `num_embeddings` (PyTorch's text), counted from the end when
/// negative: the row, non-negative.
pub(crate) fn resolve_padding_idx(
    padding_idx: Option<i64>,
    num_embeddings: usize,
) -> Result<Option<i64>> {
    let n = num_embeddings as i64;
    match padding_idx {
        Some(p) if p >= n || p < -n => Err(Error::Shape(
            "Padding_idx must be within num_embeddings".into(),
        )),
        Some(p) if p < 0 => Ok(Some(p + n)),
        other => Ok(other),
    }
}

/// A lookup table (`nn.Embedding(num_embeddings, embedding_dim, padding_idx)`): `weight`
/// `[num_embeddings, embedding_dim]`, drawn from N(0, 1) as PyTorch's, the padding row zeroed.
///
/// Its input is token ids, `Tensor<D, i64>` on the table's device `D`: ids left on the CPU
/// for a table on the GPU, or ids of another type, do not compile. The padding row gets no
/// gradient, as in PyTorch.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Embedding;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let emb = Embedding::new(100, 16, Cpu).to(dev);
/// let ids = Tensor::<Cpu, i64>::from_vec(vec![3, 14, 15, 92], [2, 2], Cpu).to(dev);
/// assert_eq!(emb.forward(&ids).shape(), &[2, 2, 16]);
/// ```
#[derive(Clone)]
pub struct Embedding<D: Device, E: Float = f32> {
    weight: Tensor<D, E>,
    padding_idx: Option<i64>,
}

crate::tensor::debug_on_host!(Embedding<D, E: crate::tensor::Float> { weight, padding_idx });

impl<D: Device> Embedding<D, f32> {
    /// `nn.Embedding(num_embeddings, embedding_dim)` in `f32`, created on `dev`.
    #[track_caller]
    pub fn new(num_embeddings: usize, embedding_dim: usize, dev: D) -> Self {
        or_panic(Self::try_with_options(
            num_embeddings,
            embedding_dim,
            None,
            dev,
        ))
    }
}

impl<D: Device, E: Float> Embedding<D, E> {
    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx)` of `E`, created on `dev`;
    /// a negative `padding_idx` counts from the end, as in PyTorch.
    pub fn try_with_options(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<i64>,
        dev: D,
    ) -> Result<Self> {
        let padding_idx = resolve_padding_idx(padding_idx, num_embeddings)?;
        let mut weight = Tensor::<D, E>::random([num_embeddings, embedding_dim], dev, true)?;
        if let Some(p) = padding_idx {
            let row = Tensor::<D, E>::try_zeros([embedding_dim], dev)?;
            weight = weight.try_select_scatter(&row, 0, p as isize)?;
        }
        Ok(Embedding {
            weight: Tensor::parameter(weight),
            padding_idx,
        })
    }

    /// A table from given rows (`nn.Embedding.from_pretrained(weight, freeze=False)`); they
    /// become a parameter.
    pub fn from_weight(weight: Tensor<D, E>, padding_idx: Option<i64>) -> Self {
        Embedding {
            weight: Tensor::parameter(weight),
            padding_idx,
        }
    }

    /// The table, `[num_embeddings, embedding_dim]`, a parameter.
    pub fn weight(&self) -> &Tensor<D, E> {
        &self.weight
    }

    /// The row that gets no gradient, if any (non-negative).
    pub fn padding_idx(&self) -> Option<i64> {
        self.padding_idx
    }

    /// The rows at `ids` (`[..ids, embedding_dim]`), recorded; `ids` are `i64` on `D`.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = i64>>(
        &self,
        ids: I,
    ) -> Result<Tensor<D, E>> {
        try_embedding(&input_tensor(&ids), &self.weight, self.padding_idx)
    }

    /// The rows at `ids` (`[..ids, embedding_dim]`); `ids` are `i64` on the table's device.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it (an id
    /// out of range: `index out of range in self`).
    #[track_caller]
    pub fn forward<I: ModuleInput<D> + HasDevice<Element = i64>>(&self, ids: I) -> Output<I, D, E> {
        or_panic(self.try_forward(ids))
    }
}

impl<D: Device, E: Float> Placement for Embedding<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for Embedding<D, E> {
    type On<D2: Device> = Embedding<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<Embedding<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(Embedding {
            weight: Module::<D, E>::try_to(&self.weight, dev)?,
            padding_idx: self.padding_idx,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        f(&join_name(prefix, "weight"), &self.weight);
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        f(&join_name(prefix, "weight"), &mut self.weight);
    }
}
