// Lesson: `F.linear(x, w, b)` with a weight for another input width.
//
// PyTorch 2.15, at run time:
//     RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (64x784 and 512x10)
//
// devtype, at compile time (the weight is `[out, in]`, so `in` is 512):
//     error[E0277]: addmm: mat1 and mat2 shapes cannot be multiplied (64x784 and 512x10)
//
// Fix: a weight `[10, 784]` for 784 input features (or `StaticLinear::<D, 784, 10>`).
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (C<64>, C<784>)> = Shaped::randn([64, 784], Cpu);
    let w: Shaped<Cpu, f32, (C<10>, C<512>)> = Shaped::randn([10, 512], Cpu);
    let b: Shaped<Cpu, f32, (C<10>,)> = Shaped::randn([10], Cpu);
    let y = x.linear(&w, Some(&b));
    println!("{:?}", y.shape());
}
