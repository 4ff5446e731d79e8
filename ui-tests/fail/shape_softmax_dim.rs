// Lesson: `softmax` over a dimension the tensor does not have.
//
// PyTorch 2.15, at run time:
//     IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
//
// devtype, at compile time (the dim is a const: `softmax::<2>()`):
//     error[E0277]: Dimension out of range (dimension 2 of a tensor of shape `(Dyn, C<10>)`)
//
// Fix: the classes of `[batch, 10]` are dimension 1: `softmax::<1>()`.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let logits: Shaped<Cpu, f32, (Dyn, C<10>)> = Shaped::randn([4, 10], Cpu);
    let p = logits.softmax::<2>();
    println!("{:?}", p.shape());
}
