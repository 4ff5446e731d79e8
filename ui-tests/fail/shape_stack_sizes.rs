// Lesson: `stack` of tensors of different shapes.
//
// PyTorch 2.15, at run time:
//     RuntimeError: stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1
//
// devtype, at compile time (the result's new dimension of size 2 is in the type):
//     error[E0277]: stack expects each tensor to be equal size, but got `(C<2>, C<3>)` at entry 0 and `(C<2>, C<4>)` at entry 1
//
// Fix: stack tensors of one shape, or `cat` along dimension 1 to get `(C<2>, C<7>)`.
use devtype::prelude::*;
use devtype::shaped::{Axis, Shaped, C};

fn main() {
    let a: Shaped<Cpu, f32, (C<2>, C<3>)> = Shaped::randn([2, 3], Cpu);
    let b: Shaped<Cpu, f32, (C<2>, C<4>)> = Shaped::randn([2, 4], Cpu);
    let s = a.stack(Axis::<0>, &b);
    println!("{:?}", s.shape());
}
