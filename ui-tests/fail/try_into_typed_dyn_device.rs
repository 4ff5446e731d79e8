// Lesson: `DynDevice` is a run-time value, not a device type. `try_into_typed::<D>()` needs a
// device type (`Cpu`, `Cuda<N>`) to check the tensor against.
//
// PyTorch has no such distinction: every device is a run-time value, and a mix-up surfaces only
// when an op runs:
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `DynDevice` does not implement the sealed `Device` trait:
//     error[E0277]: `devtype::DynDevice` is not a device type: use `Cpu` or `Cuda<N>` (or a generic `D: Device`)
//
// Fix: name the device type you expect (`try_into_typed::<Cuda<0>>()`), or, to stay generic,
// write the code as `fn run<D: Device>(dev: D)` and call `try_into_typed::<D>()`; keep a
// `DynTensor` if the device is only known at run time.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let dev: DynDevice = "cuda:0".parse()?;
    let x = DynTensor::randn([4, 10], dev)?;
    let _x = x.try_into_typed::<DynDevice>()?;
    Ok(())
}
