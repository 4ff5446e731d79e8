//! `Sequential`: layers applied in order, held in a tuple so that every layer keeps its type
//! (and its device in it).

use super::{join_name, Forward, Layers, Module, Placement};
use crate::core::error::Result;
use crate::device::Device;
use crate::tensor::Tensor;
use crate::tensor::{Float, InputElementIs, ModuleInput};

/// Layers applied in order (`nn.Sequential`), given as a tuple; parameters are named by
/// position (`0.weight`, `2.bias`), as in PyTorch, so checkpoints match.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{Linear, ReLU, Sequential};
///
/// let dev = Cpu;                                         // or Cuda::<0>::open()?
/// let model = Sequential::new((Linear::new(784, 512, Cpu), ReLU, Linear::new(512, 10, Cpu)));
/// let model = model.to(dev);                             // one call moves every layer
/// let logits = model.forward(&Tensor::randn([2, 784], Cpu).to(dev));
/// assert_eq!(logits.shape(), &[2, 10]);
/// assert_eq!(model.named_parameters()[2].0, "2.weight");
/// ```
///
/// Every layer must be on one device (layers without parameters, as `ReLU`, go with any):
/// a layer left on the CPU among layers on the GPU is a compile error at `Sequential::new`
/// that names both devices and the layer's position.
#[derive(Clone, Debug)]
pub struct Sequential<T>(T);

impl<T: Layers> Sequential<T> {
    /// The layers of the tuple `layers`, applied first to last; they must all be on one
    /// device.
    pub fn new(layers: T) -> Sequential<T::Checked> {
        Sequential(layers.into_checked())
    }
}

impl<T> Sequential<T> {
    /// The layers, as the tuple they were given in (`model.layers().0` is the first).
    pub fn layers(&self) -> &T {
        &self.0
    }

    /// The layers, mutably (their types, and so their devices, stay as they are).
    pub fn layers_mut(&mut self) -> &mut T {
        &mut self.0
    }

    /// The tuple of layers.
    pub fn into_layers(self) -> T {
        self.0
    }
}

impl<T: Layers> Placement for Sequential<T> {
    type Device = T::Device;
}

impl<T: Layers> super::Precision for Sequential<T> {
    type Element = T::Element;
}

macro_rules! sequential {
    ($($m:ident $i:tt),+) => {
        impl<D: Device, E: Float, $($m: Module<D, E>),+> Module<D, E> for Sequential<($($m,)+)> {
            type On<D2: Device> = Sequential<($($m::On<D2>,)+)>;

            fn try_to<D2: Device>(&self, dev: D2) -> Result<Self::On<D2>>
    where
        D: crate::device::CopyTo<D2>,
    {
                super::move_scope(|| Ok(Sequential(($(self.0.$i.try_to(dev)?,)+))))
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
                $(self.0.$i.visit_parameters(&join_name(prefix, stringify!($i)), f);)+
            }

            fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
                $(self.0.$i.visit_parameters_mut(&join_name(prefix, stringify!($i)), f);)+
            }

            fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, super::Buffer<D, E>)) {
                $(self.0.$i.visit_buffers(&join_name(prefix, stringify!($i)), f);)+
            }

            fn visit_buffers_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, super::BufferMut<'_, D, E>)) {
                $(self.0.$i.visit_buffers_mut(&join_name(prefix, stringify!($i)), f);)+
            }

            fn set_training(&mut self, training: bool) {
                $(self.0.$i.set_training(training);)+
            }
        }

        impl<D: Device, E: Float, $($m: Forward<D, E>),+> Forward<D, E> for Sequential<($($m,)+)> {
            #[track_caller]
            fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Tensor<D, E> {
                sequential!(@chain self input $($i)+)
            }
        }
    };
    (@chain $self:ident $x:ident $first:tt $($rest:tt)*) => {{
        let x = $self.0.$first.forward($x);
        $(let x = $self.0.$rest.forward(x);)*
        x
    }};
}

sequential!(A 0);
sequential!(A 0, B 1);
sequential!(A 0, B 1, C 2);
sequential!(A 0, B 1, C 2, F 3);
sequential!(A 0, B 1, C 2, F 3, G 4);
sequential!(A 0, B 1, C 2, F 3, G 4, H 5);
sequential!(A 0, B 1, C 2, F 3, G 4, H 5, J 6);
sequential!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7);
sequential!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7, L 8);
sequential!(A 0, B 1, C 2, F 3, G 4, H 5, J 6, K 7, L 8, M 9);
