// Lesson: adding a CPU tensor to a GPU tensor.
//
// PyTorch, at run time (TensorIterator check; the CUDA device is printed first):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `Tensor<Cuda<0>> + &Tensor<Cpu>` has no `Add` impl, because the right
// operand must be `OperandOn<Cuda<0>>`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: move the CPU tensor first and rebind it (`let bias = bias.to(gpu);`), or create it on the
// GPU in the first place (`Tensor::ones([4, 2], gpu)`).
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let out = Tensor::<Cuda<0>>::randn([4, 2], gpu);
    let bias = Tensor::<Cpu>::ones([4, 2], Cpu);
    let y = &out + &bias;
    println!("{y}");
    Ok(())
}
