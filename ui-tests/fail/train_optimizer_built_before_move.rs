// Lesson: an optimizer that took a step before the model was moved. Its momentum buffers were
// created on the CPU by that first step (a smoke test on the CPU, here); the model then moved to
// the GPU, the optimizer's state did not.
//
// PyTorch, at run time, at the next `optimizer.step()` (the fused update reads param and grad on
// the GPU and the momentum buffer on the CPU; the GPU is named first):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: the optimizer's state is typed on the device of its first step, an
// `Sgd<Cpu>`, and `step` takes only a model on that device:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: build the optimizer after `let model = model.to(gpu);`, or move its state along:
// `let mut opt = opt.to(gpu);`.
use devtype::nn::{Linear, MSELoss};
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::new(4, 1, Cpu);
    let mut opt = Sgd::new(0.01).momentum(0.9);
    let (x, y) = (Tensor::<Cpu>::randn([8, 4], Cpu), Tensor::<Cpu>::zeros([8, 1], Cpu));
    MSELoss::new().forward(&model.forward(&x), &y).backward();
    opt.step(&mut model);

    let mut model = model.to(gpu);
    let (x, y) = (x.to(gpu), y.to(gpu));
    MSELoss::new().forward(&model.forward(&x), &y).backward();
    opt.step(&mut model);
    Ok(())
}
