// Lesson: a matrix product across devices.
//
// PyTorch 2.15, at run time (mm is argument-checked; up to 2.7 it read
// `... found at least two devices, cuda:0 and cpu! (when checking argument for argument mat2 ...)`):
//     RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_mm)
//
// devtype, at compile time: `matmul` takes `R: OperandOn<D>` for the receiver's device `D`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: `let w = w.to(gpu);` before `x.matmul(&w)`, or create `w` on the GPU.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = Tensor::<Cuda<0>>::randn([4, 10], gpu);
    let w = Tensor::<Cpu>::randn([10, 2], Cpu);
    let out = x.matmul(&w);
    println!("{out}");
    Ok(())
}
