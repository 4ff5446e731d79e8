// Lesson: the seed's quick check, part 2. The model is on the GPU; `x.to("cuda")` was called
// without assigning the result; then `model(x)` runs.
//
// PyTorch, at run time: `x` is still on the CPU, so the model's addmm sees a CPU input next to
// CUDA parameters (PyTorch 2.8 and later; 1.10 to 2.7 read
// `... found at least two devices, cuda:0 and cpu! (when checking argument for argument mat1 ...)`):
//     RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)
// Of the quiz's four answers the right one is "It fails with a device mismatch, because `x`
// itself is still on the CPU": `.to()` did not move `x` in place, nothing falls back to the CPU,
// and PyTorch never moves the model back.
//
// devtype, at compile time: `x` is still a `Tensor<Cpu>` and the model a `Linear<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
// (rustc reports this type error before it runs lints, so the dropped result of part 1 is not
// reported in the same build.)
//
// Fix: rebind, `let x = x.to(gpu);`, then `model.forward(&x)`.
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Linear::new(10, 2, Cpu).to(gpu);
    let x = Tensor::<Cpu>::randn([4, 10], Cpu);
    x.to(gpu); // the copy on the GPU is dropped; `x` is still on the CPU
    let out = model.forward(&x);
    println!("{}", out.device());
    Ok(())
}
