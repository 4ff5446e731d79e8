// Lesson: joining tensors from two devices.
//
// PyTorch, at run time (`torch.cat` is argument-checked as in docs/pytorch-reference.md §1a, the
// first tensor's device first; this exact line is quoted in user reports such as
// Comfy-Org/ComfyUI#7746, and devtype's `DynTensor::cat` returns it too):
//     RuntimeError: Expected all tensors to be on the same device, but got tensors is on cuda:0, different from other tensors on cpu (when checking argument in method wrapper_CUDA_cat)
//
// devtype, at compile time: in the tuple `(&a, &b)` every later member must be `OperandOn` the
// first one's device:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cpu` and `devtype::Cuda<0>`
//
// Fix: move one of them first: `let b = b.to(Cpu);` (or `a.to(gpu)`), then `Tensor::cat((&a, &b), 0)`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let a = Tensor::<Cpu>::randn([2, 3], Cpu);
    let b = Tensor::<Cuda<0>>::randn([2, 3], gpu);
    let both = Tensor::cat((&a, &b), 0);
    println!("{both}");
    Ok(())
}
