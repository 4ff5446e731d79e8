// Lesson: moving a model to the CPU inside a CUDA graph capture.
//
// PyTorch, at run time: `model.to("cpu")` (or `model.cpu()`) inside `with torch.cuda.graph(g):`
// copies every parameter to the host and waits for it:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
//
// devtype, at compile time: a model typed on `Capturing<Cuda<0>>` does not move to `Cpu`:
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values to move them to `Cpu`
//
// Fix: keep the model on the GPU inside the step; after `graph.replay()?`, move it to the GPU's
// own type and from there to the host: `model.to(gpu).to(Cpu)`.
use devtype::cuda::{capture, Capturing};
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Linear::new(4, 2, gpu).to(Capturing::new(gpu));
    let graph = capture(gpu, |_| {
        let _on_host = model.to(Cpu);
        Ok(())
    })?;
    graph.replay()
}
