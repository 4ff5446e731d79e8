// Lesson: the reverse of `generic_step_optimizer_on_cpu`: an optimizer generic over its device
// `D` (a training loop written once for every device), with the model typed on the CPU.
//
// PyTorch, at run time, at `optimizer.step()` on the GPU machine only:
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time, in the generic code itself, one error: an optimizer on `D` steps
// only a model on `D`, and a model on `Cpu` is on `D` only when `D = Cpu`. The label names both
// devices plainly (`this model's parameters are on devtype::Cpu, but the optimizer's state is on
// D`); the headline cannot: rustc 1.95 fills an on_unimplemented message from projections
// evaluated on one side, and the side that orders the pair here is the generic `D`, so it reads
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `<D as devtype::Device>::NamedFirst<devtype::Cpu>` and `<D as devtype::Device>::NamedSecond<devtype::Cpu>`
// (the mirror case, `generic_step_optimizer_on_cpu`, reads `D` and `devtype::Cpu`; no single
// projection resolves in both). rustc's `where` suggestion holds only for `D = Cpu`: not the fix.
//
// Fix: type the model on the optimizer's device, `model: &mut Linear<D>` (built on the CPU and
// moved once, `Linear::new(3, 2, Cpu).to(dev)`).
use devtype::nn::Linear;
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn step<D: Device>(model: &mut Linear<Cpu>, opt: &mut Sgd<D>) {
    opt.step(model);
}

fn main() {
    let mut model = Linear::new(3, 2, Cpu);
    let mut opt = Sgd::<Cpu>::new(0.1);
    step(&mut model, &mut opt);
}
