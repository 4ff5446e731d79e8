// Lesson: `cat` of tensors whose other sizes differ.
//
// PyTorch 2.15, at run time:
//     RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.
//
// devtype, at compile time (the size along dimension 1 would be 4 + 5, computed by typenum):
//     error[E0277]: Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.
//
// Fix: both need 2 rows; only the size along the joined dimension may differ.
use devtype::prelude::*;
use devtype::shaped::{Axis, Shaped, C};

fn main() {
    let a: Shaped<Cpu, f32, (C<2>, C<4>)> = Shaped::randn([2, 4], Cpu);
    let b: Shaped<Cpu, f32, (C<3>, C<5>)> = Shaped::randn([3, 5], Cpu);
    let c = a.cat(Axis::<1>, &b);
    println!("{:?}", c.shape());
}
