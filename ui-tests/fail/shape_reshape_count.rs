// Lesson: a reshape to a shape with another element count.
//
// PyTorch 2.15, at run time:
//     RuntimeError: shape '[2, 5]' is invalid for input of size 40
//
// devtype, at compile time (typenum multiplies the sizes):
//     error[E0277]: shape '[2, 5]' is invalid for input of size 40
//
// Fix: sizes that multiply to 40 (`(C<8>, C<5>)`), or `Dyn` for the one to infer (`(Dyn, C<5>)`).
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (C<4>, C<10>)> = Shaped::randn([4, 10], Cpu);
    let y = x.reshape::<(C<2>, C<5>)>();
    println!("{:?}", y.shape());
}
