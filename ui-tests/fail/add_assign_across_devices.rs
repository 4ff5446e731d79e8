// Lesson: `running += &stat` with the running statistic on the CPU and the batch's on the GPU.
//
// PyTorch, at run time (in place, `running.add_(stat)`; the output is on the CPU, and the CUDA
// device is printed first):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `+=` on `Tensor<D>` takes `R: OperandOn<D>`, as `+` does:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: keep the accumulator on the device of what it sums (`Tensor::zeros([4], gpu)`), or bring
// each statistic back explicitly: `running += &stat.to(Cpu);`.
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let mut running = Tensor::<Cpu>::zeros([4], Cpu);
    for _ in 0..3 {
        let stat = Tensor::<Cuda<0>>::randn([4], gpu);
        running += &stat;
    }
    println!("{running}");
    Ok(())
}
