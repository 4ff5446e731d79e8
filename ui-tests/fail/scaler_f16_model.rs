// Lesson: a model converted wholesale to `f16` (`model.half()` in PyTorch) trained with a
// `GradScaler`. The scaler exists for `f32` models whose forward pass runs in `f16` under
// `autocast`; the gradients of an `f16` model underflow however the loss is scaled.
//
// PyTorch, at run time, at `scaler.step(optimizer)` (or `scaler.unscale_(optimizer)`):
//     ValueError: Attempting to unscale FP16 gradients.
//
// devtype, at compile time: the scaler is on the model's device, so the error is about the
// element type, with the model as the culprit (not a device sentence naming `Cuda<0>` twice,
// and no `.to(dev)` to try):
//     error[E0277]: Attempting to unscale `devtype::f16` gradients.
// (A `bf16` model reads the same with `devtype::bf16`.)
//
// Fix: keep the model in `f32` and run its forward pass under `autocast::<f16, _>(|| ...)`.
use devtype::amp::GradScaler;
use devtype::half::f16;
use devtype::nn::Linear;
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::<Cpu, f16>::with_element(10, 3, Cpu).to(gpu);
    let mut opt = Sgd::new(0.1);
    let mut scaler = GradScaler::new(gpu);
    scaler.step(&mut opt, &mut model);
    scaler.update();
    Ok(())
}
