// Lesson: suspect one, a batch you forgot to move. The model was moved once; every batch inside
// the loop must be moved too.
//
// PyTorch 2.15, at run time (`nn.Linear` calls addmm(bias, input, weight.t()); up to 2.7 it
// read `... found at least two devices, cuda:0 and cpu! (when checking argument for argument mat1 ...)`):
//     RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)
//
// devtype, at compile time: the batch is a `Tensor<Cpu>`, which is not `ModuleInput<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: `let x = x.to(gpu);` inside the loop, before `model.forward(&x)`.
use devtype::nn::Linear;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let model = Linear::new(10, 2, Cpu).to(gpu);
    let batches: Vec<Tensor<Cpu>> = (0..3).map(|_| Tensor::randn([4, 10], Cpu)).collect();
    for x in &batches {
        let out = model.forward(x);
        println!("{}", out.device());
    }
    Ok(())
}
