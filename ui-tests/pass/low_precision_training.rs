// Training in low precision done right. A `bf16` model steps with an optimizer of its own element
// type (inferred from `step`, or written `Sgd<D, bf16>`) and needs no `GradScaler`; every layer of
// a `Sequential` has one element type; batches are converted to the model's type; a gradient set
// by hand has its parameter's type; a model of your own is fed through `Forward` with the crate's
// element bound. The lessons `optimizer_f32_model_bf16`, `scaler_f16_model`,
// `scaler_unscale_bf16_model`, `sequential_f16_layer`, `half_model_f32_batch`,
// `loader_f64_batch` and `set_grad_f16` are the ways to get them wrong. Runs on the CPU, and on
// GPU 0 too where one opens.
use devtype::half::bf16;
use devtype::nn::{Linear, MSELoss, ReLU, Sequential};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;
use devtype::InputElementIs;

struct Mlp<D: Device> {
    fc1: Linear<D>,
    act: ReLU,
    fc2: Linear<D>,
}
devtype::module!(Mlp<D> { fc1, act, fc2 });

impl<D: Device> Forward<D> for Mlp<D> {
    fn forward<I: ModuleInput<D> + InputElementIs<f32>>(&self, x: I) -> Tensor<D> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }
}

fn step_bf16<D: Device>(
    model: &mut Sequential<(Linear<D, bf16>, ReLU, Linear<D, bf16>)>,
    opt: &mut Sgd<D, bf16>,
    dev: D,
) {
    let x = Tensor::<Cpu>::randn([4, 8], Cpu).to_dtype::<bf16>().to(dev);
    let y = Tensor::<Cpu>::zeros([4, 2], Cpu).to_dtype::<bf16>().to(dev);
    opt.zero_grad(model);
    let loss = MSELoss::new().forward(&model.forward(&x), &y);
    loss.backward();
    opt.step(model);
}

fn run<D: Device>(dev: D) {
    let mut model = Sequential::new((
        Linear::<Cpu, bf16>::with_element(8, 16, Cpu),
        ReLU,
        Linear::<Cpu, bf16>::with_element(16, 2, Cpu),
    ))
    .to(dev);
    let mut opt = Sgd::new(0.1);
    step_bf16(&mut model, &mut opt, dev);

    let own = Mlp {
        fc1: Linear::new(3, 4, Cpu),
        act: ReLU,
        fc2: Linear::new(4, 2, Cpu),
    }
    .to(dev);
    let rows = Tensor::<Cpu, f64>::from_vec(vec![0.5; 6], [2, 3], Cpu);
    let y = own.forward(&rows.to_dtype::<f32>().to(dev)); // converted to the model's type
    assert_eq!(y.shape(), &[2, 2]);

    let w = own.fc1.weight();
    w.try_set_grad(Some(Tensor::zeros_like(w))).unwrap(); // the parameter's type and device
}

fn main() {
    run(Cpu);
    if let Ok(gpu) = Cuda::<0>::open() {
        run(gpu);
    }
}
