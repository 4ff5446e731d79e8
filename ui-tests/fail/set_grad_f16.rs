// Lesson: a gradient set by hand in `f16` on an `f32` parameter (a gradient computed in low
// precision elsewhere, written back with `p.grad = g`).
//
// PyTorch, at run time, at the assignment:
//     RuntimeError: attempting to assign a gradient with dtype 'c10::Half' to a tensor with grad_dtype 'Float'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). ...
//
// devtype, at compile time:
//     error[E0277]: attempting to assign a gradient with dtype `devtype::f16` to a tensor with grad_dtype `f32`
//
// Fix: convert the gradient to the parameter's type, `g.to_dtype::<f32>()`, or create it so:
// `Tensor::zeros_like(&p)`.
use devtype::half::f16;
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() {
    let layer = Linear::new(4, 2, Cpu);
    let w = layer.weight();
    let g = Tensor::<Cpu, f16>::ones([2, 4], Cpu);
    w.try_set_grad(Some(g)).unwrap();
}
