// Lesson: an asynchronous copy from pageable memory. `non_blocking=True` only overlaps the GPU's
// work when the source is pinned; from ordinary host memory the copy is synchronous anyway.
//
// PyTorch 2.15, at run time, nothing: `x.to("cuda", non_blocking=True)` on a pageable tensor
// quietly runs a synchronous copy (the driver stages it through its own pinned buffer before
// returning), so the upload the code meant to hide behind compute is not hidden. PyTorch's docs
// advise `x.pin_memory()` first (or `DataLoader(pin_memory=True)`).
//
// devtype, at compile time: `to_async` exists only on a `PinnedTensor`:
//     error[E0277]: `to_async` needs pinned memory: call `.pin_memory()` on this `devtype::Tensor<devtype::Cpu>` first
//
// Fix: `let x = batch.pin_memory(); let x = x.to_async(gpu).into_tensor();`, or a plain
// synchronous `batch.to(gpu)`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let batch = Tensor::<Cpu>::randn([64, 784], Cpu);
    let x = batch.to_async(gpu).into_tensor();
    println!("{}", x.device());
    Ok(())
}
