// Lesson: one target per row of logits.
//
// PyTorch 2.15, at run time:
//     ValueError: Expected input batch_size (32) to match target batch_size (16).
//
// devtype, at compile time:
//     error[E0277]: Expected input batch_size (32) to match target batch_size (16).
//
// Fix: the targets of the same batch: `[32]` class indices for `[32, 10]` logits.
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let logits: Shaped<Cpu, f32, (C<32>, C<10>)> = Shaped::randn([32, 10], Cpu);
    let targets: Shaped<Cpu, i64, (C<16>,)> = Tensor::zeros([16], Cpu).into_shaped();
    let loss = logits.cross_entropy(&targets);
    println!("{}", loss.item());
}
