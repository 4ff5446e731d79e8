// Lesson: optimizer state on the wrong device, as met after resuming a checkpoint. The model was
// moved to the GPU, but the optimizer's momentum buffers were loaded onto the CPU
// (`torch.load(path, map_location="cpu")`), so the first step mixes devices.
//
// PyTorch, at run time, at `optimizer.step()` (the fused update reads param, grad and buffer):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: the optimizer's state is typed on the device it was loaded onto, an
// `Sgd<Cpu>`, and `step` takes only a model on that same device:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: load the state onto the model's device, `Sgd::load(path, 0.01, 0.9, gpu)?`, or move it:
// `let mut opt = opt.to(gpu);`.
use devtype::nn::{Linear, MSELoss};
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::new(4, 1, Cpu).to(gpu);
    model.load("checkpoint.safetensors")?;
    let mut opt = Sgd::load("optimizer.safetensors", 0.01, 0.9, Cpu)?;
    let (x, y) = (
        Tensor::<Cpu>::randn([8, 4], Cpu).to(gpu),
        Tensor::<Cpu>::zeros([8, 1], Cpu).to(gpu),
    );
    let loss = MSELoss::new().forward(&model.forward(&x), &y);
    loss.backward();
    opt.step(&mut model);
    Ok(())
}
