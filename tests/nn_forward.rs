//! `nn` forward passes against an f64 reference: `Linear` (bias or not, batches of any rank,
//! strided inputs, sizes around the small-product threshold), `ReLU`, `CrossEntropyLoss` (class
//! weights, `ignore_index`, mean/sum/none, 1-D logits, large logits), and their dynamic twins.
//!
//! Only `linear_initialisation` draws from the global random stream.

#[path = "cpu_reference.rs"]
mod reference;

use devtype::nn::{CrossEntropyLoss, DynCrossEntropyLoss, DynLinear, Linear, ReLU, Reduction};
use devtype::prelude::*;
use devtype::Float;
use reference::*;

/// `x @ w.T + b` in f64.
fn linear_ref(x: &Ref, w: &Ref, b: Option<&Ref>) -> (Ref, Ref) {
    let wt = w.transpose(0, 1);
    let mut y = x.matmul(&wt);
    let mut scale = x.matmul_abs(&wt);
    if let Some(b) = b {
        y = y.zip(b, |a, c| a + c);
        scale = scale.zip(b, |a, c| a + c.abs());
    }
    (y, scale)
}

fn linear_forward<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("linear_forward::<{}>", std::any::type_name::<E>()));
    for (inf, outf) in [
        (10usize, 2usize),
        (1, 1),
        (40, 30),
        (128, 64),
        (3, 0),
        (0, 4),
    ] {
        let rw = Ref::random(&mut rng, &[outf, inf], -0.5, 0.5).rounded::<E>();
        let rb = Ref::random(&mut rng, &[outf], -0.5, 0.5).rounded::<E>();
        let (w, b) = (tensor::<E>(&rw), tensor::<E>(&rb));
        let with_bias = Linear::from_parameters(w.clone(), Some(b.clone()));
        let without = Linear::from_parameters(w.clone(), None);
        assert_eq!(
            (with_bias.in_features(), with_bias.out_features()),
            (inf, outf)
        );
        for xshape in [
            vec![4, inf],
            vec![inf],
            vec![2, 3, inf],
            vec![0, inf],
            vec![70, inf],
        ] {
            let rx = Ref::random(&mut rng, &xshape, -1.0, 1.0).rounded::<E>();
            let x = tensor::<E>(&rx);
            let what = format!("Linear({inf}, {outf}) on {xshape:?}");
            let (want, scale) = linear_ref(&rx, &rw, Some(&rb));
            assert_close_scaled(
                &to_ref(&with_bias.forward(&x)),
                &want,
                &scale,
                E::ACCUMULATED,
                &what,
            );
            assert_close_scaled(
                &to_ref(&with_bias.forward(x.clone())),
                &want,
                &scale,
                E::ACCUMULATED,
                &format!("owned {what}"),
            );
            assert_close_scaled(
                &to_ref(&Forward::forward(&with_bias, &x)),
                &want,
                &scale,
                E::ACCUMULATED,
                &format!("Forward {what}"),
            );
            let (want, scale) = linear_ref(&rx, &rw, None);
            assert_close_scaled(
                &to_ref(&without.forward(&x)),
                &want,
                &scale,
                E::ACCUMULATED,
                &format!("no bias {what}"),
            );
            assert_close_scaled(
                &to_ref(&x.try_linear(&w, None).unwrap()),
                &want,
                &scale,
                E::ACCUMULATED,
                &format!("try_linear {what}"),
            );
        }
        // A transposed (strided) batch.
        let rx = Ref::random(&mut rng, &[inf, 9], -1.0, 1.0).rounded::<E>();
        let x = tensor::<E>(&rx).t();
        let (want, scale) = linear_ref(&rx.transpose(0, 1), &rw, Some(&rb));
        assert_close_scaled(
            &to_ref(&with_bias.forward(&x)),
            &want,
            &scale,
            E::ACCUMULATED,
            "strided batch",
        );
        // A transposed (strided) weight, as after `w.t()` of a stored [in, out] matrix.
        let rwt = Ref::random(&mut rng, &[inf, outf], -0.5, 0.5).rounded::<E>();
        let wt = tensor::<E>(&rwt).t();
        let layer = Linear::from_parameters(wt, Some(b.clone()));
        let rx = Ref::random(&mut rng, &[5, inf], -1.0, 1.0).rounded::<E>();
        let (want, scale) = linear_ref(&rx, &rwt.transpose(0, 1), Some(&rb));
        assert_close_scaled(
            &to_ref(&layer.forward(&tensor::<E>(&rx))),
            &want,
            &scale,
            E::ACCUMULATED,
            "strided weight",
        );
    }
}

#[test]
fn linear_forward_f32() {
    linear_forward::<f32>();
}

#[test]
fn linear_forward_f64() {
    linear_forward::<f64>();
}

#[test]
fn linear_moves_and_dynamic_twin() {
    let mut rng = Rng::new("linear_moves_and_dynamic_twin");
    let rw = Ref::random(&mut rng, &[3, 5], -1.0, 1.0);
    let rb = Ref::random(&mut rng, &[3], -1.0, 1.0);
    let model = Linear::from_parameters(tensor::<f32>(&rw), Some(tensor::<f32>(&rb)));
    let moved = model.to(Cpu);
    assert!(
        moved.weight().shares_storage_with(model.weight()),
        "to the same device shares parameters"
    );
    let x = tensor::<f32>(&Ref::random(&mut rng, &[4, 5], -1.0, 1.0));
    let typed = model.forward(&x).to_vec();
    let dyn_model = DynLinear {
        weight: DynTensor::parameter(model.weight().to_dyn()).unwrap(),
        bias: model
            .bias()
            .map(|b| DynTensor::parameter(b.to_dyn()).unwrap()),
    };
    assert_eq!(
        dyn_model
            .forward(&x.to_dyn())
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        typed
    );
    assert_eq!(
        x.to_dyn()
            .linear(&dyn_model.weight, dyn_model.bias.as_ref())
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        typed
    );
    let mut m = dyn_model.clone();
    let same: *const DynLinear = m.to(DynDevice::cpu()).unwrap();
    assert!(
        std::ptr::eq(same, &m),
        "DynLinear::to returns the module itself"
    );
    assert_eq!(m.device(), DynDevice::cpu());
}

#[test]
fn relu_module() {
    let mut rng = Rng::new("relu_module");
    for shape in [vec![], vec![0], vec![7], vec![300, 250]] {
        let r = Ref::random(&mut rng, &shape, -1.0, 1.0).rounded::<f32>();
        let x = tensor::<f32>(&r);
        assert_exact(
            &to_ref(&ReLU.forward(&x)),
            &r.map(|v| v.max(0.0)),
            &format!("ReLU {shape:?}"),
        );
        assert_exact(
            &to_ref(&ReLU.forward(x.clone())),
            &r.map(|v| v.max(0.0)),
            "ReLU owned",
        );
        assert_exact(&to_ref(&x), &r, "ReLU left a shared input alone");
    }
}

/// Cross-entropy in f64: per-sample `w[t] * (logsumexp(x) - x[t])`, skipping `ignore_index`;
/// mean divides by the summed weights of the samples kept. Returns (value, error scale).
fn cross_entropy_ref(
    logits: &Ref,
    targets: &[i64],
    weight: Option<&[f64]>,
    reduction: Reduction,
    ignore: i64,
) -> (Ref, Ref) {
    let (n, c) = if logits.shape.len() == 1 {
        (1, logits.shape[0])
    } else {
        (logits.shape[0], logits.shape[1])
    };
    let (mut losses, mut scales) = (vec![0.0; n], vec![0.0; n]);
    let (mut total, mut total_scale, mut wsum) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let t = targets[i];
        if t == ignore {
            continue;
        }
        let row = &logits.data[i * c..(i + 1) * c];
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        let w = weight.map_or(1.0, |w| w[t as usize]);
        losses[i] = w * (lse - row[t as usize]);
        scales[i] = w * (lse.abs() + row[t as usize].abs() + max.abs());
        total += losses[i];
        total_scale += scales[i];
        wsum += w;
    }
    match reduction {
        Reduction::None => {
            let shape: Vec<usize> = if logits.shape.len() == 1 {
                vec![]
            } else {
                vec![n]
            };
            (Ref::new(&shape, losses), Ref::new(&shape, scales))
        }
        Reduction::Sum => (Ref::new(&[], vec![total]), Ref::new(&[], vec![total_scale])),
        Reduction::Mean => (
            Ref::new(&[], vec![total / wsum]),
            Ref::new(&[], vec![total_scale / wsum]),
        ),
    }
}

fn cross_entropy<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("cross_entropy::<{}>", std::any::type_name::<E>()));
    for (n, c) in [(1usize, 1usize), (4, 3), (7, 10), (0, 3), (300, 50)] {
        let rl = Ref::random(&mut rng, &[n, c], -5.0, 5.0).rounded::<E>();
        let logits = tensor::<E>(&rl);
        let rw: Vec<f64> = (0..c)
            .map(|_| E::from_f64(rng.uniform(0.1, 2.0)).to_f64())
            .collect();
        let weight =
            Tensor::<Cpu, E>::from_vec(rw.iter().map(|&v| E::from_f64(v)).collect(), [c], Cpu);
        for ignore in [-100i64, 0, (c as i64) - 1] {
            // Mostly valid classes, some ignored.
            let targets: Vec<i64> = (0..n)
                .map(|_| {
                    if rng.below(5) == 0 {
                        ignore
                    } else {
                        rng.below(c) as i64
                    }
                })
                .collect();
            let t = Tensor::<Cpu, i64>::from_vec(targets.clone(), [n], Cpu);
            for reduction in [Reduction::Mean, Reduction::Sum, Reduction::None] {
                for weighted in [false, true] {
                    let w = weighted.then_some(&rw[..]);
                    let what =
                        format!("[{n}, {c}] ignore {ignore} {reduction:?} weighted {weighted}");
                    let (want, scale) = cross_entropy_ref(&rl, &targets, w, reduction, ignore);
                    let mut loss = CrossEntropyLoss::<Cpu, E>::new()
                        .with_reduction(reduction)
                        .with_ignore_index(ignore);
                    if weighted {
                        loss = loss.with_weight(weight.clone());
                    }
                    let got = to_ref(&loss.forward(&logits, &t));
                    assert_close_scaled(&got, &want, &scale, E::ACCUMULATED, &what);
                    // The same through the dynamic front.
                    let dyn_loss = DynCrossEntropyLoss {
                        weight: weighted.then(|| weight.to_dyn()),
                        reduction,
                        ignore_index: ignore,
                    };
                    let got = dyn_loss.forward(&logits.to_dyn(), &t.to_dyn()).unwrap();
                    let got = Ref::new(
                        got.shape(),
                        got.to_vec::<E>()
                            .unwrap()
                            .into_iter()
                            .map(|v| v.to_f64())
                            .collect(),
                    );
                    assert_close_scaled(
                        &got,
                        &want,
                        &scale,
                        E::ACCUMULATED,
                        &format!("dyn {what}"),
                    );
                }
            }
            // Strided logits give the same losses.
            let strided = tensor::<E>(&rl.transpose(0, 1)).t();
            let loss = CrossEntropyLoss::<Cpu, E>::new()
                .with_reduction(Reduction::None)
                .with_ignore_index(ignore);
            let (want, scale) = cross_entropy_ref(&rl, &targets, None, Reduction::None, ignore);
            assert_close_scaled(
                &to_ref(&loss.forward(&strided, &t)),
                &want,
                &scale,
                E::ACCUMULATED,
                "strided logits",
            );
        }
    }
    // One sample as 1-D logits and a 0-dim target.
    let rl = Ref::random(&mut rng, &[6], -3.0, 3.0).rounded::<E>();
    let target = Tensor::<Cpu, i64>::scalar(4, Cpu);
    for reduction in [Reduction::Mean, Reduction::Sum, Reduction::None] {
        let (want, scale) = cross_entropy_ref(&rl, &[4], None, reduction, -100);
        let got = CrossEntropyLoss::<Cpu, E>::new()
            .with_reduction(reduction)
            .forward(&tensor::<E>(&rl), &target);
        assert_close_scaled(
            &to_ref(&got),
            &want,
            &scale,
            E::ACCUMULATED,
            &format!("1-D logits {reduction:?}"),
        );
    }
    // Large logits stay finite (log-sum-exp with the max subtracted).
    let rl = Ref::new(&[2, 3], vec![1000.0, -1000.0, 0.0, -500.0, 500.0, 499.0]);
    let targets = [0i64, 2];
    let (want, scale) = cross_entropy_ref(&rl, &targets, None, Reduction::None, -100);
    let got = CrossEntropyLoss::<Cpu, E>::new()
        .with_reduction(Reduction::None)
        .forward(
            &tensor::<E>(&rl),
            &Tensor::<Cpu, i64>::from_vec(targets.to_vec(), [2], Cpu),
        );
    assert_close_scaled(&to_ref(&got), &want, &scale, E::ACCUMULATED, "large logits");
    // Every target ignored: the mean is 0/0 = nan, as in PyTorch; the sum is 0.
    let t = Tensor::<Cpu, i64>::full([3], -100, Cpu);
    let logits = Tensor::<Cpu, E>::ones([3, 2], Cpu);
    assert!(CrossEntropyLoss::<Cpu, E>::new()
        .forward(&logits, &t)
        .item()
        .to_f64()
        .is_nan());
    assert_eq!(
        CrossEntropyLoss::<Cpu, E>::new()
            .with_reduction(Reduction::Sum)
            .forward(&logits, &t)
            .item()
            .to_f64(),
        0.0
    );
}

#[test]
fn cross_entropy_f32() {
    cross_entropy::<f32>();
}

#[test]
fn cross_entropy_f64() {
    cross_entropy::<f64>();
}

#[test]
fn cross_entropy_moves_its_weight_buffer() {
    let w = Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu);
    let loss = CrossEntropyLoss::new().with_weight(w.clone());
    let moved = loss.to(Cpu);
    assert!(moved.weight().unwrap().shares_storage_with(&w));
    let mut dyn_loss = DynCrossEntropyLoss::with_weight(w.to_dyn());
    let same: *const DynCrossEntropyLoss = dyn_loss.to(DynDevice::cpu()).unwrap();
    assert!(std::ptr::eq(same, &dyn_loss));
    assert_eq!(dyn_loss.ignore_index, -100);
    assert_eq!(dyn_loss.reduction, Reduction::Mean);
}

/// The only test here that draws from the global random stream.
#[test]
fn linear_initialisation() {
    // PyTorch's default: weight and bias uniform in [-1/sqrt(in), 1/sqrt(in)].
    for (inf, outf) in [(10usize, 2usize), (400, 300), (1, 1)] {
        let m = Linear::<Cpu>::new(inf, outf, Cpu);
        // The bound in f64, with one f32 rounding of slack.
        let bound = (1.0 / (inf as f64).sqrt() * (1.0 + 1e-6)) as f32;
        assert_eq!(m.weight().shape(), &[outf, inf]);
        assert_eq!(m.bias().unwrap().shape(), &[outf]);
        let w = m.weight().to_vec();
        assert!(
            w.iter().all(|v| v.abs() <= bound),
            "weights within the bound"
        );
        if w.len() > 10_000 {
            let mean = w.iter().map(|&v| v as f64).sum::<f64>() / w.len() as f64;
            let var = w.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / w.len() as f64;
            let b = bound as f64;
            // Uniform on [-b, b]: mean 0, variance b^2 / 3 (6 standard errors).
            assert!(
                mean.abs() < 6.0 * (b * b / 3.0 / w.len() as f64).sqrt(),
                "mean {mean}"
            );
            assert!(
                (var - b * b / 3.0).abs() < 6.0 * b * b * (4.0 / 45.0 / w.len() as f64).sqrt(),
                "var {var}"
            );
        }
        assert!(m.bias().unwrap().to_vec().iter().all(|v| v.abs() <= bound));
    }
    devtype::manual_seed(3);
    let a = Linear::<Cpu>::new(4, 3, Cpu);
    devtype::manual_seed(3);
    let b = Linear::<Cpu>::new(4, 3, Cpu);
    assert_eq!(
        a.weight().to_vec(),
        b.weight().to_vec(),
        "seeded initialisation is reproducible"
    );
    let d = DynLinear::new(4, 3, DynDevice::cpu()).unwrap();
    assert_eq!(d.weight.shape(), &[3, 4]);
    assert!(d
        .weight
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| v.abs() <= 0.5));
    let z = Linear::<Cpu>::new(0, 2, Cpu);
    assert_eq!(
        z.forward(&Tensor::<Cpu>::zeros([3, 0], Cpu)).to_vec(),
        z.bias().unwrap().to_vec().repeat(3)
    );
}
