// Lesson: a reduction over a dimension the tensor does not have.
//
// PyTorch 2.15, at run time:
//     IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
//
// devtype, at compile time (the dim is a const: `sum::<2>()`; its removal is in the type):
//     error[E0277]: Dimension out of range (dimension 2 of a tensor of shape `(Dyn, C<10>)`)
//
// Fix: dimensions count from 0: the classes of `[batch, 10]` are `sum::<1>()`.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let logits: Shaped<Cpu, f32, (Dyn, C<10>)> = Shaped::randn([4, 10], Cpu);
    let s = logits.sum::<2>();
    println!("{:?}", s.shape());
}
