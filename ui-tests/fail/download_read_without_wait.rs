// Lesson: reading an asynchronous download before it has finished.
//
// PyTorch, at run time, nothing: `y = x.to("cpu", non_blocking=True)` returns at once, and
// reading `y` before `torch.cuda.synchronize()` may read zeros or stale values, silently.
//
// devtype, at compile time: `to_async` on a GPU tensor returns a `Download`, whose values
// come out only through `.wait()`:
//     error[E0277]: the values of a `Download` arrive only through `.wait()`: it is a copy in flight, not a tensor
//
// Fix: `let y = x.to_async(Cpu).wait()?;` (the wait is the sync), then read `y`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = Tensor::<Cpu>::randn([3], Cpu).to(gpu);
    let y = x.to_async(Cpu);
    println!("{:?}", y.to_vec());
    Ok(())
}
