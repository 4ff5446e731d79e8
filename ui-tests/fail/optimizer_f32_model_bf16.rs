// Lesson: a `bf16` model stepped by an optimizer typed in `f32` (`Sgd<D>` in a signature, whose
// element type defaults to `f32`), as after converting a model to `bf16` while keeping the
// optimizer of the `f32` run.
//
// PyTorch, at run time, at the first fused `optimizer.step()` after `model.to(torch.bfloat16)`
// (the state kept from the `f32` steps is Float):
//     RuntimeError: expected scalar type BFloat16 but found Float
//
// devtype, at compile time: the device is right, so the error is about the element types,
// with the model as the culprit (not a device sentence that names `Cuda<0>` twice):
//     error[E0277]: expected scalar type `devtype::bf16` but found `f32`
//
// Fix: type the optimizer with the model's element type, `&mut Sgd<Cuda<0>, bf16>` (or let
// `step` infer it: `let mut opt = Sgd::new(0.01);`).
use devtype::half::bf16;
use devtype::nn::Linear;
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn train_step(model: &mut Linear<Cuda<0>, bf16>, opt: &mut Sgd<Cuda<0>>) {
    opt.step(model);
}

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::<Cpu, bf16>::with_element(4, 2, Cpu).to(gpu);
    let mut opt = Sgd::new(0.01);
    train_step(&mut model, &mut opt);
    Ok(())
}
