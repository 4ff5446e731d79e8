// Lesson: in a training loop, suspect three: a loss weight left on the CPU. The model moved
// once and every batch moves in the loop, but the class weights of the loss were built on the
// CPU and the loss was never moved.
//
// PyTorch, at run time, on the first step:
//     RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)
//
// devtype, at compile time: the weight is a buffer typed on the loss's device, so this is a
// `CrossEntropyLoss<Cpu>`, and the GPU logits are not its `ModuleInput<Cpu>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
//
// Fix: move the loss once, like the model: `let loss_fn = loss_fn.to(gpu);` (or build the
// weight on the GPU: `Tensor::from_vec(weights, [3], gpu)`).
use devtype::nn::{CrossEntropyLoss, Linear, ReLU, Sequential};
use devtype::optim::Sgd;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model =
        Sequential::new((Linear::new(2, 16, Cpu), ReLU, Linear::new(16, 3, Cpu))).to(gpu);
    let loss_fn =
        CrossEntropyLoss::new().with_weight(Tensor::from_vec(vec![1.0, 2.0, 1.0], [3], Cpu));
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
