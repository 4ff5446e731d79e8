// Lesson: a `GradScaler` built on another device than the model. `GradScaler("cuda")` is
// PyTorch's default; here the scaler was built with `Cpu` while the model moved to the GPU.
//
// PyTorch, at run time, at `scaler.step(optimizer)` (the unscale reads the scaler's
// `inv_scale` and `found_inf` next to the gradients):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `GradScaler::step` takes a model on the scaler's device only (the
// optimizer, built without a device, takes the scaler's):
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: build the scaler after the move, on the model's device: `GradScaler::new(gpu)`.
use devtype::amp::GradScaler;
use devtype::nn::Linear;
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::new(3, 2, Cpu).to(gpu);
    let mut opt = Sgd::new(0.1);
    let mut scaler = GradScaler::new(Cpu);
    scaler.step(&mut opt, &mut model);
    scaler.update();
    Ok(())
}
