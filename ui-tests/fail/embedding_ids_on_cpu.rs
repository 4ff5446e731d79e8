// Lesson: token ids left on the CPU and fed to an `nn.Embedding` on the GPU. The model moved
// once; the ids of every batch must move too.
//
// PyTorch 2.15, at run time (`F.embedding` looks the rows up with `index_select`, so the
// message names `index`, not your ids):
//     RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)
//
// devtype, at compile time: the ids are a `Tensor<Cpu, i64>`, not an input of a module on `Cuda<0>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: move the ids with the batch, `let ids = ids.to(gpu);`, before `emb.forward(&ids)`.
use devtype::nn::Embedding;
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let emb = Embedding::new(100, 16, Cpu).to(gpu);
    let ids = Tensor::<Cpu, i64>::from_vec(vec![3, 14, 15, 92], [2, 2], Cpu);
    let x = emb.forward(&ids);
    println!("{}", x.device());
    Ok(())
}
