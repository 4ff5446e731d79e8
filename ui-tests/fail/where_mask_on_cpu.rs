// Lesson: `where` with the mask left on the CPU.
//
// PyTorch, at run time (TensorIterator check; the CUDA device is printed first):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: the result is on `on_true`'s device, and the mask must be on it too
// (`MaskFor`); the one error names the mask, and does not ask to move the correctly placed
// branches:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: build the mask from GPU tensors (`let keep = scores.gt(&threshold);` on the GPU), or move
// it: `let keep = keep.to(gpu);`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let scores = Tensor::<Cuda<0>>::randn([8], gpu);
    let zeros = Tensor::<Cuda<0>>::zeros([8], gpu);
    let keep = Tensor::<Cpu, bool>::ones([8], Cpu);
    let kept = keep.where_cond(&scores, &zeros);
    println!("{kept}");
    Ok(())
}
