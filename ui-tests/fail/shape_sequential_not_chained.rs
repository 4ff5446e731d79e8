// Lesson: a model whose layers do not fit together.
//
// PyTorch 2.15, at run time, at the first forward (for a batch of 64):
//     RuntimeError: addmm: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)
//
// devtype, at compile time, where the layer is appended (no input needed):
//     error[E0277]: addmm: mat1 and mat2 shapes cannot be multiplied (?x512 and 256x10)
//
// Fix: each `StaticLinear<IN, OUT>` takes the previous layer's `OUT`: `StaticLinear::<Cpu, 512, 10>`.
use devtype::nn::ReLU;
use devtype::shaped::nn::{StaticLinear, Seq};
use devtype::Cpu;

fn main() {
    let model = Seq::new(StaticLinear::<Cpu, 784, 512>::new(Cpu))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 256, 10>::new(Cpu));
    let _ = model;
}
