// Lesson: a batch of the wrong width fed to a model.
//
// PyTorch 2.15, at run time (a batch of 64 images summed over a row, 28 features, where the
// flattened 28x28 = 784 were meant):
//     RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (64x28 and 784x128)
//
// devtype, at compile time: the model's `StaticLinear<Cpu, 784, 128>` takes 784 features:
//     error[E0277]: addmm: mat1 and mat2 shapes cannot be multiplied (?x28 and 784x128)
//
// Fix: flatten the whole image, `x.flatten()`, which gives `(Dyn, C<784>)`.
use devtype::nn::ReLU;
use devtype::prelude::*;
use devtype::shaped::nn::{StaticLinear, Seq};
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let model = Seq::new(StaticLinear::<Cpu, 784, 128>::new(Cpu))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 128, 10>::new(Cpu));
    let images: Shaped<Cpu, f32, (Dyn, C<28>, C<28>)> = Shaped::randn([64, 28, 28], Cpu);
    let x = images.sum::<1>(); // meant: images.flatten()
    let logits = model.forward(&x);
    println!("{:?}", logits.shape());
}
