// A training step generic over the device, with the model typed on the optimizer's device `D`
// (the lesson `generic_step_model_on_cpu` types it on `Cpu`). Runs on the CPU, and on GPU 0 too
// where one opens.
use devtype::nn::{Linear, MSELoss};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn step<D: Device + HostSync>(model: &mut Linear<D>, opt: &mut Sgd<D>, dev: D) -> f32 {
    let x = Tensor::<Cpu>::randn([8, 3], Cpu).to(dev);
    let y = Tensor::<Cpu>::zeros([8, 2], Cpu).to(dev);
    opt.zero_grad(model);
    let loss = MSELoss::new().forward(&model.forward(&x), &y);
    loss.backward();
    opt.step(model);
    loss.item()
}

fn run<D: Device + HostSync>(dev: D) {
    let mut model = Linear::new(3, 2, Cpu).to(dev); // built on the CPU, moved once
    let mut opt = Sgd::new(0.1);
    assert!(step(&mut model, &mut opt, dev).is_finite());
}

fn main() {
    run(Cpu);
    if let Ok(gpu) = Cuda::<0>::open() {
        run(gpu);
    }
}
