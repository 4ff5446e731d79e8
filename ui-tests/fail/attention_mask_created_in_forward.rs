// Lesson: an attention mask created inside `forward` without the input's device. It passes
// every test on a laptop and fails on the GPU machine.
//
// PyTorch 2.15, at run time (`mask = torch.ones(t, t, dtype=torch.bool).tril()` lands on the
// CPU while the queries are on the GPU):
//     RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
//
// devtype, at compile time, even in code generic over the device `D`: a mask on `Cpu` is not a
// mask for queries on `D`:
//     error[E0277]: Expected all tensors to be on the same device, but found at least two devices, `D` and `devtype::Cpu`
//
// Fix: let the attention build the causal mask on the queries' device, `is_causal: true`, or
// create the mask on the input's: `Tensor::<D, bool>::ones([t, t], x.device())`.
use devtype::nn::functional::scaled_dot_product_attention;
use devtype::nn::Linear;
use devtype::prelude::*;

struct Head<D: Device> {
    qkv: Linear<D>,
}

impl<D: Device> Head<D> {
    fn forward(&self, x: &Tensor<D>) -> Tensor<D> {
        let t = x.shape()[1];
        let h = self.qkv.forward(x);
        let keep = Tensor::<Cpu, i64>::arange(t, Cpu)
            .reshape(&[-1, 1])
            .ge(&Tensor::<Cpu, i64>::arange(t, Cpu)); // should be on `x.device()`
        scaled_dot_product_attention(&h, &h, &h, &keep, false, 0.0)
    }
}

fn main() {
    let head = Head { qkv: Linear::new(8, 8, Cpu) };
    let out = head.forward(&Tensor::randn([2, 5, 8], Cpu));
    println!("{out}");
}
