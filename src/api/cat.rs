//! Joining: `cat` along an existing dimension and `stack` along a new one, on both fronts.
//! Each input's gradient is its slice of the incoming gradient (a view).

use super::declare::{Dtypes, OpInfo};
use crate::core::error::{Error, Result};
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::core::Element;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{ArgumentOn, HasDevice, Tensor};
use crate::DynTensor;

/// `cat` (or `stack` when `new_dim`) of `inputs` along `dim`, recorded.
pub(crate) fn join(inputs: &[In<'_>], dim: isize, new_dim: bool) -> Result<Out> {
    let raws: Vec<&RawTensor> = inputs.iter().map(|i| i.value).collect();
    let value = if new_dim {
        ops::cat::stack(&raws, dim)?
    } else {
        ops::cat::cat(&raws, dim)?
    };
    let nodes: Vec<_> = inputs.iter().map(|i| i.node).collect();
    let node = record(
        if new_dim {
            "StackBackward0"
        } else {
            "CatBackward0"
        },
        &nodes,
        |needs| {
            let needs = needs.to_vec();
            let d = wrap_dim(dim, value.rank()).expect("checked by the forward");
            let sizes: Vec<usize> = raws
                .iter()
                .map(|r| if new_dim { 1 } else { r.shape()[d] })
                .collect();
            move |g| {
                let mut start = 0;
                let mut grads = Vec::with_capacity(sizes.len());
                for (&len, &need) in sizes.iter().zip(&needs) {
                    grads.push(if need {
                        let part = ops::shape::narrow(&g, d as isize, start, len)?;
                        Some(if new_dim {
                            ops::shape::squeeze(&part, d as isize)?
                        } else {
                            part
                        })
                    } else {
                        None
                    });
                    start += len;
                }
                Ok(grads)
            }
        },
    );
    Ok(Out { value, node })
}

fn empty() -> Error {
    Error::Shape("torch.cat(): expected a non-empty list of Tensors".into())
}

fn empty_stack() -> Error {
    Error::Shape("stack expects a non-empty TensorList".into())
}

/// `cat` and `stack`, written by hand on both fronts (a list of tensors does not fit a
/// declaration).
pub(crate) const OPS: &[OpInfo] = &[
    OpInfo::by_hand(
        "cat",
        module_path!(),
        Dtypes::Element,
        &["TensorList", "isize"],
    ),
    OpInfo::by_hand(
        "stack",
        module_path!(),
        Dtypes::Element,
        &["TensorList", "isize"],
    ),
];

/// Tensors to join with [`Tensor::cat`] or [`Tensor::stack`]: a slice or `Vec` of tensors or
/// references, or a tuple `(&a, &b, ...)` whose later members must be on the first one's
/// device (a tensor on another device does not compile, with PyTorch's words).
///
/// One blanket impl over the hidden `JoinList`: a tuple with a tensor on another device is
/// then reported with PyTorch's sentence and without rustc's list of every tuple size.
pub trait TensorList<D: Device, E: Element> {
    #[doc(hidden)]
    fn inputs(&self) -> Vec<In<'_>>;
}

impl<D: Device, E: Element, T: JoinList<D, E> + ?Sized> TensorList<D, E> for T {
    fn inputs(&self) -> Vec<In<'_>> {
        JoinList::inputs(self)
    }
}

/// [`TensorList`] for each kind of list.
#[doc(hidden)]
pub trait JoinList<D: Device, E: Element> {
    /// The tensors, in order.
    fn inputs(&self) -> Vec<In<'_>>;
}

impl<D: Device, E: Element> JoinList<D, E> for [Tensor<D, E>] {
    fn inputs(&self) -> Vec<In<'_>> {
        self.iter().map(|t| t.input()).collect()
    }
}
impl<D: Device, E: Element> JoinList<D, E> for [&Tensor<D, E>] {
    fn inputs(&self) -> Vec<In<'_>> {
        self.iter().map(|t| t.input()).collect()
    }
}
impl<D: Device, E: Element, const N: usize> JoinList<D, E> for [&Tensor<D, E>; N] {
    fn inputs(&self) -> Vec<In<'_>> {
        self.iter().map(|t| t.input()).collect()
    }
}
impl<D: Device, E: Element> JoinList<D, E> for Vec<Tensor<D, E>> {
    fn inputs(&self) -> Vec<In<'_>> {
        self.iter().map(|t| t.input()).collect()
    }
}
impl<D: Device, E: Element, T: JoinList<D, E> + ?Sized> JoinList<D, E> for &T {
    fn inputs(&self) -> Vec<In<'_>> {
        (**self).inputs()
    }
}

macro_rules! tuple_list {
    ($first:ident $(, $rest:ident)*) => {
        impl<$first: HasDevice $(, $rest: ArgumentOn<$first::Device> + HasDevice<Element = $first::Element>)*>
            JoinList<$first::Device, $first::Element> for ($first, $($rest,)*)
        {
            #[allow(non_snake_case)]
            fn inputs(&self) -> Vec<In<'_>> {
                let ($first, $($rest,)*) = self;
                vec![$first.input() $(, $rest.input())*]
            }
        }
    };
}
tuple_list!(A);
tuple_list!(A, B);
tuple_list!(A, B, C);
tuple_list!(A, B, C, F);
tuple_list!(A, B, C, F, G);
tuple_list!(A, B, C, F, G, H);

impl<D: Device, E: Element> Tensor<D, E> {
    fn join<L: TensorList<D, E>>(tensors: L, dim: isize, new_dim: bool) -> Result<Self> {
        let inputs = tensors.inputs();
        let first = inputs
            .first()
            .ok_or_else(if new_dim { empty_stack } else { empty })?;
        let device = D::from_dyn(first.value.device).ok_or_else(empty)?;
        Ok(Tensor::from_out(join(&inputs, dim, new_dim)?, device))
    }

    /// Joins tensors along `dim` (PyTorch's `torch.cat`): `Tensor::cat((&a, &b), 0)`, or a
    /// slice or `Vec` of tensors. Every tensor is on `D`, by type.
    pub fn try_cat<L: TensorList<D, E>>(tensors: L, dim: isize) -> Result<Self> {
        Self::join(tensors, dim, false)
    }

    /// Joins tensors along `dim`.
    ///
    /// Panics with the error's text where [`try_cat`](Self::try_cat) returns it.
    #[track_caller]
    pub fn cat<L: TensorList<D, E>>(tensors: L, dim: isize) -> Self {
        match Self::try_cat(tensors, dim) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// Stacks equally shaped tensors along a new dimension `dim` (PyTorch's `torch.stack`).
    pub fn try_stack<L: TensorList<D, E>>(tensors: L, dim: isize) -> Result<Self> {
        Self::join(tensors, dim, true)
    }

    /// Stacks equally shaped tensors along a new dimension `dim`.
    ///
    /// Panics with the error's text where [`try_stack`](Self::try_stack) returns it.
    #[track_caller]
    pub fn stack<L: TensorList<D, E>>(tensors: L, dim: isize) -> Self {
        match Self::try_stack(tensors, dim) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynTensor {
    fn checked<'a>(tensors: &[&'a DynTensor], new_dim: bool) -> Result<Vec<In<'a>>> {
        if tensors.is_empty() {
            return Err(if new_dim { empty_stack() } else { empty() });
        }
        let args: Vec<(&'static str, &RawTensor)> =
            tensors.iter().map(|t| ("tensors", &t.raw)).collect();
        same_device_arguments("wrapper_CUDA_cat", &args)?;
        Ok(tensors.iter().map(|&t| t.input()).collect())
    }

    /// `join` of `inputs` converted to their common result type first (PyTorch's `cat`
    /// promotes: `cat([f32, i64])` is `f32`), each conversion recorded.
    fn promoted_join(inputs: &[In<'_>], dim: isize, new_dim: bool) -> Result<Out> {
        let to = inputs
            .iter()
            .fold(crate::core::ResultType::new(), |r, t| {
                r.tensor(t.value.dtype, t.value.rank())
            })
            .finish();
        if inputs.iter().all(|t| t.value.dtype == to) {
            return join(inputs, dim, new_dim);
        }
        let casts: Vec<Option<Out>> = inputs
            .iter()
            .map(|t| {
                (t.value.dtype != to)
                    .then(|| super::copy::cast(*t, to))
                    .transpose()
            })
            .collect::<Result<_>>()?;
        let inputs: Vec<In<'_>> = inputs
            .iter()
            .zip(&casts)
            .map(|(t, cast)| cast.as_ref().map_or(*t, Out::input))
            .collect();
        join(&inputs, dim, new_dim)
    }

    /// Joins tensors along `dim`; all on one device (checked as PyTorch's `cat`), in their
    /// common result type (`torch.result_type` of them all, as PyTorch's `cat`).
    pub fn cat(tensors: &[&DynTensor], dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_out(Self::promoted_join(
            &Self::checked(tensors, false)?,
            dim,
            false,
        )?))
    }

    /// Stacks equally shaped tensors along a new dimension, in their common result type.
    pub fn stack(tensors: &[&DynTensor], dim: isize) -> Result<DynTensor> {
        Ok(DynTensor::from_out(Self::promoted_join(
            &Self::checked(tensors, true)?,
            dim,
            true,
        )?))
    }
}
