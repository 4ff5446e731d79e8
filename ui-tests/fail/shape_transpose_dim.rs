// Lesson: a transpose of a dimension the tensor does not have.
//
// PyTorch 2.15, at run time:
//     IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
//
// devtype, at compile time:
//     error[E0277]: Dimension out of range (transpose::<1, 2> of a tensor of shape `(C<3>, C<4>)`)
//
// Fix: a matrix has dimensions 0 and 1: `transpose::<0, 1>()` (or `t()`).
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (C<3>, C<4>)> = Shaped::randn([3, 4], Cpu);
    let y = x.transpose::<1, 2>();
    println!("{:?}", y.shape());
}
