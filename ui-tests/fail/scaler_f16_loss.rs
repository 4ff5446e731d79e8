// Lesson: a loss computed in `f16` handed to a `GradScaler`. Under `autocast` only the products
// run in low precision; a model converted wholesale to `f16` gives an `f16` loss, whose
// gradients underflow however it is scaled.
//
// PyTorch, at run time, nothing: `scaler.scale(loss)` multiplies the `f16` loss by the `float`
// scale (the result is promoted), and training quietly goes on with `f16` gradients.
//
// devtype, at compile time: `scale` takes an `f32` loss, with the sentence of PyTorch's
// same-dtype check:
//     error[E0277]: Found dtype `devtype::f16` but expected `f32`
//
// Fix: keep the model in `f32` and run its forward pass under `autocast::<f16, _>(|| ...)`, or
// compute the loss in `f32`: `loss.to_dtype::<f32>()`.
use devtype::amp::GradScaler;
use devtype::half::f16;
use devtype::prelude::*;

fn main() {
    let scaler = GradScaler::new(Cpu);
    let loss = Tensor::<Cpu, f16>::ones([], Cpu);
    let scaled = scaler.scale(&loss);
    println!("{scaled}");
}
