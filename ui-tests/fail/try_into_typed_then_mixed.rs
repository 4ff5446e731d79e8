// Lesson: `try_into_typed` checks the device once, at the border; after it the type does the
// work. A tensor from a config-driven `DynTensor` turned into `Tensor<Cuda<0>>` cannot then be
// mixed with a `Tensor<Cpu>`.
//
// PyTorch, at run time (the device comes from a string, so nothing is known until the op runs):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `try_into_typed::<Cuda<0>>()` returns `Tensor<Cuda<0>>` (or an `Err`
// naming both devices at run time, if the tensor is elsewhere); adding a `Tensor<Cpu>` to it is:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: convert both to the same device type, or move the CPU one: `let mask = mask.to(gpu);`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let dev: DynDevice = "cuda:0".parse()?;
    let features = DynTensor::randn([4, 2], dev)?;
    let features = features.try_into_typed::<Cuda<0>>()?;
    let mask = Tensor::<Cpu>::ones([4, 2], Cpu);
    let masked = features * &mask;
    println!("{masked}");
    Ok(())
}
