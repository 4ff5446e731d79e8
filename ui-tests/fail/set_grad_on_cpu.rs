// Lesson: a gradient set by hand on another device than its parameter (a gradient read from a
// file, or built with `torch.ones(p.shape)`, lands on the CPU).
//
// PyTorch, at run time, at the first op that reads `p.grad` with `p` (the optimizer's step):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `try_set_grad` takes a gradient on the parameter's device only:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: create the gradient next to its parameter, `Tensor::ones_like(&w)`, or move it:
// `Some(g.to(w.device()))`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let w = Tensor::<Cpu>::randn([3], Cpu).to(gpu).requires_grad_();
    let g = Tensor::<Cpu>::ones([3], Cpu);
    w.try_set_grad(Some(g))?;
    Ok(())
}
