//! Gradients and optimizer steps on the GPU against the CPU: the backward kernels (bias sums,
//! relu, cross-entropy, scatter/index adds) and the fused SGD/Adam updates.
//!
//! Skips with a printed reason without a GPU, unless `DEVTYPE_REQUIRE_CUDA=1`.

mod common;

use devtype::nn::Reduction;
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;
use devtype::Result;

const CPU: DynDevice = DynDevice::cpu();
const GPU: DynDevice = DynDevice::cuda(0);

fn data(shape: &[usize], dtype: DType) -> DynTensor {
    DynTensor::randn(shape, CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// Integers in `[0, n)` as i64, on the CPU.
fn ids(len: usize, n: usize, ignore_every: usize) -> DynTensor {
    let u = DynTensor::rand([len], CPU)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let v: Vec<i64> = u
        .iter()
        .enumerate()
        .map(|(i, x)| {
            if ignore_every > 0 && i % ignore_every == 3 {
                -100
            } else {
                ((x * n as f32) as i64).min(n as i64 - 1)
            }
        })
        .collect();
    DynTensor::from_vec(v, [len], CPU).unwrap()
}

#[track_caller]
fn assert_close(got: &DynTensor, want: &DynTensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    let g = got
        .to(CPU)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let w = want.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let eps = if want.dtype() == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= eps * 256.0 * (1.0 + a.abs().max(b.abs())),
            "{what}: element {i}: GPU {a:e} vs CPU {b:e}"
        );
    }
}

/// A small model whose backward pass uses every backward kernel: index_select (index_add),
/// linear (GEMMs and the bias sum), relu, gather (scatter_add) and cross-entropy.
fn grads(
    dev: DynDevice,
    init: &[DynTensor],
    inputs: &[DynTensor],
    reduction: Reduction,
) -> Result<Vec<DynTensor>> {
    let params: Vec<DynTensor> = init
        .iter()
        .map(|t| DynTensor::parameter(t.to(dev).unwrap()).unwrap())
        .collect();
    let [w1, b1, w2, b2, table] = &params[..] else {
        unreachable!()
    };
    let [x, rows, picks, targets, weight] = inputs else {
        unreachable!()
    };
    let on = |t: &DynTensor| t.to(dev).unwrap();
    let emb = table.index_select(0, &on(rows))?;
    let h = on(x).add(&emb)?.linear(w1, Some(b1))?.relu()?;
    let logits = h.linear(w2, Some(b2))?;
    let picked = logits.gather(1, &on(picks))?.sum_all()?.mul_scalar(0.1)?;
    let loss = logits.cross_entropy_with(&on(targets), Some(&on(weight)), reduction, -100)?;
    let loss = if reduction == Reduction::None {
        loss.sum_all()?
    } else {
        loss
    };
    loss.add(&picked)?.backward()?;
    Ok(params
        .iter()
        .map(|p| p.grad().expect("a gradient"))
        .collect())
}

#[test]
fn gradients_on_the_gpu_match_the_cpu() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64] {
        let (batch, features, hidden, classes, vocab) = (37, 16, 24, 5, 10);
        let init = vec![
            data(&[hidden, features], dtype),
            data(&[hidden], dtype),
            data(&[classes, hidden], dtype),
            data(&[classes], dtype),
            data(&[vocab, features], dtype),
        ];
        let picks =
            DynTensor::stack(&[&ids(batch, classes, 0), &ids(batch, classes, 0)], 1).unwrap();
        let weight = DynTensor::rand([classes], CPU)
            .unwrap()
            .add_scalar(0.5)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let inputs = vec![
            data(&[batch, features], dtype),
            ids(batch, vocab, 0),
            picks,
            ids(batch, classes, 7),
            weight,
        ];
        for reduction in [Reduction::Mean, Reduction::Sum, Reduction::None] {
            let want = grads(CPU, &init, &inputs, reduction).unwrap();
            let got = grads(GPU, &init, &inputs, reduction).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.device(), GPU);
                assert_close(
                    g,
                    w,
                    &format!("gradient of parameter {i}, {dtype:?}, {reduction:?}"),
                );
            }
        }
    }
}

fn sgd<D: Device>() -> Sgd<D, f64> {
    Sgd::new(0.1)
        .momentum(0.9)
        .dampening(0.0) // Nesterov needs zero dampening (as torch.optim.SGD)
        .weight_decay(0.01)
        .nesterov(true)
}

#[test]
fn optimizer_steps_on_the_gpu_match_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let start = Tensor::<Cpu, f64>::from_vec(
        (0..300).map(|i| (i as f64 * 0.37).sin()).collect(),
        [30, 10],
        Cpu,
    );
    let grads: Vec<Tensor<Cpu, f64>> = (0..4)
        .map(|s| {
            Tensor::from_vec(
                (0..300)
                    .map(|i| ((i * 7 + s * 13) as f64 * 0.11).cos())
                    .collect(),
                [30, 10],
                Cpu,
            )
        })
        .collect();
    let adam = || Adam::new(0.01).weight_decay(0.1);
    let adamw = || Adam::new(0.01).decoupled_weight_decay(0.1);

    let mut cpu_p = Tensor::parameter(start.clone());
    let mut gpu_p = Tensor::parameter(start.to(gpu));
    let (mut cpu_opt, mut gpu_opt) = (sgd::<Cpu>(), sgd::<Cuda<0>>());
    for g in &grads {
        cpu_p.try_set_grad(Some(g.clone())).unwrap();
        gpu_p.try_set_grad(Some(g.to(gpu))).unwrap();
        cpu_opt.step(&mut cpu_p);
        gpu_opt.step(&mut gpu_p);
    }
    assert_close(
        &gpu_p.detach().into_dyn(),
        &cpu_p.detach().into_dyn(),
        "SGD parameters",
    );
    let (cb, gb): (Tensor<Cpu, f64>, Tensor<Cuda<0>, f64>) = (
        cpu_opt.momentum_buffer("").unwrap(),
        gpu_opt.momentum_buffer("").unwrap(),
    );
    assert_close(&gb.into_dyn(), &cb.into_dyn(), "SGD momentum");

    for (name, make) in [
        ("Adam", &adam as &dyn Fn() -> Adam<Cpu, f64>),
        ("AdamW", &adamw),
    ] {
        let mut cpu_p = Tensor::parameter(start.clone());
        let mut gpu_p = Tensor::parameter(start.to(gpu));
        let mut cpu_opt = make();
        let mut gpu_opt: Adam<Cuda<0>, f64> = make().to(gpu);
        for g in &grads {
            cpu_p.try_set_grad(Some(g.clone())).unwrap();
            gpu_p.try_set_grad(Some(g.to(gpu))).unwrap();
            cpu_opt.step(&mut cpu_p);
            gpu_opt.step(&mut gpu_p);
        }
        assert_close(&gpu_p.detach().into_dyn(), &cpu_p.detach().into_dyn(), name);
        let (cm, cv) = cpu_opt.moments("").unwrap();
        let (gm, gv) = gpu_opt.moments("").unwrap();
        assert_close(&gm.into_dyn(), &cm.into_dyn(), "first moments");
        assert_close(&gv.into_dyn(), &cv.into_dyn(), "second moments");
    }

    // A parameter shared with another handle is copied before the in-place update.
    let mut p = Tensor::parameter(Tensor::<Cuda<0>, f64>::ones([4], gpu));
    let other = p.detach();
    p.try_set_grad(Some(Tensor::ones([4], gpu))).unwrap();
    Sgd::new(0.5).step(&mut p);
    assert_eq!(other.to_vec(), vec![1.0; 4]);
    assert_eq!(p.detach().to_vec(), vec![0.5; 4]);
}

/// A GPU optimizer whose state belongs to another model: an `Err` before any kernel runs (the
/// fused kernels would read and write past the smaller buffer), and nothing changes.
#[test]
fn optimizer_state_of_another_shape_is_refused_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let with_grad = |n: usize| {
        let p = Tensor::parameter(Tensor::<Cpu, f64>::ones([n], Cpu).to(gpu));
        p.try_set_grad(Some(Tensor::<Cpu, f64>::ones([n], Cpu).to(gpu)))
            .unwrap();
        p
    };
    let (mut small, mut big) = (with_grad(2), with_grad(1 << 16));
    let mut sgd = Sgd::<Cuda<0>, f64>::new(0.1).momentum(0.9);
    sgd.step(&mut small);
    let err = sgd.try_step(&mut big).unwrap_err().to_string();
    assert!(err.contains("[2]") && err.contains("[65536]"), "{err}");
    let mut adam = Adam::<Cuda<0>, f64>::new(0.1);
    adam.step(&mut small);
    assert!(adam.try_step(&mut big).is_err());
    assert!(
        big.to_vec().iter().all(|&v| v == 1.0),
        "a failed step changed the parameter"
    );
}

/// `max_all`/`min_all` and `maximum` at NaN and ties, on the GPU, with PyTorch's gradients.
#[test]
fn max_min_gradients_at_nan_and_ties_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let nan = f64::NAN;
    let grad = |x: &[f64], max: bool| {
        let v = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(x.to_vec(), [x.len()], Cpu).to(gpu));
        if max { v.max_all() } else { v.min_all() }.backward();
        v.grad().unwrap().to_vec()
    };
    assert_eq!(grad(&[1.0, nan, 3.0], true), [0.0, 1.0, 0.0]);
    assert_eq!(grad(&[nan, 1.0, nan], false), [0.5, 0.0, 0.5]);
    assert_eq!(grad(&[3.0, 1.0, 3.0], true), [0.5, 0.0, 0.5]);
    let a = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(vec![1.0, 2.0, nan], [3], Cpu).to(gpu));
    let b = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(vec![2.0, 2.0, 1.0], [3], Cpu).to(gpu));
    a.maximum(&b).sum_all().backward();
    // Over a dim, the NaN is the max and the min, at its index (the backward's route).
    let x = Tensor::<Cpu, f64>::from_vec(vec![1.0, nan, 3.0, 4.0, 2.0, 4.0], [2, 3], Cpu).to(gpu);
    let (mx, mn) = (x.max(1).values.to_vec(), x.min(1).values.to_vec());
    assert!(mx[0].is_nan() && mx[1] == 4.0 && mn[0].is_nan() && mn[1] == 2.0);
    assert_eq!(x.argmax(1).to_vec(), [1, 0]);
    assert_eq!(x.argmin(1).to_vec(), [1, 1]);
    assert_eq!(a.grad().unwrap().to_vec(), [0.0, 0.5, 1.0]);
    assert_eq!(b.grad().unwrap().to_vec(), [1.0, 0.5, 1.0]);
}
