// Lesson: printing a tensor with `{:?}` inside a CUDA graph capture.
//
// PyTorch, at run time: `print(repr(y))` inside `with torch.cuda.graph(g):` copies the values
// to the host and fails:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
//
// devtype, at compile time: a `Tensor<Capturing<Cuda<0>>>` does not implement `Debug` (its
// `Debug` prints the values, as `Display` does):
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values here
//
// Fix: print what the type knows (`y.shape()`, `y.device()`), or `out.read()` after
// `graph.replay()?`, with `out` a `StaticTensor` the step `set`.
use devtype::cuda::{capture, StaticTensor};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = StaticTensor::new(&Tensor::ones([4], gpu));
    let graph = capture(gpu, |dev| {
        let y = x.get(dev) * 2.0;
        println!("{y:?}");
        Ok(())
    })?;
    graph.replay()
}
