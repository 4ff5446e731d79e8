// Lesson: in place across dtypes, `positions += noise` with integer positions and float noise.
//
// PyTorch, at run time (an in-place op keeps the receiver's dtype, and a float result cannot
// be cast to an integer one):
//     RuntimeError: result type Float can't be cast to the desired output type Long
//
// devtype, at compile time, the same sentence (not the general same-dtype one: converting the
// noise to `i64` would round it to zero):
//     error[E0277]: result type `f32` can't be cast to the desired output type `i64`
//
// Fix: convert the receiver and rebind it:
// `let mut positions = positions.to_dtype::<f32>(); positions += &noise;`.
use devtype::prelude::*;

fn main() {
    let mut positions = Tensor::<Cpu, i64>::zeros([3], Cpu);
    let noise = Tensor::<Cpu>::randn([3], Cpu);
    positions += &noise;
    println!("{positions}");
}
