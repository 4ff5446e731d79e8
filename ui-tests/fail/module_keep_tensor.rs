// Lesson: a tensor attribute that does not move with the model. In PyTorch a plain tensor
// attribute (`self.scale = torch.ones(2)`, neither a parameter nor a registered buffer) stays
// on the CPU when `model.to("cuda")` moves the rest.
//
// PyTorch, at run time, in `forward` after `model.to("cuda")`:
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `module!`'s `keep` copies a field as it is, and a tensor's type
// changes with the device:
//     error[E0277]: `keep` copies a field as it is, but `devtype::Tensor<D>` changes type when the module moves (it becomes `devtype::Tensor<D2>`)
//
// Fix: list the tensor with the modules, `module!(Scaled<D> { fc, scale })`: it then moves
// with the model (and is saved and updated as a parameter).
use devtype::nn::Linear;
use devtype::prelude::*;

struct Scaled<D: Device> {
    fc: Linear<D>,
    scale: Tensor<D>,
}

devtype::module!(Scaled<D> { fc } keep { scale });

fn main() {
    let model = Scaled {
        fc: Linear::new(2, 2, Cpu),
        scale: Tensor::ones([2], Cpu),
    };
    let _ = model;
}
