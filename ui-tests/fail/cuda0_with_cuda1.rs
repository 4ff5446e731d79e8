// Lesson: two GPUs are two devices.
//
// PyTorch, at run time (the first non-CPU device is printed first):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!
//
// devtype, at compile time: `Cuda<0>` and `Cuda<1>` are different types, so the operand is not
// `OperandOn<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cuda<1>`
//
// Fix: bring both tensors to one GPU (`let b = b.to(gpu0);`) before combining them. Copies
// between GPUs are explicit, as in PyTorch.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu0 = Cuda::<0>::open()?;
    let gpu1 = Cuda::<1>::open()?;
    let a = Tensor::<Cuda<0>>::randn([4, 2], gpu0);
    let b = Tensor::<Cuda<1>>::randn([4, 2], gpu1);
    let c = a * &b;
    println!("{c}");
    Ok(())
}
