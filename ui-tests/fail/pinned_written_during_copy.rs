// Lesson: rewriting a pinned buffer while its copy to the GPU is still in flight. The copy
// reads the host memory later, on the GPU's copy engine, so the next batch written into the
// same buffer would reach the GPU in place of this one.
//
// PyTorch 2.15, at run time, nothing: after `x_gpu = x_pinned.to("cuda", non_blocking=True)`,
// `x_pinned.copy_(next_batch)` races the copy and the GPU may compute on the wrong batch; the
// docs leave it to the user to synchronise (or to record an event and wait on it) first.
//
// devtype, at compile time: the `Upload` guard borrows the pinned tensor until it is waited,
// dropped or turned into its tensor:
//     error[E0502]: cannot borrow `batch` as mutable because it is also borrowed as immutable
//
// Fix: finish with the guard first (`let x = upload.into_tensor();` keeps the copy
// asynchronous; a later write then waits for the copy by itself), or write into another
// pinned buffer.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut batch = Tensor::<Cpu>::randn([64, 784], Cpu).pin_memory();
    let upload = batch.to_async(gpu);
    batch.as_mut_slice()[0] = 1.0; // the next batch, too early
    let x = upload.into_tensor();
    println!("{}", x.device());
    Ok(())
}
