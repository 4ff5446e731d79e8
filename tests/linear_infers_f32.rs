//! `Linear::new` infers `f32` (PyTorch's default dtype), as `HashMap::new` fixes its hasher: a
//! model that is only built or loaded needs no annotation. Other element types go through
//! `with_element`.

use devtype::nn::Linear;
use devtype::prelude::*;

#[test]
fn linear_new_needs_no_element_annotation() {
    let model = Linear::new(3, 2, Cpu); // never run: `E` is not inferred from a forward call
    assert_eq!(model.in_features(), 3);
    assert_eq!(Linear::cpu(4, 1).out_features(), 1);
    let wide = Linear::<Cpu, f64>::with_element(3, 2, Cpu);
    let y = wide.forward(&Tensor::<Cpu, f64>::ones([1, 3], Cpu));
    assert_eq!(y.shape(), &[1, 2]);
}
