// Lesson: `to_async` on a GPU tensor towards a GPU. On a GPU tensor, `to_async` is the download
// (PyTorch's `x.to("cpu", non_blocking=True)`); a copy between GPUs is a plain `.to(dev)`.
//
// PyTorch, at run time, nothing: `x.to("cuda:0", non_blocking=True)` on a tensor already on
// `cuda:0` returns `x` itself, and the code meant to overlap a download overlaps nothing.
//
// devtype, at compile time: `to_async` on a `Tensor<Cuda<N>>` takes `Cpu` only:
//     error[E0277]: `to_async` on a GPU tensor copies to the host: pass `Cpu`, not `devtype::Cuda<0>`
//
// Fix: `x.to_async(Cpu).wait()?` for the host, `x.to(dev)` for another GPU.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = Tensor::<Cpu>::randn([3], Cpu).to(gpu);
    let copy = x.to_async(gpu);
    let _ = copy;
    Ok(())
}
