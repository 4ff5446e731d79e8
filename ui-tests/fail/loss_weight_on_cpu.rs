// Lesson: suspect three, a loss weight that stayed on the CPU.
// `nn.CrossEntropyLoss(weight=torch.tensor([1., 3.]))` builds its weight on the CPU; the model
// and the batch were moved, the loss was not.
//
// PyTorch 2.15, at run time (nll_loss is argument-checked; up to 2.7 it read
// `... found at least two devices, cuda:0 and cpu! (when checking argument for argument weight ...)`):
//     RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)
//
// devtype, at compile time, once: the weight is a buffer typed on the loss's device, so this loss
// is a `CrossEntropyLoss<Cpu>`, and the GPU logits are not `ModuleInput<Cpu>` (targets follow them):
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
// (the loss's device first: it is the one the inputs are checked against).
//
// Fix: move the loss once, like the model: `let loss_fn = loss_fn.to(gpu);`, or create the
// weight on the GPU: `Tensor::from_vec(vec![1.0, 3.0], [2], gpu)`.
use devtype::nn::{CrossEntropyLoss, Linear};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Linear::new(10, 2, Cpu).to(gpu);
    let loss_fn = CrossEntropyLoss::new().with_weight(Tensor::from_vec(vec![1.0, 3.0], [2], Cpu));
    let x = Tensor::<Cpu>::randn([4, 10], Cpu).to(gpu);
    let y = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 1, 0], [4], Cpu).to(gpu);
    let logits = model.forward(&x);
    let loss = loss_fn.forward(&logits, &y);
    println!("{}", loss.item());
    Ok(())
}
