// Lesson: suspect two, a tensor created inside `forward` without `device=x.device`.
//
// PyTorch, at run time: `noise = torch.randn(h.shape)` lands on the CPU while `h` is on the GPU:
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
// and only on the GPU machine: the same code passes every test on a laptop.
//
// devtype, at compile time, even in code generic over the device `D`: a tensor created on `Cpu`
// is not an operand on `D`, whatever `D` turns out to be:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `D` and `devtype::Cpu`
// (rustc then suggests a `where &Tensor<Cpu>: ...<D, Cpu>` clause; that bound can only hold
// for `D = Cpu`, so it is not the fix.)
//
// Fix: create it next to the input, `Tensor::randn(h.shape(), x.device())`.
use devtype::nn::Linear;
use devtype::prelude::*;

struct NoisyMlp<D: Device> {
    hidden: Linear<D>,
    head: Linear<D>,
}

impl<D: Device> NoisyMlp<D> {
    fn forward(&self, x: &Tensor<D>) -> Tensor<D> {
        let h = self.hidden.forward(x).relu();
        let noise = Tensor::<Cpu>::randn(h.shape(), Cpu); // should be `x.device()`
        let h = h + &noise;
        self.head.forward(&h)
    }
}

fn main() {
    let model = NoisyMlp {
        hidden: Linear::new(10, 16, Cpu),
        head: Linear::new(16, 2, Cpu),
    };
    let out = model.forward(&Tensor::randn([4, 10], Cpu));
    println!("{out}");
}
