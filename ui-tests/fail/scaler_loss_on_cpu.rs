// Lesson: mixed precision with the loss on another device than the `GradScaler`. The scaler was
// built for the CPU (`GradScaler::new(Cpu)`, copied from a CPU notebook) while the model and
// the loss moved to the GPU, or the loss was computed on the CPU.
//
// PyTorch, at run time, at `scaler.scale(loss)` (`loss * self._scale`):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `scale` takes a loss on the scaler's device only:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: build the scaler on the model's device, `GradScaler::new(gpu)`, and compute the loss
// there.
use devtype::amp::GradScaler;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let scaler = GradScaler::new(gpu);
    let loss = Tensor::<Cpu>::ones([], Cpu);
    let scaled = scaler.scale(&loss);
    scaled.backward();
    Ok(())
}
