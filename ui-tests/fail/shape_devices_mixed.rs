// Lesson: shapes in the type do not hide a device mix-up: the device sentence comes first.
//
// PyTorch 2.15, at run time:
//     RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_mm)
//
// devtype, at compile time (the sizes agree, the devices do not):
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: `let w = w.to(gpu);` before `x.matmul(&w)`.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x: Shaped<Cuda<0>, f32, (Dyn, C<784>)> = Shaped::randn([64, 784], gpu);
    let w: Shaped<Cpu, f32, (C<784>, C<10>)> = Shaped::randn([784, 10], Cpu);
    let y = x.matmul(&w);
    println!("{:?}", y.shape());
    Ok(())
}
