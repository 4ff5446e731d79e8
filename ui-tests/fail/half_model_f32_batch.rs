// Lesson: a model built in `f16` (`model.half()`) fed the `f32` batches of the data pipeline.
//
// PyTorch, at run time, at the first forward:
//     RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half
//
// devtype, at compile time, at the model call:
//     error[E0277]: expected m1 and m2 to have the same dtype, but got: `f32` != `devtype::f16`
//
// Fix: convert each batch to the model's type (`x.to_dtype::<f16>()`), or, for training, keep
// the model in `f32` and run its forward pass under `autocast::<f16, _>(|| model.forward(&x))`.
use devtype::half::f16;
use devtype::nn::{Linear, ReLU, Sequential};
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Sequential::new((
        Linear::<Cpu, f16>::with_element(8, 16, Cpu),
        ReLU,
        Linear::<Cpu, f16>::with_element(16, 4, Cpu),
    ))
    .to(gpu);
    let x = Tensor::<Cpu>::randn([2, 8], Cpu).to(gpu);
    let y = model.forward(&x);
    println!("{y}");
    Ok(())
}
