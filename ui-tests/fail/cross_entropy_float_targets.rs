// Lesson: class labels stored as floats (read from a CSV, or built with `torch.zeros(n)`).
//
// PyTorch, at run time, at `F.cross_entropy(logits, y)` with float targets of shape `[batch]`:
//     RuntimeError: expected target dtype to be Long or Byte, but got Float
//
// devtype, at compile time: `CrossEntropyLoss` takes class indices (`i64`):
//     error[E0277]: expected target dtype to be Long or Byte, but got `f32`
//
// Fix: `let y = y.to_dtype::<i64>();`, or build the labels as `i64` in the first place.
use devtype::nn::CrossEntropyLoss;
use devtype::prelude::*;

fn main() {
    let logits = Tensor::<Cpu>::randn([4, 3], Cpu);
    let labels = Tensor::<Cpu>::zeros([4], Cpu);
    let loss = CrossEntropyLoss::new().forward(&logits, &labels);
    println!("{loss}");
}
