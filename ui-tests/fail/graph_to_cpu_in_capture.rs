// Lesson: moving a tensor to the CPU inside a CUDA graph capture.
//
// PyTorch, at run time: `y.cpu()` (or `y.to("cpu")`) inside `with torch.cuda.graph(g):`
// copies the values to the host and waits for them:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
//
// devtype, at compile time: a `Tensor<Capturing<Cuda<0>>>` does not move to `Cpu`:
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values to move them to `Cpu`
//
// Fix: give the result to a `StaticTensor` inside the step, `out.set(&y)`, and move it after
// `graph.replay()?`: `out.read().to(Cpu)`.
use devtype::cuda::{capture, StaticTensor};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = StaticTensor::new(&Tensor::ones([4], gpu));
    let graph = capture(gpu, |dev| {
        let y = x.get(dev).relu();
        let _on_host = y.to(Cpu);
        Ok(())
    })?;
    graph.replay()
}
