// Lesson: a `Sequential` with one layer not moved. The layers were built one by one and moved to
// the GPU, but the head was added afterwards, still on the CPU.
//
// PyTorch, at run time, when the input reaches the head (`nn.Linear` calls addmm(bias, input,
// weight.t()), whose first argument, the CPU bias, sets the common device):
//     RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)
//
// devtype, at compile time, where the `Sequential` is built: every layer must be on the device
// of the layers before it, and layer 2 is a `Linear<Cpu>` after a `Linear<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
//
// Fix: move the head too, `Linear::new(512, 10, Cpu).to(gpu)`, or build the whole model on the
// CPU and move it once: `let model = Sequential::new((..)).to(gpu);`.
use devtype::nn::{Linear, ReLU, Sequential};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let body = Linear::new(784, 512, Cpu).to(gpu);
    let head = Linear::new(512, 10, Cpu);
    let model = Sequential::new((body, ReLU, head));
    let logits = model.forward(&Tensor::<Cpu>::randn([2, 784], Cpu).to(gpu));
    println!("{logits}");
    Ok(())
}
