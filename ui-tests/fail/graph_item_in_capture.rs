// Lesson: `loss.item()` inside a captured training step.
//
// PyTorch, at run time, during the capture:
//     RuntimeError: CUDA error: operation not permitted when stream is capturing
//
// devtype, at compile time: the loss is a `Tensor<Capturing<Cuda<0>>>`, whose value the host
// may not wait for while the step is recorded:
//     error[E0277]: cannot synchronize while the stream is capturing: the host may not wait for `Capturing<Cuda<0>>`'s values here
//
// Fix: `loss_out.set(&loss.detach())` inside the step, then `loss_out.read().item()` after
// `graph.replay()?` (one sync, when you want the number).
use devtype::cuda::{capture, StaticTensor};
use devtype::nn::MSELoss;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = StaticTensor::new(&Tensor::ones([8, 4], gpu));
    let y = StaticTensor::new(&Tensor::zeros([8, 4], gpu));
    let graph = capture(gpu, |dev| {
        let loss = MSELoss::new().forward(&x.get(dev).relu(), &y.get(dev));
        if loss.item() > 1.0 {
            println!("large loss");
        }
        Ok(())
    })?;
    graph.replay()
}
