// `Tensor::cat` and `Tensor::stack` on one device: a tuple of references `(&a, &b)` (every
// member checked against the first one's device at compile time), an array `[&a, &b]`, or a
// borrowed `Vec`. Generic over `D`, run on the CPU and on GPU 0 where one opens.
use devtype::prelude::*;

fn join<D: Device>(dev: D) {
    let a = Tensor::<D>::ones([2, 3], dev);
    let b = Tensor::zeros([2, 3], dev);
    assert_eq!(Tensor::cat((&a, &b), 0).shape(), &[4, 3]);
    assert_eq!(Tensor::cat([&a, &b], 1).shape(), &[2, 6]);
    let v = vec![a.clone(), b.clone(), a.clone()];
    assert_eq!(Tensor::cat(&v, 0).shape(), &[6, 3]);
    assert_eq!(Tensor::stack((&a, &b), 0).shape(), &[2, 2, 3]);
}

fn main() {
    join(Cpu);
    if let Ok(gpu) = Cuda::<0>::open() {
        join(gpu);
    }
}
