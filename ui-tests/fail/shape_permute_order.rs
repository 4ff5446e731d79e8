// Lesson: `permute` with a dimension given twice.
//
// PyTorch 2.15, at run time:
//     RuntimeError: permute(): duplicate dims are not allowed.
//
// devtype, at compile time (the order is a type, `(C<i>, ...)`):
//     error[E0277]: permute(): `(C<0>, C<0>, C<1>)` is not an order of the dimensions of a tensor of shape `(Dyn, C<3>, C<32>)`
//
// Fix: each dimension once: `permute::<(C<0>, C<2>, C<1>)>()` for `[batch, 32, 3]`.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (Dyn, C<3>, C<32>)> = Shaped::randn([8, 3, 32], Cpu);
    let y = x.permute::<(C<0>, C<0>, C<1>)>();
    println!("{:?}", y.shape());
}
