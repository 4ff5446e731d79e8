// Lesson: the seed's quick check, part 1: `x.to("cuda")` is called
// without assigning the result (the model on the GPU comes in part 2).
//
// PyTorch: `model.to(device)` moves the module in place, but `tensor.to(device)` returns a new
// tensor and leaves `x` where it was. Nothing is reported here; the copy is silently dropped and
// the mistake surfaces one line later (part 2).
//
// devtype, at compile time: `to` is `#[must_use]`, so dropping its result is a warning, and with
// `#![deny(unused_must_use)]` (put it at the top of your crate) an error whose text says to rebind:
//     error: unused return value of `devtype::Tensor::<D, E>::to` that must be used
// (rustc's generic help, "use `let _ = ...` to ignore the resulting value", would only
// silence the lint; it is not the fix.)
//
// Fix: rebind, `let x = x.to(gpu);`.
#![deny(unused_must_use)]

use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = Tensor::<Cpu>::randn([4, 10], Cpu);
    x.to(gpu); // the copy on the GPU is dropped; `x` is still on the CPU
    println!("{}", x.device()); // prints `cpu`
    Ok(())
}
