// Lesson: `torch.cuda.synchronize()` inside a captured step (to time it, or "to be safe").
//
// PyTorch, at run time, during the capture:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
//
// devtype, at compile time: the capturing device has no `synchronize`:
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values here
//
// Fix: synchronize outside, after `graph.replay()?` (`gpu.synchronize()?`); time replays with
// `cuda::Timer`.
use devtype::cuda::{capture, StaticTensor};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = StaticTensor::new(&Tensor::ones([4], gpu));
    let mut out = StaticTensor::new(&Tensor::zeros([4], gpu));
    let graph = capture(gpu, |dev| {
        out.set(&x.get(dev).exp());
        dev.synchronize()?;
        Ok(())
    })?;
    graph.replay()
}
