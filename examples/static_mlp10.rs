//! A 10-layer MLP with every feature size in the type: the compile-cost probe of the README's
//! "Static shapes" section (`cargo check --example static_mlp10`), and a forward pass that
//! runs.

use devtype::nn::ReLU;
use devtype::prelude::*;
use devtype::shaped::nn::{Seq, StaticLinear};
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let dev = Cpu;
    let model = Seq::new(StaticLinear::<Cpu, 784, 512>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 512, 256>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 256, 256>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 256, 128>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 128, 128>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 128, 64>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 64, 64>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 64, 32>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 32, 32>::new(dev))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 32, 10>::new(dev));
    let images: Shaped<Cpu, f32, (Dyn, C<28>, C<28>)> = Shaped::randn([16, 28, 28], dev);
    let logits = model.forward(images.flatten()); // Shaped<Cpu, f32, (Dyn, C<10>)>
    let probs = logits.softmax::<1>().sum::<1>();
    println!("{:?} {:?}", logits.shape(), probs.to_vec());
}
