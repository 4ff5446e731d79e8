// Lesson: a matrix product whose inner sizes differ, with the batch size known only at run time.
//
// PyTorch 2.15, at run time (for a batch of 64):
//     RuntimeError: mm: mat1 and mat2 shapes cannot be multiplied (64x784 and 512x10)
//
// devtype, at compile time: the inner sizes are static, the batch is `Dyn` (written `?`):
//     error[E0277]: mm: mat1 and mat2 shapes cannot be multiplied (?x784 and 512x10)
//
// Fix: `w` needs as many rows as `x` has columns: `Shaped<Cpu, f32, (C<784>, C<10>)>`.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (Dyn, C<784>)> = Tensor::randn([64, 784], Cpu).into_shaped();
    let w: Shaped<Cpu, f32, (C<512>, C<10>)> = Shaped::randn([512, 10], Cpu);
    let y = x.matmul(&w);
    println!("{:?}", y.shape());
}
