// Lesson: integer features fed to a float layer (token counts, pixel values read as `i64`).
//
// PyTorch, at run time (`F.linear`, on the CPU):
//     RuntimeError: expected m1 and m2 to have the same dtype, but got: long int != float
//
// devtype, at compile time: a module takes inputs of its parameters' element type; the input
// (`m1`) is named first, as PyTorch does:
//     error[E0277]: expected m1 and m2 to have the same dtype, but got: `i64` != `f32`
//
// Fix: convert the input, `let x = x.to_dtype::<f32>();`.
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() {
    let model = Linear::new(3, 2, Cpu);
    let counts = Tensor::<Cpu, i64>::from_vec(vec![1, 0, 2], [1, 3], Cpu);
    let out = model.forward(&counts);
    println!("{out}");
}
