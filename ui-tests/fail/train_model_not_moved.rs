// Lesson: in a training loop, the batch moved but the model never did (`model.to(device)` was
// forgotten, or its result dropped).
//
// PyTorch, at run time, on the first step (`nn.Linear` calls addmm(bias, input, weight.t()); the
// CPU bias comes first and sets the common device):
//     RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)
//
// devtype, at compile time, at the model: the batch is a `Tensor<Cuda<0>>`, not a
// `ModuleInput<Cpu>`, and the note names both fixes (move the batch, or the model once). That
// is the only error: the logits of a rejected input have no type, so the loss, which would
// otherwise see CPU logits and GPU targets, reports nothing more:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
//
// Fix: move the model once, before the loop: `let mut model = model.to(gpu);`.
use devtype::nn::{CrossEntropyLoss, Linear, ReLU, Sequential};
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Sequential::new((Linear::new(2, 16, Cpu), ReLU, Linear::new(16, 3, Cpu)));
    let loss_fn = CrossEntropyLoss::new();
    let mut opt = Sgd::new(0.1);
    let batches: Vec<(Tensor<Cpu>, Tensor<Cpu, i64>)> = Vec::new();
    for (x, y) in &batches {
        let (x, y) = (x.to(gpu), y.to(gpu));
        model.zero_grad();
        let loss = loss_fn.forward(&model.forward(&x), &y);
        loss.backward();
        opt.step(&mut model);
    }
    Ok(())
}
