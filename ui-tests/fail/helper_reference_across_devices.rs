// Lesson: a helper that borrows its tensors, and one of them is on the wrong device.
//
// PyTorch 2.15, at run time, when the helper is first called:
//     RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_mm)
//
// devtype, at compile time, in the helper: its signature says where each tensor is, and the
// product of a `Cuda<0>` tensor with a `Cpu` one is the device sentence (one error, whether
// the helper writes `&w` or `w`: a reference to a reference is an operand like the reference):
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `devtype::Cuda<0>` and `devtype::Cpu`
//
// Fix: take the weight on the input's device, `w: &Tensor<Cuda<0>>`, and move it once where
// it is made: `let w = w.to(gpu);`.
use devtype::prelude::*;

fn project(x: &Tensor<Cuda<0>>, w: &Tensor<Cpu>) -> Tensor<Cuda<0>> {
    x.matmul(&w)
}

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let x = Tensor::<Cuda<0>>::randn([4, 10], gpu);
    let w = Tensor::<Cpu>::randn([10, 2], Cpu);
    println!("{}", project(&x, &w));
    Ok(())
}
