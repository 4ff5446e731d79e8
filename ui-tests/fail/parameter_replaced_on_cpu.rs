// Lesson: a parameter replaced by a tensor on another device. The model was moved to the GPU,
// then its weight was overwritten with pretrained values loaded on the CPU
// (`model.weight = nn.Parameter(pretrained)`); `Module.to` moved the old weight, not this one.
//
// PyTorch, at run time, at the next forward (`nn.Linear` calls addmm(bias, input, weight.t());
// the GPU bias sets the common device and the weight is `mat2`):
//     RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)
//
// devtype, at compile time, at the assignment: the fields are private, and `set_weight` takes
// only a tensor on the layer's device:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: move the values first, `model.set_weight(pretrained.to(gpu));`, or load them before
// moving the model.
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut model = Linear::new(4, 2, Cpu).to(gpu);
    let pretrained = Tensor::<Cpu>::randn([2, 4], Cpu);
    model.set_weight(Tensor::parameter(pretrained));
    let out = model.forward(&Tensor::<Cpu>::randn([3, 4], Cpu).to(gpu));
    println!("{out}");
    Ok(())
}
