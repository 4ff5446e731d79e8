// Lesson: comparing CPU labels with GPU predictions names the GPU first.
//
// PyTorch, at run time (TensorIterator check: the first non-CPU device is printed first, whichever
// operand is on the CPU):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time: `eq` takes `R: OperandOn<D>` for the receiver's device `D = Cpu`, and
// the message orders the two devices as PyTorch (and `DynTensor`) do:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: move the labels with the batch (`let labels = labels.to(gpu);`), or bring the predictions
// back for the metric (`let preds = preds.to(Cpu);`).
use devtype::prelude::*;

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let preds = Tensor::<Cuda<0>, i64>::zeros([8], gpu);
    let labels = Tensor::<Cpu, i64>::zeros([8], Cpu);
    let correct = labels.eq(&preds);
    println!("{correct}");
    Ok(())
}
