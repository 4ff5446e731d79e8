// A training step captured into a CUDA graph and replayed on new batches: the model and its
// optimizer live on the capturing device, batches go in through `StaticTensor::copy_from`, the
// loss comes out through a `StaticTensor` read after the replay. The lessons `graph_*` are the
// ways to get it wrong. Runs where GPU 0 opens (and does nothing without one).
use devtype::cuda::{capture, Capturing, StaticTensor};
use devtype::nn::{Linear, MSELoss};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn step<D: Device>(model: &mut Linear<D>, opt: &mut Sgd<D>, x: &Tensor<D>, y: &Tensor<D>) -> Tensor<D> {
    opt.zero_grad(model);
    let loss = MSELoss::new().forward(&model.forward(x), y);
    loss.backward();
    opt.step(model);
    loss.detach()
}

fn main() -> Result<(), devtype::Error> {
    let Ok(gpu) = Cuda::<0>::open() else { return Ok(()) };
    let mut model = Linear::new(4, 2, Cpu).to(Capturing::new(gpu));
    let mut opt = Sgd::new(0.1);
    let mut x = StaticTensor::new(&Tensor::zeros([8, 4], gpu));
    let mut y = StaticTensor::new(&Tensor::zeros([8, 2], gpu));
    let mut loss = StaticTensor::new(&Tensor::zeros([], gpu));
    let graph = capture(gpu, |dev| {
        loss.set(&step(&mut model, &mut opt, &x.get(dev), &y.get(dev)));
        Ok(())
    })?;
    for _ in 0..3 {
        x.copy_from(&Tensor::<Cpu>::randn([8, 4], Cpu).to(gpu));
        y.copy_from(&Tensor::<Cpu>::randn([8, 2], Cpu).to(gpu));
        graph.replay()?;
        println!("loss {}", loss.read().item());
    }
    Ok(())
}
