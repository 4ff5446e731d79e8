// Lesson: in a training loop, suspect one: a batch you forgot to move. The model was moved
// once; every batch the loader hands out is still on the CPU and must be moved inside the loop.
//
// PyTorch, at run time, on the first step (`nn.Linear` calls addmm(bias, input, weight.t())):
//     RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)
//
// devtype, at compile time: the batch is a `Tensor<Cpu>`, not a `ModuleInput<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: `let (x, y) = (x.to(gpu), y.to(gpu));` at the top of the loop body.
use devtype::nn::{CrossEntropyLoss, Linear, ReLU, Sequential};
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model =
        Sequential::new((Linear::new(2, 16, Cpu), ReLU, Linear::new(16, 3, Cpu))).to(gpu);
    let loss_fn = CrossEntropyLoss::new();
    let mut opt = Sgd::new(0.1);
    let batches: Vec<(Tensor<Cpu>, Tensor<Cpu, i64>)> = Vec::new();
    for (x, y) in &batches {
        model.zero_grad();
        let loss = loss_fn.forward(&model.forward(x), y.to(gpu));
        loss.backward();
        opt.step(&mut model);
    }
    Ok(())
}
