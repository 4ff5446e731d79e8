// Lesson: a matrix product of `f32` features with an `i64` matrix (values read as integers, a
// count table, ...). Nothing about devices here: the element types differ.
//
// PyTorch, at run time (CPU `mm`; on CUDA it reads `mat1 and mat2`):
//     RuntimeError: expected m1 and m2 to have the same dtype, but got: float != long int
//
// devtype, at compile time: `matmul` takes a tensor of the receiver's element type:
//     error[E0277]: expected m1 and m2 to have the same dtype, but got: `f32` != `i64`
//
// Fix: convert one side explicitly, `let counts = counts.to_dtype::<f32>();`.
use devtype::prelude::*;

fn main() {
    let features = Tensor::<Cpu>::randn([4, 3], Cpu);
    let counts = Tensor::<Cpu, i64>::from_vec(vec![1, 0, 2, 1, 0, 1], [3, 2], Cpu);
    let mixed = features.matmul(&counts);
    println!("{mixed}");
}
