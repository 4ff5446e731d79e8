// Lesson: reading a value back inside a CUDA graph capture.
//
// PyTorch, at run time, in the middle of `with torch.cuda.graph(g):`:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
// and the capture is lost.
//
// devtype, at compile time: inside `cuda::capture` the step's tensors are on
// `Capturing<Cuda<0>>`, which the host may not wait for:
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values here
//
// Fix: give the result to a `StaticTensor` inside the step, `out.set(&y)`, and read it after
// `graph.replay()?` with `out.read().to_vec()`.
use devtype::cuda::{capture, StaticTensor};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = StaticTensor::new(&Tensor::ones([4], gpu));
    let graph = capture(gpu, |dev| {
        let y = x.get(dev).relu();
        println!("{:?}", y.to_vec());
        Ok(())
    })?;
    graph.replay()
}
