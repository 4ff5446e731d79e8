// Lesson: a BatchNorm built on the CPU, and only the rest of the model moved.
// `conv = nn.Conv2d(3, 16, 3).cuda()` but `bn = nn.BatchNorm2d(16)` stays where it was made:
// its weight, bias and running statistics (buffers, moved by `.to` like the parameters) are
// on the CPU, and the activations that reach it are on the GPU.
//
// PyTorch 2.15, at run time, inside `F.batch_norm` (the argument and method named depend on
// the backend; with cuDNN it is the first CPU tensor, the weight):
//     RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA__cudnn_batch_norm)
//
// devtype, at compile time, once: this `bn` is a `BatchNorm2d<Cpu>`, and the conv's output is a
// `Tensor<Cuda<0>>`, which is not a `ModuleInput<Cpu>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
// (the module's device first: it is the one the input is checked against).
//
// Fix: move every layer, or better the whole model once (a struct with `devtype::module!`, whose
// `to` moves the running statistics too): `let bn = BatchNorm2d::new(16, Cpu).to(gpu);`.
use devtype::nn::{BatchNorm2d, Conv2d};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let conv = Conv2d::new(3, 16, (3, 3), Cpu).to(gpu);
    let bn = BatchNorm2d::new(16, Cpu);
    let x = Tensor::<Cpu>::randn([8, 3, 32, 32], Cpu).to(gpu);
    let y = bn.forward(conv.forward(&x));
    println!("{:?}", y.shape());
    Ok(())
}
