// Inference keeps working: in `&a + Tensor::zeros(..)` the device and element type of the new
// tensor are inferred from `a`, so nothing has to be spelled out, and generic code over
// `D: Device` compiles too.
use devtype::prelude::*;

fn shift<D: Device>(a: &Tensor<D>) -> Tensor<D> {
    let b = a + Tensor::zeros(a.shape(), a.device()); // `Tensor<D, f32>`, inferred
    let c = &b * &Tensor::ones([1], a.device()); // broadcasting, inferred again
    c + 1.0
}

fn main() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
    let z = &a + Tensor::zeros([2, 2], Cpu);
    assert_eq!(z.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(shift(&a).to_vec(), vec![2.0, 3.0, 4.0, 5.0]);
    if let Ok(gpu) = Cuda::<0>::open() {
        let a = a.to(gpu);
        assert_eq!(shift(&a).to_vec(), vec![2.0, 3.0, 4.0, 5.0]);
    }
}
