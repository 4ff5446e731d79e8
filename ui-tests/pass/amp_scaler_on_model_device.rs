// Mixed precision done right: the model stays in `f32` and moves once, the `GradScaler` is built
// on the model's device, the forward pass runs under `autocast` (products in `f16`), the loss is
// computed in `f32` and scaled by reference, and a hand-made gradient is created next to its
// parameter. The lessons `scaler_loss_on_cpu`, `scaler_f16_loss`, `scaler_on_cpu_model_on_gpu`
// and `set_grad_on_cpu` are the ways to get it wrong. Run on the CPU, and on GPU 0 too where one
// opens.
use devtype::amp::{autocast, GradScaler};
use devtype::half::f16;
use devtype::nn::{CrossEntropyLoss, Linear};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn train<D: Device + HostSync>(dev: D) -> f32 {
    let mut model = Linear::new(10, 3, Cpu).to(dev);
    let mut opt = Sgd::new(0.1);
    let mut scaler = GradScaler::new(dev); // on the model's device
    let loss_fn = CrossEntropyLoss::new();
    let mut last = 0.0;
    for _ in 0..3 {
        let x = Tensor::<Cpu>::randn([8, 10], Cpu).to(dev);
        let y = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 2, 0, 1, 2, 0, 1], [8], Cpu).to(dev);
        opt.zero_grad(&model);
        let logits = autocast::<f16, _>(|| model.forward(&x));
        let loss = loss_fn.forward(&logits, &y);
        scaler.scale(&loss).backward();
        scaler.step(&mut opt, &mut model);
        scaler.update();
        last = loss.item();
    }
    // A gradient set by hand, created on its parameter's device.
    let w = model.weight();
    w.try_set_grad(Some(Tensor::zeros_like(&w))).unwrap();
    let y = w * w;
    y.backward_with(Tensor::ones_like(&y));
    last
}

fn main() {
    assert!(train(Cpu).is_finite());
    if let Ok(gpu) = Cuda::<0>::open() {
        assert!(train(gpu).is_finite());
    }
}
