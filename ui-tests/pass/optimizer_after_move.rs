// The right order for a training set-up: move the model once, then build the optimizer (its
// state lives on the model's device), then move every batch inside the loop. The lessons
// `train_optimizer_built_before_move` and `train_batch_not_moved` are the two ways to get it
// wrong. Run on the CPU, and on GPU 0 too where one opens.
use devtype::nn::{CrossEntropyLoss, Linear};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;

fn train<D: Device + HostSync>(dev: D) -> f32 {
    let mut model = Linear::new(10, 3, Cpu).to(dev); // 1. the model, moved once
    let mut opt = Sgd::new(0.1); // 2. the optimizer, after the move
    let loss_fn = CrossEntropyLoss::new();
    let mut last = 0.0;
    for _ in 0..3 {
        let x = Tensor::<Cpu>::randn([8, 10], Cpu).to(dev); // 3. each batch, in the loop
        let y = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 2, 0, 1, 2, 0, 1], [8], Cpu).to(dev);
        opt.zero_grad(&model);
        let loss = loss_fn.forward(&model.forward(&x), &y);
        loss.backward();
        opt.step(&mut model);
        last = loss.item(); // one host sync per step, to read the number
    }
    last
}

fn main() {
    assert!(train(Cpu).is_finite());
    if let Ok(gpu) = Cuda::<0>::open() {
        assert!(train(gpu).is_finite());
    }
}
