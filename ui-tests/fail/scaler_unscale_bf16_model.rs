// Lesson: gradient clipping with a `GradScaler` on a `bf16` model: `unscale_` before clipping.
// `bf16` has the range of `f32`, so a `bf16` model needs no scaler at all; a scaler is for an
// `f32` model whose forward pass runs in `f16`.
//
// PyTorch, at run time, for an `f16` model (a `bf16` one passes and the scaler does nothing
// useful):
//     ValueError: Attempting to unscale FP16 gradients.
//
// devtype, at compile time: `unscale_` takes an `f32` model on the scaler's device; here the
// device is right and the element type is not:
//     error[E0277]: Attempting to unscale `devtype::bf16` gradients.
//
// Fix: drop the scaler for a `bf16` model (`loss.backward(); clip_grad_norm_(..); opt.step(..)`),
// or keep the model in `f32` under `autocast::<f16, _>`.
use devtype::amp::GradScaler;
use devtype::half::bf16;
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Linear::<Cpu, bf16>::with_element(10, 3, Cpu).to(gpu);
    let mut scaler = GradScaler::new(gpu);
    scaler.unscale_(&model);
    Ok(())
}
