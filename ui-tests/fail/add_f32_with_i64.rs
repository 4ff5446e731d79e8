// Lesson: element-wise arithmetic of `f32` with `i64` (labels used as numbers). PyTorch promotes
// `float + long` to float silently; where it does check (TensorIterator's same-dtype check, as in
// `torch.where`), it says:
//     RuntimeError: Found dtype Long but expected Float
//
// devtype, at compile time: element-wise operands have the receiver's element type, and no
// promotion happens behind your back:
//     error[E0277]: Found dtype `i64` but expected `f32`
//
// Fix: convert explicitly, `let labels = labels.to_dtype::<f32>();`.
use devtype::prelude::*;

fn main() {
    let scores = Tensor::<Cpu>::randn([4], Cpu);
    let labels = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 1, 0], [4], Cpu);
    let shifted = &scores + &labels;
    println!("{shifted}");
}
