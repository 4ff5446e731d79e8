//! The losses added for issue 29 (`L1Loss`, `SmoothL1Loss`, `HuberLoss`, `BCEWithLogitsLoss`,
//! `NLLLoss`, and their functional forms on both fronts): values and gradients (of the input
//! and, where PyTorch has one, of the target) against PyTorch 2.15's, recorded in float64 by
//! `scripts/torch_losses.py`; gradcheck and an f64 reference on fresh random inputs; PyTorch's
//! error texts; and on a GPU (the simulator in CI) the same results as the CPU.

mod common;

use common::close;

#[path = "reference/losses_torch.rs"]
#[allow(dead_code, clippy::excessive_precision, clippy::approx_constant)]
mod torch;

use common::Rng;
use devtype::autograd::gradcheck;
use devtype::nn::{
    BCEWithLogitsLoss, DynBCEWithLogitsLoss, DynNLLLoss, HuberLoss, L1Loss, NLLLoss, Reduction,
    SmoothL1Loss,
};
use devtype::prelude::*;

const REDUCTIONS: [(Reduction, &str); 3] = [
    (Reduction::None, "NONE"),
    (Reduction::Sum, "SUM"),
    (Reduction::Mean, "MEAN"),
];

/// The recorded values of one case, by name: `(value, grad of x, grad of target)`.
fn recorded(name: &str, red: &str) -> (&'static [f64], &'static [f64], Option<&'static [f64]>) {
    use torch::*;
    type Row = (&'static str, &'static [f64], &'static [f64], &'static [f64]);
    let table: &[Row] = &[
        ("L1_NONE", L1_NONE, L1_NONE_GX, L1_NONE_GT),
        ("L1_SUM", L1_SUM, L1_SUM_GX, L1_SUM_GT),
        ("L1_MEAN", L1_MEAN, L1_MEAN_GX, L1_MEAN_GT),
        ("SMOOTH_NONE", SMOOTH_NONE, SMOOTH_NONE_GX, SMOOTH_NONE_GT),
        ("SMOOTH_SUM", SMOOTH_SUM, SMOOTH_SUM_GX, SMOOTH_SUM_GT),
        ("SMOOTH_MEAN", SMOOTH_MEAN, SMOOTH_MEAN_GX, SMOOTH_MEAN_GT),
        (
            "SMOOTH0_NONE",
            SMOOTH0_NONE,
            SMOOTH0_NONE_GX,
            SMOOTH0_NONE_GT,
        ),
        ("SMOOTH0_SUM", SMOOTH0_SUM, SMOOTH0_SUM_GX, SMOOTH0_SUM_GT),
        (
            "SMOOTH0_MEAN",
            SMOOTH0_MEAN,
            SMOOTH0_MEAN_GX,
            SMOOTH0_MEAN_GT,
        ),
        ("HUBER_NONE", HUBER_NONE, HUBER_NONE_GX, HUBER_NONE_GT),
        ("HUBER_SUM", HUBER_SUM, HUBER_SUM_GX, HUBER_SUM_GT),
        ("HUBER_MEAN", HUBER_MEAN, HUBER_MEAN_GX, HUBER_MEAN_GT),
        ("BCE_NONE", BCE_NONE, BCE_NONE_GX, BCE_NONE_GT),
        ("BCE_SUM", BCE_SUM, BCE_SUM_GX, BCE_SUM_GT),
        ("BCE_MEAN", BCE_MEAN, BCE_MEAN_GX, BCE_MEAN_GT),
        ("BCEW_NONE", BCEW_NONE, BCEW_NONE_GX, BCEW_NONE_GT),
        ("BCEW_SUM", BCEW_SUM, BCEW_SUM_GX, BCEW_SUM_GT),
        ("BCEW_MEAN", BCEW_MEAN, BCEW_MEAN_GX, BCEW_MEAN_GT),
        ("NLL_NONE", NLL_NONE, NLL_NONE_GX, &[]),
        ("NLL_SUM", NLL_SUM, NLL_SUM_GX, &[]),
        ("NLL_MEAN", NLL_MEAN, NLL_MEAN_GX, &[]),
        ("NLLW_NONE", NLLW_NONE, NLLW_NONE_GX, &[]),
        ("NLLW_SUM", NLLW_SUM, NLLW_SUM_GX, &[]),
        ("NLLW_MEAN", NLLW_MEAN, NLLW_MEAN_GX, &[]),
    ];
    let key = format!("{name}_{red}");
    let (_, v, gx, gt) = table.iter().find(|r| r.0 == key).expect("recorded");
    (v, gx, (!gt.is_empty()).then_some(*gt))
}

type Loss<D> = Box<dyn Fn(&Tensor<D, f64>, &Tensor<D, f64>, Reduction) -> Tensor<D, f64>>;

/// Each element-wise case on the typed front, by the module (`module`) or the functional form.
fn typed_cases<D: Device>(dev: D, module: bool) -> Vec<(&'static str, Loss<D>)> {
    let w = Tensor::from_vec(torch::W.to_vec(), [3], dev);
    let pw = Tensor::from_vec(torch::PW.to_vec(), [3], dev);
    let mut cases: Vec<(&'static str, Loss<D>)> = Vec::new();
    if module {
        cases.push((
            "L1",
            Box::new(|x, t, r| L1Loss::new().with_reduction(r).forward(x, t)),
        ));
        cases.push((
            "SMOOTH",
            Box::new(|x, t, r| {
                SmoothL1Loss::new()
                    .beta(0.7)
                    .with_reduction(r)
                    .forward(x, t)
            }),
        ));
        cases.push((
            "SMOOTH0",
            Box::new(|x, t, r| {
                SmoothL1Loss::new()
                    .beta(0.0)
                    .with_reduction(r)
                    .forward(x, t)
            }),
        ));
        cases.push((
            "HUBER",
            Box::new(|x, t, r| HuberLoss::new().delta(1.3).with_reduction(r).forward(x, t)),
        ));
        cases.push((
            "BCE",
            Box::new(|x, t, r| BCEWithLogitsLoss::new().with_reduction(r).forward(x, t)),
        ));
        cases.push((
            "BCEW",
            Box::new(move |x, t, r| {
                BCEWithLogitsLoss::new()
                    .with_weight(w.clone())
                    .with_pos_weight(pw.clone())
                    .with_reduction(r)
                    .forward(x, t)
            }),
        ));
    } else {
        cases.push(("L1", Box::new(|x, t, r| x.l1_loss(t, r))));
        cases.push(("SMOOTH", Box::new(|x, t, r| x.smooth_l1_loss(t, r, 0.7))));
        cases.push(("SMOOTH0", Box::new(|x, t, r| x.smooth_l1_loss(t, r, 0.0))));
        cases.push(("HUBER", Box::new(|x, t, r| x.huber_loss(t, r, 1.3))));
        cases.push((
            "BCE",
            Box::new(|x, t, r| x.binary_cross_entropy_with_logits(t, None, None, r)),
        ));
        cases.push((
            "BCEW",
            Box::new(move |x, t, r| x.binary_cross_entropy_with_logits(t, Some(&w), Some(&pw), r)),
        ));
    }
    cases
}

/// The typed front on `dev` (module and functional forms) reproduces PyTorch's values and the
/// gradients of both the input and the target.
fn check_typed_against_torch<D: Device + HostSync>(dev: D, tol: f64) {
    for module in [true, false] {
        for (name, f) in typed_cases(dev, module) {
            for (red, rname) in REDUCTIONS {
                let x = Tensor::parameter(Tensor::from_vec(torch::X.to_vec(), [4, 3], dev));
                let tv = if name.starts_with("BCE") {
                    torch::P
                } else {
                    torch::T
                };
                let t = Tensor::parameter(Tensor::from_vec(tv.to_vec(), [4, 3], dev));
                let out = f(&x, &t, red);
                let (want, gx, gt) = recorded(name, rname);
                let what = format!("{name} {rname} (module: {module})");
                close(&what, &out.to_vec(), want, tol);
                if red == Reduction::None {
                    assert_eq!(out.shape(), &[4, 3]);
                    out.backward_with(&Tensor::from_vec(torch::V.to_vec(), [4, 3], dev));
                } else {
                    assert_eq!(out.shape(), &[] as &[usize]);
                    out.backward();
                }
                close(
                    &format!("{what} grad x"),
                    &x.grad().unwrap().to_vec(),
                    gx,
                    tol,
                );
                close(
                    &format!("{what} grad target"),
                    &t.grad().unwrap().to_vec(),
                    gt.unwrap(),
                    tol,
                );
            }
        }
    }
}

fn check_nll_against_torch<D: Device + HostSync>(dev: D, tol: f64) {
    let tgt = Tensor::<D, i64>::from_vec(torch::TGT.to_vec(), [5], dev);
    for (name, weighted) in [("NLL", false), ("NLLW", true)] {
        for (red, rname) in REDUCTIONS {
            for module in [true, false] {
                let x = Tensor::parameter(Tensor::from_vec(torch::LOGP.to_vec(), [5, 4], dev));
                let cw = Tensor::from_vec(torch::CW.to_vec(), [4], dev);
                let out = if module {
                    let mut m = NLLLoss::new().with_reduction(red);
                    if weighted {
                        m = m.with_weight(cw);
                    }
                    m.forward(&x, &tgt)
                } else {
                    x.nll_loss(&tgt, weighted.then_some(&cw), red, -100)
                };
                let (want, gx, _) = recorded(name, rname);
                let what = format!("{name} {rname} (module: {module})");
                close(&what, &out.to_vec(), want, tol);
                if red == Reduction::None {
                    out.backward_with(&Tensor::from_vec(torch::V5.to_vec(), [5], dev));
                } else {
                    out.backward();
                }
                close(
                    &format!("{what} grad"),
                    &x.grad().unwrap().to_vec(),
                    gx,
                    tol,
                );
            }
        }
    }
}

#[test]
fn typed_front_matches_pytorch() {
    check_typed_against_torch(Cpu, 1e-12);
    check_nll_against_torch(Cpu, 1e-12);
}

#[test]
fn dynamic_front_matches_pytorch() {
    let cpu = DynDevice::cpu();
    let d = |v: &[f64], shape: &[usize]| {
        DynTensor::parameter(DynTensor::from_vec(v.to_vec(), shape, cpu).unwrap()).unwrap()
    };
    let w = DynTensor::from_vec(torch::W.to_vec(), [3], cpu).unwrap();
    let pw = DynTensor::from_vec(torch::PW.to_vec(), [3], cpu).unwrap();
    for (name, _) in typed_cases(Cpu, false) {
        for (red, rname) in REDUCTIONS {
            let x = d(torch::X, &[4, 3]);
            let t = d(
                if name.starts_with("BCE") {
                    torch::P
                } else {
                    torch::T
                },
                &[4, 3],
            );
            let out = match name {
                "L1" => x.l1_loss(&t, red),
                "SMOOTH" => x.smooth_l1_loss(&t, red, 0.7),
                "SMOOTH0" => x.smooth_l1_loss(&t, red, 0.0),
                "HUBER" => x.huber_loss(&t, red, 1.3),
                "BCE" => x.binary_cross_entropy_with_logits(&t, None, None, red),
                // The module form, its buffers moved in place (the functional form is the
                // op table's, in parity and gradcheck).
                _ => {
                    let mut criterion = DynBCEWithLogitsLoss {
                        weight: Some(w.clone()),
                        pos_weight: Some(pw.clone()),
                        reduction: red,
                    };
                    criterion.to(cpu).unwrap().forward(&x, &t)
                }
            }
            .unwrap();
            let (want, gx, gt) = recorded(name, rname);
            close(name, &out.to_vec::<f64>().unwrap(), want, 1e-12);
            if red == Reduction::None {
                out.backward_with(&d(torch::V, &[4, 3])).unwrap();
            } else {
                out.backward().unwrap();
            }
            close(name, &x.grad().unwrap().to_vec::<f64>().unwrap(), gx, 1e-12);
            close(
                name,
                &t.grad().unwrap().to_vec::<f64>().unwrap(),
                gt.unwrap(),
                1e-12,
            );
        }
    }
    // The element-wise modules' dynamic forward, and nll_loss with a weight.
    let (x, t) = (d(torch::X, &[4, 3]), d(torch::T, &[4, 3]));
    let out = HuberLoss::new().delta(1.3).forward_dyn(&x, &t).unwrap();
    close(
        "HuberLoss::forward_dyn",
        &out.to_vec::<f64>().unwrap(),
        torch::HUBER_MEAN,
        1e-12,
    );
    let logp = d(torch::LOGP, &[5, 4]);
    let tgt = DynTensor::from_vec(torch::TGT.to_vec(), [5], cpu).unwrap();
    let cw = DynTensor::from_vec(torch::CW.to_vec(), [4], cpu).unwrap();
    let out = logp
        .nll_loss(&tgt, Some(&cw), Reduction::Mean, -100)
        .unwrap();
    close(
        "nll dyn",
        &out.to_vec::<f64>().unwrap(),
        torch::NLLW_MEAN,
        1e-12,
    );
    let mut criterion = DynNLLLoss {
        weight: Some(cw.clone()),
        ..Default::default()
    };
    let by_module = criterion.to(cpu).unwrap().forward(&logp, &tgt).unwrap();
    close(
        "DynNLLLoss",
        &by_module.to_vec::<f64>().unwrap(),
        torch::NLLW_MEAN,
        1e-12,
    );
    out.backward().unwrap();
    close(
        "nll dyn grad",
        &logp.grad().unwrap().to_vec::<f64>().unwrap(),
        torch::NLLW_MEAN_GX,
        1e-12,
    );
}

/// Fresh random inputs in f64: the gradients (input and target) pass gradcheck, and the f32
/// values match an f64 reference written here from the formulas.
#[test]
fn gradcheck_and_f64_reference_on_fresh_inputs() {
    let mut rng = Rng::new("gradcheck_and_f64_reference_on_fresh_inputs");
    let n = 12;
    let x: Vec<f64> = rng.values(n, -6.0, 6.0);
    let t: Vec<f64> = rng.values(n, -2.0, 2.0);
    let p: Vec<f64> = rng.values(n, 0.0, 1.0);
    let w: Vec<f64> = rng.values(4, 0.2, 2.0);
    let pw: Vec<f64> = rng.values(4, 0.2, 4.0);
    let (beta, delta) = (rng.uniform(0.1, 2.0), rng.uniform(0.1, 2.0));
    let mk = |v: &[f64]| Tensor::<Cpu, f64>::from_vec(v.to_vec(), [3, 4], Cpu);
    let (w64, pw64) = (
        Tensor::<Cpu, f64>::from_vec(w.clone(), [4], Cpu),
        Tensor::<Cpu, f64>::from_vec(pw.clone(), [4], Cpu),
    );
    for red in [Reduction::None, Reduction::Sum, Reduction::Mean] {
        gradcheck(|v| v[0].try_l1_loss(&v[1], red), &[mk(&x), mk(&t)]).unwrap();
        gradcheck(
            |v| v[0].try_smooth_l1_loss(&v[1], red, beta),
            &[mk(&x), mk(&t)],
        )
        .unwrap();
        gradcheck(
            |v| v[0].try_huber_loss(&v[1], red, delta),
            &[mk(&x), mk(&t)],
        )
        .unwrap();
        gradcheck(
            |v| v[0].try_binary_cross_entropy_with_logits(&v[1], Some(&w64), Some(&pw64), red),
            &[mk(&x), mk(&p)],
        )
        .unwrap();
    }
    // Values in f32 against f64 formulas.
    let sl1 = |d: f64| {
        if d.abs() < beta {
            0.5 * d * d / beta
        } else {
            d.abs() - 0.5 * beta
        }
    };
    let hub = |d: f64| {
        if d.abs() < delta {
            0.5 * d * d
        } else {
            delta * (d.abs() - 0.5 * delta)
        }
    };
    let bce = |i: usize| {
        let (xi, pi) = (x[i], p[i]);
        let lw = 1.0 + (pw[i % 4] - 1.0) * pi;
        let log_sig = -((-xi).exp().ln_1p());
        w[i % 4] * ((1.0 - pi) * xi - lw * log_sig)
    };
    let f32s =
        |v: &[f64]| Tensor::<Cpu>::from_vec(v.iter().map(|&a| a as f32).collect(), [3, 4], Cpu);
    let (xf, tf, pf) = (f32s(&x), f32s(&t), f32s(&p));
    let wf = Tensor::<Cpu>::from_vec(w.iter().map(|&a| a as f32).collect(), [4], Cpu);
    let pwf = Tensor::<Cpu>::from_vec(pw.iter().map(|&a| a as f32).collect(), [4], Cpu);
    let refs: Vec<(&str, Vec<f32>, Vec<f64>)> = vec![
        (
            "l1",
            xf.l1_loss(&tf, Reduction::None).to_vec(),
            (0..n).map(|i| (x[i] - t[i]).abs()).collect(),
        ),
        (
            "smooth_l1",
            xf.smooth_l1_loss(&tf, Reduction::None, beta).to_vec(),
            (0..n).map(|i| sl1(x[i] - t[i])).collect(),
        ),
        (
            "huber",
            xf.huber_loss(&tf, Reduction::None, delta).to_vec(),
            (0..n).map(|i| hub(x[i] - t[i])).collect(),
        ),
        (
            "bce",
            xf.binary_cross_entropy_with_logits(&pf, Some(&wf), Some(&pwf), Reduction::None)
                .to_vec(),
            (0..n).map(bce).collect(),
        ),
    ];
    for (name, got, want) in refs {
        for (g, w) in got.iter().zip(&want) {
            assert!(
                ((*g as f64) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{name}: {g} vs {w}"
            );
        }
    }
    // Large logits do not overflow (the stable form): PyTorch gives 0 and 100 here.
    let big = Tensor::<Cpu>::from_vec(vec![100.0, -100.0], [2], Cpu);
    let ones = Tensor::<Cpu>::ones([2], Cpu);
    assert_eq!(
        big.binary_cross_entropy_with_logits(&ones, None, None, Reduction::None)
            .to_vec(),
        [0.0, 100.0]
    );
}

/// NLL with fresh random log-probabilities, targets (some ignored) and weights: gradcheck, and
/// the weighted mean against f64.
#[test]
fn nll_gradcheck_and_reference() {
    let mut rng = Rng::new("nll_gradcheck_and_reference");
    let (n, c) = (6, 5);
    let x: Vec<f64> = rng.values(n * c, -3.0, 0.0);
    let ignore = 2;
    let tgt: Vec<i64> = (0..n).map(|_| rng.int(0, c as i64 - 1)).collect();
    let w: Vec<f64> = rng.values(c, 0.2, 2.0);
    let t = Tensor::<Cpu, i64>::from_vec(tgt.clone(), [n], Cpu);
    let wt = Tensor::<Cpu, f64>::from_vec(w.clone(), [c], Cpu);
    let xt = Tensor::<Cpu, f64>::from_vec(x.clone(), [n, c], Cpu);
    for red in [Reduction::None, Reduction::Sum, Reduction::Mean] {
        if tgt.iter().all(|&k| k == ignore) {
            break;
        }
        gradcheck(
            |v| v[0].try_nll_loss(&t, Some(&wt), red, ignore),
            std::slice::from_ref(&xt),
        )
        .unwrap();
    }
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..n {
        if tgt[i] != ignore {
            num -= w[tgt[i] as usize] * x[i * c + tgt[i] as usize];
            den += w[tgt[i] as usize];
        }
    }
    let got = xt.nll_loss(&t, Some(&wt), Reduction::Mean, ignore).item();
    assert!((got - num / den).abs() < 1e-12, "{got} vs {}", num / den);
    // Unbatched: `[classes]` with a 0-D target.
    let row = Tensor::<Cpu, f64>::from_vec(x[..c].to_vec(), [c], Cpu);
    let t0 = Tensor::<Cpu, i64>::from_vec(vec![tgt[0]], [], Cpu);
    let got = row.nll_loss(&t0, None, Reduction::None, -100);
    assert_eq!(got.shape(), &[] as &[usize]);
    assert_eq!(got.item(), -x[tgt[0] as usize]);
    // Every target ignored: the mean is NaN (0 / 0), as PyTorch's.
    let all = Tensor::<Cpu, i64>::full([n], -100, Cpu);
    assert!(xt
        .nll_loss(&all, None, Reduction::Mean, -100)
        .item()
        .is_nan());
}

#[test]
fn errors_are_pytorchs() {
    let cpu = DynDevice::cpu();
    let x = DynTensor::randn([3, 4], cpu).unwrap();
    let err = |r: devtype::Result<DynTensor>| r.unwrap_err().to_string();
    let t3 = DynTensor::randn([3], cpu).unwrap();
    assert_eq!(
        err(x.binary_cross_entropy_with_logits(&t3, None, None, Reduction::Mean)),
        "Target size (torch.Size([3])) must be the same as input size (torch.Size([3, 4]))"
    );
    let long = DynTensor::full([3, 4], 1, DType::I64, cpu).unwrap();
    assert_eq!(
        err(x.binary_cross_entropy_with_logits(&long, None, None, Reduction::Mean)),
        "result type Float can't be cast to the desired output type Long"
    );
    let t34 = DynTensor::randn([3, 4], cpu).unwrap();
    let ones3 = DynTensor::ones([3], cpu).unwrap();
    assert_eq!(
        err(x.binary_cross_entropy_with_logits(&t34, Some(&ones3), None, Reduction::Mean)),
        "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1"
    );
    for r in [
        x.l1_loss(&t3, Reduction::Mean),
        x.smooth_l1_loss(&t3, Reduction::Mean, 1.0),
        x.huber_loss(&t3, Reduction::Mean, 1.0),
    ] {
        assert_eq!(
            err(r),
            "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1"
        );
    }
    assert_eq!(
        err(x.smooth_l1_loss(&t34, Reduction::Mean, -1.0)),
        "smooth_l1_loss does not support negative values for beta."
    );
    assert_eq!(
        err(x.huber_loss(&t34, Reduction::Mean, 0.0)),
        "huber_loss does not support non-positive values for delta."
    );
    // A long target of an element-wise loss is promoted, as PyTorch's.
    assert_eq!(
        x.l1_loss(&long, Reduction::Mean).unwrap().dtype(),
        DType::F32
    );
    let ft = DynTensor::zeros([3], cpu).unwrap();
    assert_eq!(
        err(x.nll_loss(&ft, None, Reduction::Mean, -100)),
        "expected target dtype to be Long or Byte, but got Float"
    );
    let oob = DynTensor::from_vec(vec![0i64, 1, 4], [3], cpu).unwrap();
    assert_eq!(
        err(x.nll_loss(&oob, None, Reduction::Mean, -100)),
        "Target 4 is out of bounds."
    );
    let short = DynTensor::from_vec(vec![0i64, 1], [2], cpu).unwrap();
    assert_eq!(
        err(x.nll_loss(&short, None, Reduction::Mean, -100)),
        "Expected input batch_size (3) to match target batch_size (2)."
    );
    assert_eq!(
        err(x.nll_loss(&oob.narrow(0, 0, 3).unwrap(), Some(&ones3), Reduction::Mean, 5)),
        "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]"
    );
    // The typed front: the same texts from try_forward.
    let xt = Tensor::<Cpu>::randn([3, 4], Cpu);
    let e = BCEWithLogitsLoss::<Cpu>::new()
        .try_forward(&xt, &Tensor::<Cpu>::zeros([4, 3], Cpu))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Target size (torch.Size([4, 3])) must be the same as input size (torch.Size([3, 4]))"
    );
}

/// On a GPU (the simulator in CI), every loss and gradient equals the CPU's, in f32 and f64.
#[test]
fn cuda_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    check_typed_against_torch(gpu, 1e-12);
    check_nll_against_torch(gpu, 1e-12);
    // f32, fresh inputs: GPU against CPU.
    let x = Tensor::<Cpu>::randn([64, 10], Cpu);
    let p = Tensor::<Cpu>::rand([64, 10], Cpu);
    let (xg, pg) = (Tensor::parameter(x.to(gpu)), p.to(gpu));
    let xc = Tensor::parameter(x.clone());
    for red in [Reduction::Mean, Reduction::Sum] {
        let lc = xc.binary_cross_entropy_with_logits(&p, None, None, red);
        let lg = xg.binary_cross_entropy_with_logits(&pg, None, None, red);
        assert!((lc.item() - lg.to(Cpu).item()).abs() <= 1e-5 * (1.0 + lc.item().abs()));
        lc.backward();
        lg.backward();
        let (gc, gg) = (
            xc.grad().unwrap().to_vec(),
            xg.grad().unwrap().to(Cpu).to_vec(),
        );
        for (a, b) in gc.iter().zip(&gg) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
        xc.zero_grad();
        xg.zero_grad();
    }
    // The dynamic modules: buffers left on the CPU are PyTorch's device error; moved in place
    // with the criterion, the GPU's loss is the CPU's.
    let (cpu, dgpu) = (DynDevice::cpu(), gpu.dyn_device());
    let (xd, pd) = (DynTensor::from(x.clone()), DynTensor::from(p.clone()));
    let (xdg, pdg) = (xd.to(dgpu).unwrap(), pd.to(dgpu).unwrap());
    let w = DynTensor::rand([10], cpu).unwrap();
    let mut bce = DynBCEWithLogitsLoss {
        pos_weight: Some(w.clone()),
        ..Default::default()
    };
    let want = bce.forward(&xd, &pd).unwrap().item::<f32>().unwrap();
    let err = bce.forward(&xdg, &pdg).unwrap_err().to_string();
    assert!(
        err.starts_with("Expected all tensors to be on the same device"),
        "{err}"
    );
    let got = bce.to(dgpu).unwrap().forward(&xdg, &pdg).unwrap();
    let got = got.item::<f32>().unwrap();
    assert!(
        (want - got).abs() <= 1e-5 * (1.0 + want.abs()),
        "{want} vs {got}"
    );
    let logp = DynTensor::from(x.log_softmax(1));
    let t = DynTensor::from_vec((0..64).map(|i| i % 10).collect::<Vec<i64>>(), [64], cpu).unwrap();
    let mut nll = DynNLLLoss {
        weight: Some(w),
        ..Default::default()
    };
    let want = nll.forward(&logp, &t).unwrap().item::<f32>().unwrap();
    let (logp, t) = (logp.to(dgpu).unwrap(), t.to(dgpu).unwrap());
    let err = nll.forward(&logp, &t).unwrap_err().to_string();
    assert!(
        err.starts_with("Expected all tensors to be on the same device"),
        "{err}"
    );
    let got = nll.to(dgpu).unwrap().forward(&logp, &t).unwrap();
    let got = got.item::<f32>().unwrap();
    assert!(
        (want - got).abs() <= 1e-5 * (1.0 + want.abs()),
        "{want} vs {got}"
    );
}
