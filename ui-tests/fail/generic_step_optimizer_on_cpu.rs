// Lesson: a training step generic over the model's device `D`, with the optimizer's state
// typed on the CPU (built before the model moved, or written as `Sgd<Cpu>` in a signature).
//
// PyTorch, at run time, at `optimizer.step()` on the GPU machine only:
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time, in the generic code itself: an optimizer on `Cpu` steps only a
// model on `Cpu`, whatever `D` turns out to be:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `D` and `devtype::Cpu`
// (rustc then suggests a `where Linear<D>: ModelOn<Cpu, ...>` clause; that bound can only hold
// for `D = Cpu`, so it is not the fix.)
//
// Fix: type the optimizer on the model's device, `opt: &mut Sgd<D>`.
use devtype::nn::Linear;
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn step<D: Device>(model: &mut Linear<D>, opt: &mut Sgd<Cpu>) {
    opt.step(model);
}

fn main() {
    let mut model = Linear::new(3, 2, Cpu);
    let mut opt = Sgd::new(0.1);
    step(&mut model, &mut opt);
}
