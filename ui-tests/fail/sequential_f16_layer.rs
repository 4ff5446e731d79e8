// Lesson: a `Sequential` with one `f16` layer among `f32` layers (one layer built with
// `with_element` and its type inferred from a `f16` checkpoint helper, or `.half()` on one
// sub-module in PyTorch).
//
// PyTorch, at run time, at the first forward, in the `f16` layer's `addmm`:
//     RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half
//
// devtype, at compile time, at `Sequential::new`, naming the layer's position:
//     error[E0277]: mat1 and mat2 must have the same dtype, but got `f32` and `devtype::f16`
//
// Fix: build every layer with one element type, or keep the model in `f32` and run the
// products in `f16` under `autocast::<f16, _>(|| model.forward(&x))`.
use devtype::half::f16;
use devtype::nn::{Linear, ReLU, Sequential};
use devtype::prelude::*;

fn main() {
    let head = Linear::<Cpu, f16>::with_element(16, 4, Cpu);
    let model = Sequential::new((Linear::new(8, 16, Cpu), ReLU, head));
    let y = model.forward(&Tensor::<Cpu>::randn([2, 8], Cpu));
    println!("{y}");
}
