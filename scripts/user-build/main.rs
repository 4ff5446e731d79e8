//! A user's training program (the README's "train a small MLP in a loop"), built by
//! `scripts/user-build.sh` as a crate of its own that depends on devtype by path.
//! EDIT-LINE below is the line the script changes to time a rebuild.

use devtype::data::{spirals, DataLoader};
use devtype::device::{run_on_best_device, DeviceJob};
use devtype::nn::{CrossEntropyLoss, Linear, ReLU};
use devtype::optim::Adam;
use devtype::prelude::*;

struct Mlp<D: Device> {
    fc1: Linear<D>,
    act: ReLU,
    fc2: Linear<D>,
}
devtype::module!(Mlp<D> { fc1, act, fc2 });

impl<D: Device> Forward<D> for Mlp<D> {
    fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }
}

struct Train {
    epochs: usize,
}

impl DeviceJob for Train {
    type Output = f32;
    fn run<D: Device + HostSync>(self, dev: D) -> f32 {
        devtype::manual_seed(0);
        let data = spirals(4_000, 2024);
        let model = Mlp {
            fc1: Linear::new(data.features(), 64, Cpu),
            act: ReLU,
            fc2: Linear::new(64, data.classes, Cpu),
        };
        let mut model = model.to(dev);
        let criterion = CrossEntropyLoss::new();
        let mut opt = Adam::new(3e-3);
        let loader = DataLoader::new(data, dev)
            .batch_size(64)
            .shuffle(true)
            .seed(7);
        let mut last = 0.0;
        for epoch in 0..self.epochs {
            let mut total = Tensor::<D>::zeros([], dev);
            for batch in loader.iter_epoch(epoch as u64) {
                let (x, y) = batch.expect("batch");
                model.zero_grad();
                let loss = criterion.forward(&model.forward(&x), &y);
                loss.backward();
                opt.step(&mut model);
                total = &total + &loss.detach();
            }
            last = total.item() / loader.len() as f32;
            println!("epoch {:>2}: loss {last:.4}", epoch + 1); // EDIT-LINE
        }
        last
    }
}

fn main() {
    let epochs = std::env::args()
        .nth(1)
        .map_or(10, |n| n.parse().expect("epochs"));
    let loss = run_on_best_device(Train { epochs });
    assert!(loss.is_finite());
}
