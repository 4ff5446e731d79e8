//! The layers of `nn` beyond `Linear` (norms, embeddings, activations, attention): values and
//! gradients against PyTorch's (recorded in `nn_layers/reference.rs` by
//! `scripts/layers_reference.py`), against f64 math on fresh random inputs, and on the GPU
//! against the CPU.

mod common;

use common::close;
#[path = "nn_layers/reference.rs"]
mod reference;

use common::Rng;
use devtype::nn::functional::{
    dropout, embedding, gelu, layer_norm, leaky_relu, rms_norm, scaled_dot_product_attention, silu,
    try_layer_norm, try_scaled_dot_product_attention,
};
use devtype::nn::{
    Approximate, Embedding, Flatten, LayerNorm, Linear, MultiheadAttention, RMSNorm, SiLU, Sigmoid,
    Softmax, Tanh, GELU,
};
use devtype::prelude::*;
use reference::*;

type T64 = Tensor<Cpu, f64>;

/// `scale · sin(a i + b)` for `i < n`: the script's `seq`.
fn seq(n: usize, a: f64, b: f64, scale: f64) -> Vec<f64> {
    (0..n).map(|i| scale * (a * i as f64 + b).sin()).collect()
}

/// The script's inputs: `1.5 sin(0.7 i + 0.3)`, shaped.
fn input(shape: &[usize]) -> T64 {
    let n = shape.iter().product();
    Tensor::parameter(Tensor::from_vec(seq(n, 0.7, 0.3, 1.5), shape, Cpu))
}

/// `sum(out * g)`, `g[i] = cos(0.3 i + 0.2)`: the script's loss.
fn loss(out: &T64) -> T64 {
    let g: Vec<f64> = (0..out.numel())
        .map(|i| (0.3 * i as f64 + 0.2).cos())
        .collect();
    out.mul(Tensor::from_vec(g, out.shape(), Cpu)).sum_all()
}

#[track_caller]
fn unary_case(name: &str, f: impl Fn(&T64) -> T64, out: &[f64], grad: &[f64], tol: f64) {
    let x = input(&[2, 3, 4]);
    let y = f(&x);
    close(&format!("{name} out"), &y.to_vec(), out, tol);
    loss(&y).backward();
    close(
        &format!("{name} grad"),
        &x.grad().unwrap().to_vec(),
        grad,
        tol,
    );
}

#[test]
fn activations_match_pytorch() {
    // The exact GELU is PyTorch's formula with `libm`'s erf, which is within an ulp, as the C
    // library's that PyTorch calls.
    unary_case(
        "gelu",
        |x| gelu(x, Approximate::None),
        &GELU_OUT,
        &GELU_GRAD,
        1e-12,
    );
    unary_case(
        "gelu tanh",
        |x| gelu(x, Approximate::Tanh),
        &GELU_TANH_OUT,
        &GELU_TANH_GRAD,
        1e-12,
    );
    unary_case("silu", silu, &SILU_OUT, &SILU_GRAD, 1e-12);
    unary_case(
        "leaky",
        |x| leaky_relu(x, 0.1),
        &LEAKY_OUT,
        &LEAKY_GRAD,
        1e-12,
    );
    unary_case(
        "softmax module",
        |x| Softmax::new(1).forward(x),
        &SOFTMAX_OUT,
        &SOFTMAX_GRAD,
        1e-12,
    );
    unary_case(
        "GELU module",
        |x| GELU::default().forward(x),
        &GELU_OUT,
        &GELU_GRAD,
        1e-12,
    );
    unary_case(
        "SiLU module",
        |x| SiLU.forward(x),
        &SILU_OUT,
        &SILU_GRAD,
        1e-12,
    );
}

#[test]
fn norms_match_pytorch() {
    let x = input(&[2, 3, 4]);
    let w = Tensor::parameter(Tensor::from_vec(
        seq(4, 0.5, 0.1, 1.0).iter().map(|v| v + 1.0).collect(),
        [4],
        Cpu,
    ));
    let b = Tensor::parameter(Tensor::from_vec(seq(4, 0.9, 0.4, 0.5), [4], Cpu));
    let y = layer_norm(&x, &[4], Some(&w), Some(&b), 1e-5);
    close("layer_norm", &y.to_vec(), &LAYER_NORM_OUT, 1e-12);
    loss(&y).backward();
    close(
        "layer_norm dx",
        &x.grad().unwrap().to_vec(),
        &LAYER_NORM_GRAD,
        1e-10,
    );
    close(
        "layer_norm dw",
        &w.grad().unwrap().to_vec(),
        &LAYER_NORM_GRAD1,
        1e-10,
    );
    close(
        "layer_norm db",
        &b.grad().unwrap().to_vec(),
        &LAYER_NORM_GRAD2,
        1e-10,
    );

    // Over two dims, weight only.
    let x = input(&[2, 3, 4]);
    let w2 = Tensor::parameter(Tensor::from_vec(
        seq(12, 0.5, 0.1, 1.0).iter().map(|v| v + 1.0).collect(),
        [3, 4],
        Cpu,
    ));
    let y = layer_norm(&x, &[3, 4], Some(&w2), None, 1e-5);
    close("layer_norm2", &y.to_vec(), &LAYER_NORM2_OUT, 1e-12);
    loss(&y).backward();
    close(
        "layer_norm2 dx",
        &x.grad().unwrap().to_vec(),
        &LAYER_NORM2_GRAD,
        1e-10,
    );
    close(
        "layer_norm2 dw",
        &w2.grad().unwrap().to_vec(),
        &LAYER_NORM2_GRAD1,
        1e-10,
    );

    // RMSNorm, eps None (machine epsilon of f64).
    let x = input(&[2, 3, 4]);
    let w3 = Tensor::parameter(Tensor::from_vec(
        seq(4, 0.5, 0.1, 1.0).iter().map(|v| v + 1.0).collect(),
        [4],
        Cpu,
    ));
    let y = rms_norm(&x, &[4], Some(&w3), None);
    close("rms_norm", &y.to_vec(), &RMS_NORM_OUT, 1e-12);
    loss(&y).backward();
    close(
        "rms_norm dx",
        &x.grad().unwrap().to_vec(),
        &RMS_NORM_GRAD,
        1e-10,
    );
    close(
        "rms_norm dw",
        &w3.grad().unwrap().to_vec(),
        &RMS_NORM_GRAD1,
        1e-10,
    );
}

#[test]
fn norm_errors_are_pytorchs() {
    let x = Tensor::<Cpu>::zeros([2, 3], Cpu);
    let e = try_layer_norm(&x, &[4], None, None, 1e-5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"
    );
    let e = devtype::nn::functional::try_rms_norm(&x, &[2, 4], None, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Given normalized_shape=[2, 4], expected input with shape [*2, 4], but got input of size[2, 3]"
    );
    let w = Tensor::<Cpu>::ones([4], Cpu);
    let e = try_layer_norm(&x, &[3], Some(&w), None, 1e-5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [3]"
    );
    let e = devtype::nn::functional::try_dropout(&x, 1.5, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dropout probability has to be between 0 and 1, but got 1.5"
    );
}

#[test]
fn embedding_matches_pytorch_and_padding_row_gets_no_gradient() {
    let table = input(&[5, 4]);
    let ids = Tensor::<Cpu, i64>::from_vec(vec![0, 2, 4, 2, 1, 0], [2, 3], Cpu);
    let y = embedding(&ids, &table, Some(2));
    assert_eq!(y.shape(), &[2, 3, 4]);
    close("embedding", &y.to_vec(), &EMBEDDING_OUT, 0.0);
    loss(&y).backward();
    let grad = table.grad().unwrap().to_vec();
    close("embedding grad", &grad, &EMBEDDING_GRAD, 1e-12);
    assert!(
        grad[8..12].iter().all(|&g| g == 0.0),
        "padding row 2: {grad:?}"
    );

    // The module: the padding row starts at zero; -1 counts from the end.
    let emb = Embedding::<Cpu>::try_with_options(6, 3, Some(-1), Cpu).unwrap();
    assert_eq!(emb.padding_idx(), Some(5));
    assert_eq!(emb.weight().to_vec()[15..], [0.0; 3]);
    assert!(Embedding::<Cpu>::try_with_options(6, 3, Some(6), Cpu)
        .unwrap_err()
        .to_string()
        .contains("Padding_idx must be within num_embeddings"));
    let out_of_range = Tensor::<Cpu, i64>::from_vec(vec![6], [1], Cpu);
    assert_eq!(
        emb.try_forward(&out_of_range).unwrap_err().to_string(),
        "index out of range in self"
    );
}

fn qkv() -> (T64, T64, T64) {
    let n = 2 * 2 * 3 * 4;
    let t = |a, b| Tensor::parameter(Tensor::from_vec(seq(n, a, b, 1.5), [2, 2, 3, 4], Cpu));
    (t(0.7, 0.3), t(0.4, 1.1), t(0.9, 2.0))
}

#[track_caller]
fn sdpa_case(name: &str, f: impl Fn(&T64, &T64, &T64) -> T64, want: [&[f64]; 4]) {
    let (q, k, v) = qkv();
    let out = f(&q, &k, &v);
    close(&format!("{name} out"), &out.to_vec(), want[0], 1e-12);
    loss(&out).backward();
    close(
        &format!("{name} dq"),
        &q.grad().unwrap().to_vec(),
        want[1],
        1e-10,
    );
    close(
        &format!("{name} dk"),
        &k.grad().unwrap().to_vec(),
        want[2],
        1e-10,
    );
    close(
        &format!("{name} dv"),
        &v.grad().unwrap().to_vec(),
        want[3],
        1e-10,
    );
}

#[test]
fn attention_matches_pytorch() {
    sdpa_case(
        "causal",
        |q, k, v| scaled_dot_product_attention(q, k, v, None, true, 0.0),
        [
            &SDPA_CAUSAL_OUT,
            &SDPA_CAUSAL_GQ,
            &SDPA_CAUSAL_GK,
            &SDPA_CAUSAL_GV,
        ],
    );
    let keep = Tensor::<Cpu, bool>::from_vec(
        vec![true, false, true, true, true, false, false, true, true],
        [3, 3],
        Cpu,
    );
    sdpa_case(
        "bool mask",
        |q, k, v| scaled_dot_product_attention(q, k, v, &keep, false, 0.0),
        [&SDPA_BOOL_OUT, &SDPA_BOOL_GQ, &SDPA_BOOL_GK, &SDPA_BOOL_GV],
    );
    let add = Tensor::from_vec(seq(9, 0.6, 0.5, 0.8), [3, 3], Cpu);
    sdpa_case(
        "float mask",
        |q, k, v| scaled_dot_product_attention(q, k, v, &add, false, 0.0),
        [
            &SDPA_FLOAT_OUT,
            &SDPA_FLOAT_GQ,
            &SDPA_FLOAT_GK,
            &SDPA_FLOAT_GV,
        ],
    );
    let (q, k, v) = qkv();
    assert_eq!(
        try_scaled_dot_product_attention(&q, &k, &v, &keep, true, 0.0)
            .unwrap_err()
            .to_string(),
        "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
    );
}

/// The script's `MultiheadAttention` (E = 4, two heads), its parameters from the formula.
fn reference_mha() -> MultiheadAttention<Cpu, f64> {
    let t = |n: usize, a, b, s, shape: &[usize]| Tensor::from_vec(seq(n, a, b, s), shape, Cpu);
    MultiheadAttention::try_from_parameters(
        t(48, 0.35, 0.2, 0.6, &[12, 4]),
        t(12, 0.8, 0.9, 0.1, &[12]),
        Linear::from_parameters(
            t(16, 0.45, 1.3, 0.5, &[4, 4]),
            Some(t(4, 1.1, 0.6, 0.2, &[4])),
        ),
        2,
    )
    .unwrap()
}

#[test]
fn multihead_attention_matches_pytorch() {
    let mha = reference_mha();
    let x = input(&[2, 3, 4]);
    // PyTorch's MHA sense: `true` hides (here the keys after each query).
    let hidden = Tensor::<Cpu, bool>::from_vec(
        vec![false, true, true, false, false, true, false, false, false],
        [3, 3],
        Cpu,
    );
    let (out, weights) = mha
        .try_forward_with_weights(&x, &x, &x, &hidden, false)
        .unwrap();
    close("mha out", &out.to_vec(), &MHA_OUT, 1e-12);
    close("mha weights", &weights.to_vec(), &MHA_WEIGHTS, 1e-12);
    loss(&out).backward();
    close("mha dx", &x.grad().unwrap().to_vec(), &MHA_GRAD, 1e-10);
    close(
        "mha d in_proj_weight",
        &mha.in_proj_weight().grad().unwrap().to_vec(),
        &MHA_GW,
        1e-10,
    );
    close(
        "mha d out_proj.weight",
        &mha.out_proj().weight().grad().unwrap().to_vec(),
        &MHA_GOUT,
        1e-10,
    );
    // `is_causal` builds the same mask.
    let x2 = input(&[2, 3, 4]);
    let causal = mha.forward(&x2, &x2, &x2, None, true);
    close("mha causal", &causal.to_vec(), &MHA_OUT, 1e-12);
    let names: Vec<String> = mha.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "in_proj_weight",
            "in_proj_bias",
            "out_proj.weight",
            "out_proj.bias"
        ]
    );
}

/// `erf` in f64 by its Taylor series (|x| <= 4 here: 100 terms are exact to rounding).
fn erf(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

#[test]
fn random_inputs_against_f64_math() {
    let mut rng = Rng::new("random_inputs_against_f64_math");
    let (rows, d) = (1 + rng.below(5), 2 + rng.below(7));
    let xs = rng.values(rows * d, -3.0, 3.0);
    let ws = rng.values(d, 0.5, 1.5);
    let bs = rng.values(d, -1.0, 1.0);
    let x = Tensor::<Cpu, f64>::from_vec(xs.clone(), [rows, d], Cpu);
    let w = Tensor::from_vec(ws.clone(), [d], Cpu);
    let b = Tensor::from_vec(bs.clone(), [d], Cpu);

    // LayerNorm and RMSNorm, row by row.
    let ln = layer_norm(&x, &[d], Some(&w), Some(&b), 1e-5).to_vec();
    let rms = rms_norm(&x, &[d], Some(&w), Some(1e-6)).to_vec();
    for r in 0..rows {
        let row = &xs[r * d..(r + 1) * d];
        let mean = row.iter().sum::<f64>() / d as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
        let ms = row.iter().map(|v| v * v).sum::<f64>() / d as f64;
        for j in 0..d {
            let want = (row[j] - mean) / (var + 1e-5).sqrt() * ws[j] + bs[j];
            close("layer_norm", &[ln[r * d + j]], &[want], 1e-12);
            let want = row[j] / (ms + 1e-6).sqrt() * ws[j];
            close("rms_norm", &[rms[r * d + j]], &[want], 1e-12);
        }
    }

    // GELU (exact, through erf), SiLU, tanh-GELU, leaky ReLU, element by element.
    let ge = gelu(&x, Approximate::None).to_vec();
    let gt = gelu(&x, Approximate::Tanh).to_vec();
    let si = silu(&x).to_vec();
    let lr = leaky_relu(&x, 0.2).to_vec();
    let th = Tanh.forward(&x).to_vec();
    let sg = Sigmoid.forward(&x).to_vec();
    for (i, &v) in xs.iter().enumerate() {
        close(
            "gelu",
            &[ge[i]],
            &[0.5 * v * (1.0 + erf(v / 2f64.sqrt()))],
            1e-14,
        );
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let want = 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh());
        close("gelu tanh", &[gt[i]], &[want], 1e-14);
        close("silu", &[si[i]], &[v / (1.0 + (-v).exp())], 1e-14);
        close("leaky", &[lr[i]], &[if v > 0.0 { v } else { 0.2 * v }], 0.0);
        close("tanh", &[th[i]], &[v.tanh()], 1e-14);
        close("sigmoid", &[sg[i]], &[1.0 / (1.0 + (-v).exp())], 1e-14);
    }

    // Causal attention, one head: out[i] = sum_{j <= i} softmax_j(q_i . k_j / sqrt(e)) v_j.
    let (l, e) = (1 + rng.below(6), 1 + rng.below(5));
    let (qs, ks, vs) = (
        rng.values(l * e, -2.0, 2.0),
        rng.values(l * e, -2.0, 2.0),
        rng.values(l * e, -2.0, 2.0),
    );
    let t = |v: &Vec<f64>| Tensor::<Cpu, f64>::from_vec(v.clone(), [1, l, e], Cpu);
    let out = scaled_dot_product_attention(&t(&qs), &t(&ks), &t(&vs), None, true, 0.0).to_vec();
    for i in 0..l {
        let scores: Vec<f64> = (0..=i)
            .map(|j| (0..e).map(|c| qs[i * e + c] * ks[j * e + c]).sum::<f64>() / (e as f64).sqrt())
            .collect();
        let m = scores.iter().cloned().fold(f64::MIN, f64::max);
        let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
        for c in 0..e {
            let want: f64 = (0..=i)
                .map(|j| (scores[j] - m).exp() / z * vs[j * e + c])
                .sum();
            close("causal attention", &[out[i * e + c]], &[want], 1e-12);
        }
    }

    // The embedding's gradient is the upstream gradient summed per id, none for padding.
    let (n, dim) = (2 + rng.below(5), 1 + rng.below(4));
    let ids: Vec<i64> = (0..7).map(|_| rng.below(n) as i64).collect();
    let pad = rng.below(n) as i64;
    let table = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(
        rng.values(n * dim, -1.0, 1.0),
        [n, dim],
        Cpu,
    ));
    let up = rng.values(7 * dim, -1.0, 1.0);
    let y = embedding(&Tensor::from_vec(ids.clone(), [7], Cpu), &table, Some(pad));
    y.mul(Tensor::from_vec(up.clone(), [7, dim], Cpu))
        .sum_all()
        .backward();
    let mut want = vec![0.0; n * dim];
    for (p, &id) in ids.iter().enumerate() {
        if id != pad {
            for c in 0..dim {
                want[id as usize * dim + c] += up[p * dim + c];
            }
        }
    }
    close(
        "embedding grad",
        &table.grad().unwrap().to_vec(),
        &want,
        1e-14,
    );
}

#[test]
fn gradcheck_composed_layers() {
    let mut rng = Rng::new("gradcheck_composed_layers");
    let x = Tensor::<Cpu, f64>::from_vec(rng.values(12, -2.0, 2.0), [3, 4], Cpu);
    let w = Tensor::<Cpu, f64>::from_vec(rng.values(4, 0.5, 1.5), [4], Cpu);
    devtype::autograd::gradcheck(
        |v| Ok(layer_norm(&v[0], &[4], Some(&v[1]), None, 1e-5)),
        &[x.clone(), w.clone()],
    )
    .unwrap();
    devtype::autograd::gradcheck(
        |v| Ok(rms_norm(&v[0], &[4], Some(&v[1]), None)),
        &[x.clone(), w],
    )
    .unwrap();
    devtype::autograd::gradcheck(
        |v| Ok(gelu(&v[0], Approximate::None)),
        std::slice::from_ref(&x),
    )
    .unwrap();
    let q = Tensor::<Cpu, f64>::from_vec(rng.values(24, -1.0, 1.0), [2, 3, 4], Cpu);
    devtype::autograd::gradcheck(
        |v| {
            Ok(scaled_dot_product_attention(
                &v[0], &v[1], &v[2], None, true, 0.0,
            ))
        },
        &[q.clone(), q.mul_scalar(0.5), q.neg()],
    )
    .unwrap();
}

#[test]
fn modules_move_save_and_flatten() {
    let ln = LayerNorm::new(&[4], Cpu);
    let names: Vec<String> = ln.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let no_affine = LayerNorm::<Cpu>::try_with_options(&[4], 1e-5, false, true, Cpu).unwrap();
    assert_eq!(no_affine.num_parameters(), 0);
    assert_eq!(RMSNorm::new(&[4], Cpu).num_parameters(), 4);
    let y = Flatten::default().forward(Tensor::<Cpu>::zeros([2, 3, 4, 5], Cpu));
    assert_eq!(y.shape(), &[2, 60]);

    // A model of the new layers: one `to`, one file, loaded into a fresh one.
    struct Tiny<D: Device> {
        emb: Embedding<D>,
        norm: LayerNorm<D>,
        attn: MultiheadAttention<D>,
        head: Linear<D>,
    }
    devtype::module!(Tiny<D> { emb, norm, attn, head });
    let build = || Tiny {
        emb: Embedding::new(10, 8, Cpu),
        norm: LayerNorm::new(&[8], Cpu),
        attn: MultiheadAttention::new(8, 2, Cpu),
        head: Linear::new(8, 10, Cpu),
    };
    let model = build().to(Cpu);
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "emb.weight",
            "norm.weight",
            "norm.bias",
            "attn.in_proj_weight",
            "attn.in_proj_bias",
            "attn.out_proj.weight",
            "attn.out_proj.bias",
            "head.weight",
            "head.bias"
        ]
    );
    let dir = std::env::temp_dir().join(format!("devtype-nn-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tiny.safetensors");
    model.save(&path).unwrap();
    let mut fresh = build();
    fresh.load(&path).unwrap();
    for ((n, a), (_, b)) in model
        .named_parameters()
        .iter()
        .zip(fresh.named_parameters())
    {
        assert_eq!(a.to_vec(), b.to_vec(), "{n}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn dropout_function_scales_and_is_identity_in_eval() {
    let x = Tensor::<Cpu>::ones([2000], Cpu);
    let y = dropout(&x, 0.25, true).to_vec();
    assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    let kept = y.iter().filter(|&&v| v != 0.0).count() as f64 / 2000.0;
    assert!((kept - 0.75).abs() < 0.06, "kept {kept}");
    assert_eq!(dropout(&x, 0.25, false).to_vec(), x.to_vec());
}

/// The same layers on `Cuda<0>` and on the CPU, values and gradients, on random inputs.
#[test]
fn gpu_layers_match_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = Rng::new("gpu_layers_match_cpu");
    let x_host: Vec<f32> = rng
        .values(2 * 5 * 8, -2.0, 2.0)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let ids_host: Vec<i64> = (0..10).map(|_| rng.below(12) as i64).collect();

    struct Block<D: Device> {
        emb: Embedding<D>,
        norm: LayerNorm<D>,
        rms: RMSNorm<D>,
        attn: MultiheadAttention<D>,
        act: GELU,
        head: Linear<D>,
    }
    devtype::module!(Block<D> { emb, norm, rms, attn, act, head });
    fn run<D: Device>(m: &Block<D>, x: &Tensor<D>, ids: &Tensor<D, i64>) -> Tensor<D> {
        let h = x.add(&m.emb.forward(ids));
        let h = m.norm.forward(&h);
        let h = h.add(&m.attn.forward(&h, &h, &h, None, true));
        let h = m.rms.forward(&h);
        let h = SiLU.forward(m.act.forward(&h));
        let h = leaky_relu(&h, 0.1);
        m.head.forward(&h).softmax(-1)
    }
    let cpu_model = Block {
        emb: Embedding::<Cpu>::try_with_options(12, 8, Some(3), Cpu).unwrap(),
        norm: LayerNorm::new(&[8], Cpu),
        rms: RMSNorm::new(&[8], Cpu),
        attn: MultiheadAttention::new(8, 2, Cpu),
        act: GELU::new(Approximate::Tanh),
        head: Linear::new(8, 6, Cpu),
    };
    let gpu_model = cpu_model.to(gpu);
    let x = Tensor::<Cpu>::from_vec(x_host, [2, 5, 8], Cpu);
    let ids = Tensor::<Cpu, i64>::from_vec(ids_host, [2, 5], Cpu);
    let want = run(&cpu_model, &x, &ids);
    let got = run(&gpu_model, &x.to(gpu), &ids.to(gpu));
    let as64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    close(
        "gpu forward",
        &as64(got.to_vec()),
        &as64(want.to_vec()),
        2e-5,
    );
    let g: Vec<f32> = (0..want.numel()).map(|i| (i as f32 * 0.37).sin()).collect();
    want.mul(Tensor::from_vec(g.clone(), want.shape(), Cpu))
        .sum_all()
        .backward();
    got.mul(Tensor::from_vec(g, want.shape(), Cpu).to(gpu))
        .sum_all()
        .backward();
    for ((n, c), (_, d)) in cpu_model
        .named_parameters()
        .iter()
        .zip(gpu_model.named_parameters())
    {
        let (c, d) = (c.grad().unwrap().to_vec(), d.grad().unwrap().to_vec());
        close(&format!("gpu grad {n}"), &as64(d), &as64(c), 2e-4);
    }
    // The exact GELU and sdpa with a bool mask made on the GPU.
    let xg = x.to(gpu);
    close(
        "gpu gelu",
        &as64(gelu(&xg, Approximate::None).to_vec()),
        &as64(gelu(&x, Approximate::None).to_vec()),
        1e-6,
    );
    let keep = Tensor::<Cpu, bool>::from_vec((0..25).map(|i| i % 3 != 1).collect(), [5, 5], Cpu);
    close(
        "gpu sdpa",
        &as64(scaled_dot_product_attention(&xg, &xg, &xg, &keep.to(gpu), false, 0.0).to_vec()),
        &as64(scaled_dot_product_attention(&x, &x, &x, &keep, false, 0.0).to_vec()),
        2e-5,
    );
}

// ---------------------------------------------------------------------------------------------
// GELU is one op forward and one backward (PyTorch's `gelu` / `gelu_backward` kernels): checked
// against f64 formulas written here on fresh random inputs in every float type, by finite
// differences, on the dynamic front, and on the GPU against the CPU.

const APPROXIMATIONS: [Approximate; 2] = [Approximate::None, Approximate::Tanh];

/// `erfc(x)` in f64, independent of the library's `erf`: `1 - erf` by the Taylor series below
/// 1.5 (its terms stay below 3, so it keeps all but the last bit or two), and erfc's continued
/// fraction `e^{-x²}/√π / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))` above, where it converges
/// within the 400 terms.
fn erfc_ref(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        return 2.0 - erfc_ref(-x);
    }
    if x < 1.5 {
        return 1.0 - erf(x);
    }
    let mut f = x;
    for n in (1..=400).rev() {
        f = x + (n as f64 / 2.0) / f;
    }
    (-x * x).exp() / (std::f64::consts::PI.sqrt() * f)
}

/// GELU in f64 from its definitions: `x Φ(x)` (as `x erfc(-x/√2) / 2`, without the
/// cancellation of `1 + erf` at negative x) and the tanh form.
fn gelu_ref(x: f64, approximate: Approximate) -> f64 {
    match approximate {
        Approximate::None => 0.5 * x * erfc_ref(-x / std::f64::consts::SQRT_2),
        Approximate::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x.powi(3))).tanh())
        }
    }
}

/// GELU's derivative in f64: `Φ(x) + x φ(x)`, and the tanh form's by the product rule with
/// `tanh' = 1 / cosh²`.
fn gelu_grad_ref(x: f64, approximate: Approximate) -> f64 {
    match approximate {
        Approximate::None => {
            0.5 * erfc_ref(-x / std::f64::consts::SQRT_2)
                + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
        }
        Approximate::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            let u = k * (x + 0.044715 * x.powi(3));
            0.5 * (1.0 + u.tanh()) + 0.5 * x * k * (1.0 + 3.0 * 0.044715 * x * x) / u.cosh().powi(2)
        }
    }
}

/// Random inputs, `[6, 8]`: most in `[-6, 6]`, some of magnitude 10 to 10⁴, zeros of both
/// signs, tiny values and a NaN, in random places.
fn gelu_inputs(rng: &mut Rng) -> Vec<f64> {
    let mut xs = rng.values(35, -6.0, 6.0);
    for _ in 0..8 {
        let m = 10f64.powf(rng.uniform(1.0, 4.0));
        xs.push(if rng.chance(0.5) { m } else { -m });
    }
    xs.extend([0.0, -0.0, 1e-6, -1e-6, f64::NAN]);
    for i in (1..xs.len()).rev() {
        xs.swap(i, rng.below(i + 1));
    }
    xs
}

/// `close`, where a NaN wanted must be a NaN got.
#[track_caller]
fn close_nan(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            if w.is_nan() {
                g.is_nan()
            } else {
                (g - w).abs() <= tol * (1.0 + w.abs())
            },
            "{what}[{i}]: got {g}, want {w} (tol {tol})"
        );
    }
}

/// The same values, bit for bit (any NaN matching any NaN).
#[track_caller]
fn same_bits(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

fn as_f64<E: devtype::Element>(v: Vec<E>) -> Vec<f64> {
    v.into_iter().map(|e| e.to_f64()).collect()
}

/// `v` of a `[rows, cols]` row-major matrix, transposed.
fn transposed(v: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|p| v[(p % rows) * cols + p / rows])
        .collect()
}

/// GELU and its gradient in `E` against the f64 formulas at the inputs rounded to `E`, within
/// `tols` (exact, tanh; relative to `1 + |want|`); the kernels' paths (contiguous, strided,
/// gradient written in place or not) give the same bits.
fn gelu_against_f64<E: devtype::Float>(rng: &mut Rng, tols: [f64; 2]) {
    let name = format!("{:?}", E::DTYPE);
    let round = |v: &[f64]| -> Vec<E> { v.iter().map(|&x| E::from_f64(x)).collect() };
    let (xs, gs) = (round(&gelu_inputs(rng)), round(&rng.values(48, -2.0, 2.0)));
    let (x64, g64) = (as_f64(xs.clone()), as_f64(gs.clone()));
    let x = Tensor::<Cpu, E>::from_vec(xs.clone(), [6, 8], Cpu);
    for (a, tol) in APPROXIMATIONS.into_iter().zip(tols) {
        let what = format!("gelu {a:?} {name}");
        let want: Vec<f64> = x64.iter().map(|&v| gelu_ref(v, a)).collect();
        let y = as_f64(gelu(&x, a).to_vec());
        close_nan(&what, &y, &want, tol);
        // A transposed view: the per-element path.
        let yt = as_f64(gelu(&x.t(), a).to_vec());
        same_bits(&format!("{what} of a view"), &yt, &transposed(&y, 6, 8));

        let want: Vec<f64> = x64
            .iter()
            .zip(&g64)
            .map(|(&v, &g)| g * gelu_grad_ref(v, a))
            .collect();
        let grad_of = |run: &dyn Fn(&Tensor<Cpu, E>)| {
            let p = Tensor::parameter(Tensor::<Cpu, E>::from_vec(xs.clone(), [6, 8], Cpu));
            run(&p);
            as_f64(p.grad().unwrap().to_vec())
        };
        let g = Tensor::<Cpu, E>::from_vec(gs.clone(), [6, 8], Cpu);
        // The gradient's own buffer (nothing else holds it), a shared one, and transposed views
        // of both the gradient and the saved input.
        let in_place = grad_of(&|p| {
            let y = gelu(p, a);
            assert!(y.to_string().contains("grad_fn=<GeluBackward0>"), "{y}");
            y.backward_with(Tensor::<Cpu, E>::from_vec(gs.clone(), [6, 8], Cpu))
        });
        close_nan(&format!("{what} grad"), &in_place, &want, tol);
        let shared = grad_of(&|p| gelu(p, a).backward_with(&g));
        same_bits(&format!("{what} grad, shared"), &shared, &in_place);
        let strided = grad_of(&|p| gelu(&p.t(), a).backward_with(g.t()));
        same_bits(&format!("{what} grad, strided"), &strided, &in_place);
    }
}

#[test]
fn gelu_matches_f64_formulas_in_every_float_type() {
    let mut rng = Rng::new("gelu_matches_f64_formulas_in_every_float_type");
    // f64 and f32: a few ulps of the formula's terms; the largest is the tanh gradient's
    // `x/2 (1 - t²) β (1 + 3κx²)` near x = 5, where an ulp or two of `t` (close to 1) is
    // multiplied by about 9 (measured on one draw, exact and tanh: 2e-16 and 1.1e-15 in f64,
    // 8e-8 and 4.5e-7 in f32). f16 and bf16: computed in f32 and rounded once, so within half
    // an ulp of the result (2^-11, 2^-8 relative) and f32's error.
    gelu_against_f64::<f64>(&mut rng, [2e-14, 2e-14]);
    gelu_against_f64::<f32>(&mut rng, [1e-6, 5e-6]);
    gelu_against_f64::<f16>(&mut rng, [1e-3, 1e-3]);
    gelu_against_f64::<bf16>(&mut rng, [8e-3, 8e-3]);
}

#[test]
fn gelu_gradients_match_finite_differences() {
    let mut rng = Rng::new("gelu_gradients_match_finite_differences");
    let values = rng.values(24, -4.0, 4.0);
    let x = Tensor::<Cpu, f64>::from_vec(values.clone(), [4, 6], Cpu);
    let xd = DynTensor::from_vec(values, [4, 6], DynDevice::cpu()).unwrap();
    for a in APPROXIMATIONS {
        devtype::autograd::gradcheck(|v| Ok(gelu(&v[0], a)), std::slice::from_ref(&x)).unwrap();
        // The module, on a transposed view (the strided kernels).
        devtype::autograd::gradcheck(
            |v| Ok(GELU::new(a).forward(v[0].t())),
            std::slice::from_ref(&x),
        )
        .unwrap();
        devtype::autograd::gradcheck_dyn(
            |v| devtype::nn::DynModule::forward(&GELU::new(a), &v[0]),
            std::slice::from_ref(&xd),
        )
        .unwrap();
    }
}

/// The dynamic front's GELU module is the same op; integer and bool inputs are refused with
/// PyTorch's text (`F.gelu` has no integer kernel), not promoted to float.
#[test]
fn dyn_gelu_is_the_same_op_and_refuses_integers() {
    use devtype::nn::DynModule;
    let mut rng = Rng::new("dyn_gelu_is_the_same_op_and_refuses_integers");
    let values = gelu_inputs(&mut rng);
    let x = Tensor::<Cpu, f64>::from_vec(values.clone(), [6, 8], Cpu);
    let xd = DynTensor::from_vec(values, [6, 8], DynDevice::cpu()).unwrap();
    for a in APPROXIMATIONS {
        let got = DynModule::forward(&GELU::new(a), &xd).unwrap();
        assert_eq!(got.dtype(), DType::F64);
        same_bits(
            &format!("dyn gelu {a:?}"),
            &common::values_f64(&got),
            &gelu(&x, a).to_vec(),
        );
        let ints = DynTensor::from_vec(vec![1i64, -2, 3], [3], DynDevice::cpu()).unwrap();
        assert_eq!(
            DynModule::forward(&GELU::new(a), &ints)
                .unwrap_err()
                .to_string(),
            "\"GeluKernelImpl\" not implemented for 'Long'"
        );
        let bools = DynTensor::from_vec(vec![true, false], [2], DynDevice::cpu()).unwrap();
        assert_eq!(
            DynModule::forward(&GELU::new(a), &bools)
                .unwrap_err()
                .to_string(),
            "\"GeluKernelImpl\" not implemented for 'Bool'"
        );
    }
}

/// GELU and its gradient on `Cuda<0>` against the CPU, in `E`, contiguous and through views.
fn gpu_gelu_case<E: devtype::Float>(gpu: Cuda<0>, rng: &mut Rng, tol: f64) {
    let name = format!("{:?}", E::DTYPE);
    let round = |v: &[f64]| -> Vec<E> { v.iter().map(|&x| E::from_f64(x)).collect() };
    let (xs, gs) = (round(&gelu_inputs(rng)), round(&rng.values(48, -2.0, 2.0)));
    let x = Tensor::<Cpu, E>::from_vec(xs.clone(), [6, 8], Cpu);
    let g = Tensor::<Cpu, E>::from_vec(gs, [6, 8], Cpu);
    for a in APPROXIMATIONS {
        let what = format!("gpu gelu {a:?} {name}");
        let want = as_f64(gelu(&x, a).to_vec());
        close_nan(&what, &gpu_values(gelu(&x.to(gpu), a)), &want, tol);
        let want_t = as_f64(gelu(&x.t(), a).to_vec());
        close_nan(
            &format!("{what} of a view"),
            &gpu_values(gelu(&x.to(gpu).t(), a)),
            &want_t,
            tol,
        );

        let cpu = Tensor::parameter(x.clone());
        gelu(&cpu, a).backward_with(&g);
        let want = as_f64(cpu.grad().unwrap().to_vec());
        let dev = Tensor::parameter(x.to(gpu));
        gelu(&dev, a).backward_with(g.to(gpu));
        close_nan(
            &format!("{what} grad"),
            &gpu_values(dev.grad().unwrap()),
            &want,
            tol,
        );
        let dev = Tensor::parameter(x.to(gpu));
        gelu(&dev.t(), a).backward_with(g.to(gpu).t());
        close_nan(
            &format!("{what} grad, strided"),
            &gpu_values(dev.grad().unwrap()),
            &want,
            tol,
        );
    }
}

/// A GPU tensor's values, as f64.
fn gpu_values<E: devtype::Float>(t: Tensor<Cuda<0>, E>) -> Vec<f64> {
    as_f64(t.to_vec())
}

#[test]
fn gpu_gelu_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = Rng::new("gpu_gelu_matches_cpu");
    // The GPU's erf, exp and tanh are CUDA's, within a few ulps of the CPU's: a few ulps of f64
    // and f32 (as against f64 above, the tanh gradient multiplies `t`'s by up to about 9), one
    // of f16 and bf16 (rounded from f32 values that differ by a few ulps of f32).
    gpu_gelu_case::<f64>(gpu, &mut rng, 1e-13);
    gpu_gelu_case::<f32>(gpu, &mut rng, 5e-6);
    gpu_gelu_case::<f16>(gpu, &mut rng, 2e-3);
    gpu_gelu_case::<bf16>(gpu, &mut rng, 1.6e-2);
}
