// Lesson: an element-wise op on sizes that do not broadcast.
//
// PyTorch 2.15, at run time:
//     RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1
//
// devtype, at compile time, where both sizes are in the types (`Shaped<D, E, (C<2>, C<3>)>`):
//     error[E0277]: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1
//
// Fix: give both the same size there, or make one of them 1 (`unsqueeze`) to broadcast it.
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let a: Shaped<Cpu, f32, (C<2>, C<3>)> = Shaped::randn([2, 3], Cpu);
    let b: Shaped<Cpu, f32, (C<2>, C<4>)> = Shaped::randn([2, 4], Cpu);
    let c = &a + &b;
    println!("{:?}", c.shape());
}
