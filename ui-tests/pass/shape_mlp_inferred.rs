// Shapes in the type, none written after the inputs: every result shape is inferred, a
// `Dyn` batch runs next to static feature sizes, and `flatten` computes 28 * 28 = 784 in the
// type, which the first layer's `StaticLinear<_, 784, _>` then checks.
use devtype::nn::ReLU;
use devtype::prelude::*;
use devtype::shaped::nn::{StaticLinear, Seq};
use devtype::shaped::{Axis, Dyn, Shaped, C};

fn main() {
    let model = Seq::new(StaticLinear::<Cpu, 784, 64>::new(Cpu))
        .then(ReLU)
        .then(StaticLinear::<Cpu, 64, 10>::new(Cpu));
    let images: Shaped<Cpu, f32, (Dyn, C<28>, C<28>)> = Shaped::randn([8, 28, 28], Cpu);
    let logits = model.forward(&images.flatten()); // (Dyn, C<10>)
    let extra = logits.cat(Axis::<1>, &logits); // (Dyn, C<20>)
    let p = extra.softmax::<1>().sum::<1>(); // (Dyn,)
    let targets: Shaped<Cpu, i64, (Dyn,)> = Tensor::zeros([8], Cpu).into_shaped();
    let loss = logits.cross_entropy(&targets);
    let check: Shaped<Cpu, f32, (Dyn, C<20>)> = extra;
    assert_eq!(check.shape(), &[8, 20]);
    assert_eq!(p.shape(), &[8]);
    assert!(loss.item().is_finite());
    let t: Tensor<Cpu> = logits.into_tensor(); // back to the dynamic API
    assert_eq!(t.shape(), &[8, 10]);
}
