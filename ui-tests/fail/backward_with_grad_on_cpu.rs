// Lesson: `y.backward(gradient)` with the gradient on the CPU and `y` on the GPU (a vector-Jacobian
// product, or a hand-made upstream gradient).
//
// PyTorch, at run time, at `y.backward(g)`: the engine checks the gradient's device against
// `y`'s and fails (`invalid gradient at index 0 - expected device cuda:0 but got cpu`).
//
// devtype, at compile time: `backward_with` takes a gradient on the tensor's device only:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: create the gradient next to `y`: `Tensor::ones_like(&y)`, or
// `Tensor::ones(y.shape(), y.device())`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let w = Tensor::<Cpu>::randn([3], Cpu).to(gpu).requires_grad_();
    let y = &w * &w;
    let g = Tensor::<Cpu>::ones([3], Cpu);
    y.backward_with(&g);
    Ok(())
}
