// Lesson: `bmm` of two batches of matrices whose batch sizes differ.
//
// PyTorch 2.15, at run time:
//     RuntimeError: Expected size for first two dimensions of batch2 tensor to be: [3, 10] but got: [4, 10].
//
// devtype, at compile time:
//     error[E0277]: Expected size for first two dimensions of batch2 tensor to be: [3, 10] but got: [4, 10].
//
// Fix: `bmm` does not broadcast: give both batches 3 matrices (or use `matmul`).
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};

fn main() {
    let a: Shaped<Cpu, f32, (C<3>, C<5>, C<10>)> = Shaped::randn([3, 5, 10], Cpu);
    let b: Shaped<Cpu, f32, (C<4>, C<10>, C<2>)> = Shaped::randn([4, 10, 2], Cpu);
    let c = a.bmm(&b);
    println!("{:?}", c.shape());
}
