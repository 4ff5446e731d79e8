// Lesson: in a training loop, suspect two: a tensor created inside `forward` on a fixed device.
// The model and the batch are on the GPU; the constant made in `forward` is on the CPU.
//
// PyTorch, at run time, on the first step (`h + torch.ones(16)` inside forward):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time, even inside a model generic over its device `D`: a `Tensor<Cpu>`
// is not an operand of a `Tensor<D>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `D` and `devtype::Cpu`
//
// Fix: create it next to the input, `Tensor::ones([16], x.device())` (PyTorch:
// `torch.ones(16, device=x.device)`), or make it a parameter or buffer of the model.
use devtype::nn::{Linear, ReLU};
use devtype::prelude::*;

struct Shifted<D: Device> {
    fc1: Linear<D>,
    act: ReLU,
    fc2: Linear<D>,
}
devtype::module!(Shifted<D> { fc1, act, fc2 });

impl<D: Device> Forward<D> for Shifted<D> {
    fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
        let h = self.fc1.forward(x);
        let shift = Tensor::<Cpu>::ones([16], Cpu);
        self.fc2.forward(self.act.forward(&h + &shift))
    }
}

fn main() {}
