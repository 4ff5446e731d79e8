// A model generic over its device, whose `forward` creates tensors next to its input with
// `x.device()` (PyTorch's `torch.randn(h.shape, device=x.device)`). It runs on the CPU here and
// on GPU 0 where one opens; the same code, with no device named inside `forward`. (`forward`
// returns a `Tensor<D>` that autograd tracks, since the layer's parameters are tracked.)
use devtype::nn::{Linear, ReLU, Sequential};
use devtype::prelude::*;

struct NoisyMlp<D: Device> {
    hidden: Linear<D>,
    head: Linear<D>,
}

impl<D: Device> NoisyMlp<D> {
    fn new(dev: D) -> Self {
        NoisyMlp {
            hidden: Linear::new(10, 16, dev),
            head: Linear::new(16, 2, dev),
        }
    }

    fn forward(&self, x: &Tensor<D>) -> Tensor<D> {
        let h = self.hidden.forward(x).relu();
        let noise = Tensor::<D>::randn(h.shape(), x.device()) * 0.01; // on the input's device
        let mask = Tensor::ones_like(&h); // same device as `h`, by type
        let h = (h + noise) * mask;
        self.head.forward(&h)
    }
}

// Generic over the model too: any `Forward<D>` (a `Linear`, a `Sequential`, a model of your
// own) returns a `Tensor<D>` for an input on `D`, with no bound beyond `Forward<D>`.
fn predict<D: Device, M: Forward<D>>(model: &M, x: &Tensor<D>) -> Tensor<D> {
    model.forward(x)
}

fn run<D: Device>(dev: D) {
    let model = NoisyMlp::new(dev);
    let x = Tensor::randn([4, 10], dev);
    let out = model.forward(&x);
    assert_eq!(out.shape(), &[4, 2]);
    assert_eq!(out.device(), dev);

    let layer: &Linear<D> = &model.head;
    let seq = Sequential::new((Linear::new(10, 16, dev), ReLU, Linear::new(16, 2, dev)));
    let h: Tensor<D> = Forward::forward(&model.hidden, &x);
    let out: Tensor<D> = predict(layer, &h);
    assert_eq!(out.shape(), &[4, 2]);
    let out: Tensor<D> = seq.forward(&x);
    assert_eq!(predict(&seq, &x).shape(), out.shape());
}

fn main() {
    run(Cpu);
    if let Ok(gpu) = Cuda::<0>::open() {
        run(gpu);
    }
}
