// Lesson: token ids left on the CPU while the embedding table is on the GPU (an embedding
// lookup is `index_select` on the table's rows). A common one with models split over devices.
//
// PyTorch 2.15, at run time (the message names `index`, not your variable):
//     RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)
//
// devtype, at compile time: the ids are a `Tensor<Cpu, i64>`, not an argument on `Cuda<0>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: move the ids with the batch, `let ids = ids.to(gpu);`, before the lookup.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let table = Tensor::<Cpu>::randn([100, 16], Cpu).to(gpu); // the embedding weights
    let ids = Tensor::<Cpu, i64>::from_vec(vec![3, 14, 15, 92], [4], Cpu);
    let rows = table.index_select(0, &ids);
    println!("{}", rows.device());
    Ok(())
}
