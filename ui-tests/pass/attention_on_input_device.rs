// The right idioms for attention and embeddings: the token ids move with the batch, the
// positions and any mask are created on the input's device inside `forward` (or the causal mask
// is left to `is_causal: true`, which makes it there). Written once for any device and run on
// the CPU (and on GPU 0 too where one opens).
use devtype::nn::functional::scaled_dot_product_attention;
use devtype::nn::{Embedding, MultiheadAttention};
use devtype::prelude::*;

struct Tiny<D: Device> {
    tok: Embedding<D>,
    pos: Embedding<D>,
    attn: MultiheadAttention<D>,
}
devtype::module!(Tiny<D> { tok, pos, attn });

impl<D: Device> Tiny<D> {
    fn forward(&self, ids: &Tensor<D, i64>) -> Tensor<D> {
        let t = ids.shape()[1];
        let positions = Tensor::<D, i64>::arange(t, ids.device()); // on the ids' device
        let x = self.tok.forward(ids) + &self.pos.forward(&positions);
        let causal = self.attn.forward(&x, &x, &x, None, true); // mask made on x's device
        let keep = Tensor::<D, i64>::arange(t, x.device())
            .reshape(&[-1, 1])
            .ge(&Tensor::<D, i64>::arange(t, x.device())); // the same mask, by hand
        causal + &scaled_dot_product_attention(&x, &x, &x, &keep, false, 0.0)
    }
}

fn run<D: Device>(dev: D) -> Vec<usize> {
    let model = Tiny {
        tok: Embedding::new(10, 8, Cpu),
        pos: Embedding::new(6, 8, Cpu),
        attn: MultiheadAttention::new(8, 2, Cpu),
    };
    let model = model.to(dev); // moved once
    let ids = Tensor::<Cpu, i64>::from_vec(vec![1, 2, 3, 4, 5, 6], [2, 3], Cpu);
    let ids = ids.to(dev); // each batch's ids move with it: rebind
    model.forward(&ids).shape().to_vec()
}

fn main() {
    assert_eq!(run(Cpu), vec![2, 3, 8]);
    if let Ok(gpu) = Cuda::<0>::open() {
        assert_eq!(run(gpu), vec![2, 3, 8]);
    }
}
