//! Mixed precision: `autocast` against products computed by hand from rounded operands, and
//! `GradScaler` against plain optimizer steps (finite gradients), untouched state (non-finite
//! ones) and PyTorch's scale schedule. The GPU case counts host syncs.

mod common;

use common::Rng;
use devtype::amp::{autocast, autocast_dtype, autocast_type, GradScaler};
use devtype::nn::{CrossEntropyLoss, Linear, Module};
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;

fn random(rng: &mut Rng, shape: &[usize]) -> Tensor<Cpu> {
    let n = shape.iter().product();
    let v: Vec<f32> = rng.values(n, -2.0, 2.0).iter().map(|&x| x as f32).collect();
    Tensor::from_vec(v, shape, Cpu)
}

/// `a @ b` in f64 from operands rounded to bf16, rounded once to bf16: what a bf16 product with
/// f32 accumulation gives, to within one bf16 ulp (the f32 sum may round differently).
fn bf16_product(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f32> {
    let r = |x: f32| bf16::from_f32(x).to_f32() as f64;
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            let s: f64 = (0..k).map(|p| r(a[i * k + p]) * r(b[p * n + j])).sum();
            bf16::from_f64(s).to_f32()
        })
        .collect()
}

fn within_one_bf16_ulp(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        let ulp = (bf16::from_f32(*w).to_f32().abs() / 128.0).max(f32::MIN_POSITIVE);
        assert!((g - w).abs() <= ulp, "{g} vs {w}");
    }
}

#[test]
fn autocast_matmul_is_a_bf16_product_in_an_f32_tensor() {
    let mut rng = Rng::new("autocast_matmul");
    for (m, k, n) in [(1, 1, 1), (4, 10, 3), (7, 33, 5)] {
        let (a, b) = (random(&mut rng, &[m, k]), random(&mut rng, &[k, n]));
        let out: Tensor<Cpu> = autocast::<bf16, _>(|| a.matmul(&b));
        within_one_bf16_ulp(
            &out.to_vec(),
            &bf16_product(&a.to_vec(), &b.to_vec(), (m, k, n)),
        );
        // Outside the scope the same product is f32 again, and differs.
        assert_ne!(a.matmul(&b).to_vec(), out.to_vec());
    }
}

#[test]
fn autocast_linear_keeps_f32_parameters_and_f32_gradients() {
    let mut rng = Rng::new("autocast_linear");
    let model = Linear::new(10, 3, Cpu);
    let x = random(&mut rng, &[6, 10]);
    let w_t = model.weight().t().contiguous();
    let y = autocast::<bf16, _>(|| model.forward(&x));
    let mut want = bf16_product(&x.to_vec(), &w_t.to_vec(), (6, 10, 3));
    // The bias is added inside the product (addmm), in f32, then rounded once.
    let bias = model.bias().unwrap().to_vec();
    for (i, v) in want.iter_mut().enumerate() {
        let exact: f64 = (0..10)
            .map(|p| {
                let r = |t: f32| bf16::from_f32(t).to_f32() as f64;
                r(x.to_vec()[(i / 3) * 10 + p]) * r(w_t.to_vec()[p * 3 + i % 3])
            })
            .sum::<f64>()
            + bf16::from_f32(bias[i % 3]).to_f32() as f64;
        *v = bf16::from_f64(exact).to_f32();
    }
    within_one_bf16_ulp(&y.to_vec(), &want);
    y.sum_all().backward();
    let g = model
        .weight()
        .grad()
        .expect("the f32 weight gets a gradient");
    assert_eq!(g.shape(), &[3, 10]);
    // d(sum)/dW[j][p] = sum_i x[i][p]: in f32 up to the bf16 rounding of the cast's gradient.
    let xs = x.to_vec();
    for (jp, gv) in g.to_vec().iter().enumerate() {
        let p = jp % 10;
        let want: f32 = (0..6).map(|i| xs[i * 10 + p]).sum();
        assert!(
            (gv - want).abs() <= 0.02 * want.abs().max(1.0),
            "{gv} vs {want}"
        );
    }
}

#[test]
fn autocast_scopes_nest_restore_and_refuse_full_precision() {
    assert_eq!(autocast_type(), None);
    autocast::<f16, _>(|| {
        assert_eq!(autocast_type(), Some(DType::F16));
        autocast::<bf16, _>(|| assert_eq!(autocast_type(), Some(DType::BF16)));
        assert_eq!(autocast_type(), Some(DType::F16));
    });
    let caught = std::panic::catch_unwind(|| autocast::<f16, _>(|| panic!("inside")));
    assert!(caught.is_err());
    assert_eq!(
        autocast_type(),
        None,
        "a panic inside must not leave autocast on"
    );
    assert!(autocast_dtype(DType::F32, || ()).is_err());
    assert_eq!(
        autocast_dtype(DType::BF16, autocast_type).unwrap(),
        Some(DType::BF16)
    );
    // f64 products are not autocast (PyTorch casts float32 operands only).
    let a = Tensor::<Cpu, f64>::from_vec(vec![1.0 + 1e-9, 2.0], [1, 2], Cpu);
    let b = Tensor::<Cpu, f64>::from_vec(vec![1.0, 1.0], [2, 1], Cpu);
    let out = autocast::<bf16, _>(|| a.matmul(&b));
    assert_eq!(out.to_vec(), vec![3.0 + 1e-9]);
}

#[test]
fn dyn_autocast_runs_products_in_the_given_type() {
    let a =
        DynTensor::from_vec(vec![1.0f32 + 1.0 / 1024.0, 0.0], [1, 2], DynDevice::cpu()).unwrap();
    let b = DynTensor::from_vec(vec![1.0f32, 1.0], [2, 1], DynDevice::cpu()).unwrap();
    let out = autocast_dtype(DType::BF16, || a.matmul(&b))
        .unwrap()
        .unwrap();
    assert_eq!(out.dtype(), DType::F32);
    // 1 + 2^-10 is not a bf16 (8 bits of mantissa): it rounds to 1.
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.0]);
}

/// A model and a batch whose loss has finite gradients.
fn setup(seed: &str) -> (Linear<Cpu>, Tensor<Cpu>, Tensor<Cpu, i64>) {
    let mut rng = Rng::new(seed);
    let model = Linear::new(5, 3, Cpu);
    let x = random(&mut rng, &[8, 5]);
    let y = Tensor::from_vec((0..8).map(|i| i % 3).collect(), [8], Cpu);
    (model, x, y)
}

/// Another model with the same values and parameters of its own (`clone` shares them).
fn copy_of(m: &Linear<Cpu>) -> Linear<Cpu> {
    Linear::from_parameters(m.weight().detach(), m.bias().map(|b| b.detach()))
}

fn params(m: &Linear<Cpu>) -> Vec<Vec<f32>> {
    m.parameters().iter().map(|p| p.to_vec()).collect()
}

/// One scaled step of `model` per entry of `poison`; where it holds, the weight's gradient is
/// replaced by `bad` (inf or NaN) before the scaler steps, so the scaler skips that step.
fn scaled_steps<O: Optimizer<Cpu>>(
    model: &mut Linear<Cpu>,
    (x, y): (&Tensor<Cpu>, &Tensor<Cpu, i64>),
    opt: &mut O,
    scaler: &mut GradScaler<Cpu>,
    poison: &[bool],
    bad: f32,
) {
    let loss_fn = CrossEntropyLoss::new();
    for &poison in poison {
        model.zero_grad();
        scaler
            .scale(loss_fn.forward(&model.forward(x), y))
            .backward();
        if poison {
            let w = model.weight();
            w.try_set_grad(Some(Tensor::full([3, 5], bad, Cpu)))
                .unwrap();
        }
        scaler.step(opt, model);
        scaler.update();
    }
}

/// `n` plain (unscaled) steps of `model`.
fn plain_steps<O: Optimizer<Cpu>>(
    model: &mut Linear<Cpu>,
    (x, y): (&Tensor<Cpu>, &Tensor<Cpu, i64>),
    opt: &mut O,
    n: usize,
) {
    let loss_fn = CrossEntropyLoss::new();
    for _ in 0..n {
        opt.zero_grad(model);
        loss_fn.forward(&model.forward(x), y).backward();
        opt.step(model);
    }
}

/// The same start run two ways: `poison.len()` scaled steps (poisoned where marked, with
/// `bad`) and `plain` plain steps, each with its own optimizer from `make`.
struct ScaledAndPlain<O> {
    scaled: Vec<Vec<f32>>,
    plain: Vec<Vec<f32>>,
    scaler: GradScaler<Cpu>,
    scaled_opt: O,
    plain_opt: O,
}

fn scaled_and_plain<O: Optimizer<Cpu>>(
    seed: &str,
    make: impl Fn() -> O,
    poison: &[bool],
    bad: f32,
    plain: usize,
) -> ScaledAndPlain<O> {
    let (mut model, x, y) = setup(seed);
    let mut reference = copy_of(&model);
    let (mut scaled_opt, mut plain_opt) = (make(), make());
    let mut scaler = GradScaler::new(Cpu);
    scaled_steps(
        &mut model,
        (&x, &y),
        &mut scaled_opt,
        &mut scaler,
        poison,
        bad,
    );
    plain_steps(&mut reference, (&x, &y), &mut plain_opt, plain);
    ScaledAndPlain {
        scaled: params(&model),
        plain: params(&reference),
        scaler,
        scaled_opt,
        plain_opt,
    }
}

#[test]
fn a_finite_step_is_the_plain_step() {
    let run = scaled_and_plain(
        "scaler_finite",
        || Sgd::new(0.1).momentum(0.9),
        &[false; 3],
        f32::NAN,
        3,
    );
    // The scale is a power of two: scaling and unscaling are exact.
    assert_eq!(run.scaled, run.plain);
    assert_eq!(run.scaler.get_scale(), 65536.0);
    assert_eq!(run.scaler.growth_tracker(), 3);
}

#[test]
fn a_non_finite_gradient_skips_the_step_and_backs_off() {
    for adam in [false, true] {
        let (mut model, x, y) = setup("scaler_inf");
        let loss_fn = CrossEntropyLoss::new();
        let mut sgd = Sgd::new(0.1).momentum(0.9);
        let mut adam_opt = Adam::new(0.01);
        let mut scaler = GradScaler::new(Cpu);
        let mut step = |model: &mut Linear<Cpu>, scaler: &mut GradScaler<Cpu>, poison: bool| {
            model.zero_grad();
            scaler
                .scale(loss_fn.forward(&model.forward(&x), &y))
                .backward();
            if poison {
                let w = model.weight();
                let mut g = w.grad().unwrap().to_vec();
                g[3] = f32::INFINITY;
                w.try_set_grad(Some(Tensor::from_vec(g, [3, 5], Cpu)))
                    .unwrap();
            }
            if adam {
                scaler.step(&mut adam_opt, model);
            } else {
                scaler.step(&mut sgd, model);
            }
            scaler.update();
        };
        step(&mut model, &mut scaler, false); // creates the optimizer state
        let before = params(&model);
        step(&mut model, &mut scaler, true);
        assert_eq!(
            params(&model),
            before,
            "adam={adam}: a skipped step changed a parameter"
        );
        assert_eq!(scaler.get_scale(), 32768.0);
        assert_eq!(scaler.growth_tracker(), 0);
        step(&mut model, &mut scaler, false);
        assert_ne!(
            params(&model),
            before,
            "adam={adam}: the next good step runs"
        );
    }
}

#[test]
fn a_skipped_step_leaves_momentum_as_it_was() {
    // good, poisoned (skipped), good: the same as two plain good steps.
    let run = scaled_and_plain(
        "scaler_momentum",
        || Sgd::new(0.1).momentum(0.9),
        &[false, true, false],
        f32::NAN,
        2,
    );
    // The scale halved in between; unscaling by 1/32768 is exact too.
    assert_eq!(run.scaled, run.plain);
}

#[test]
fn a_skipped_adam_step_does_not_count_in_the_bias_corrections() {
    // Skipped first (before any state exists), good, skipped, good, good: PyTorch calls
    // `step` three times, so Adam's step count, and its bias corrections, are those of three
    // plain steps. Counting the skipped ones would make the corrections of steps 5, not 3.
    let run = scaled_and_plain(
        "scaler_adam_count",
        || Adam::new(0.01),
        &[true, false, true, false, false],
        f32::INFINITY,
        3,
    );
    let (a, b) = (&run.scaled, &run.plain);
    for (u, v) in a.iter().flatten().zip(b.iter().flatten()) {
        // The corrections come from f64 `pow` on the tensor side and `powi` on the host:
        // they may differ in the last f32 bit.
        assert!((u - v).abs() <= 1e-6 * v.abs().max(1e-3), "{a:?} vs {b:?}");
    }
    let (m, v) = run.scaled_opt.moments("weight").unwrap();
    let (rm, rv) = run.plain_opt.moments("weight").unwrap();
    assert_eq!(m.to_vec(), rm.to_vec());
    assert_eq!(v.to_vec(), rv.to_vec());
}

#[test]
fn the_scale_grows_after_the_interval_but_never_to_inf() {
    let (mut model, x, y) = setup("scaler_growth");
    let loss_fn = CrossEntropyLoss::new();
    let mut opt = Sgd::new(0.01);
    let mut scaler = GradScaler::try_with(Cpu, 4.0, 2.0, 0.5, 3).unwrap();
    let mut seen = Vec::new();
    for _ in 0..7 {
        opt.zero_grad(&model);
        scaler
            .scale(loss_fn.forward(&model.forward(&x), &y))
            .backward();
        scaler.step(&mut opt, &mut model);
        scaler.update();
        seen.push((scaler.get_scale(), scaler.growth_tracker()));
    }
    assert_eq!(
        seen,
        vec![
            (4.0, 1),
            (4.0, 2),
            (8.0, 0),
            (8.0, 1),
            (8.0, 2),
            (16.0, 0),
            (16.0, 1)
        ]
    );
    let mut huge = GradScaler::try_with(Cpu, f32::MAX / 1.5, 2.0, 0.5, 1).unwrap();
    opt.zero_grad(&model);
    loss_fn.forward(&model.forward(&x), &y).backward(); // unscaled: finite grads
    huge.step(&mut opt, &mut model);
    huge.update();
    assert_eq!(
        huge.get_scale(),
        f32::MAX / 1.5,
        "growing to inf is not applied"
    );
    assert_eq!(huge.growth_tracker(), 0);
}

#[test]
fn settings_and_call_order_are_checked_as_in_pytorch() {
    let err = |r: devtype::Result<GradScaler<Cpu>>| r.unwrap_err().to_string();
    assert!(err(GradScaler::try_with(Cpu, 1.0, 1.0, 0.5, 1))
        .contains("The growth factor must be > 1.0."));
    assert!(err(GradScaler::try_with(Cpu, 1.0, 2.0, 1.0, 1))
        .contains("The backoff factor must be < 1.0."));
    assert!(GradScaler::try_with(Cpu, f32::NAN, 2.0, 0.5, 1).is_err());
    assert!(GradScaler::try_with(Cpu, 1.0, 2.0, 0.5, 0).is_err());
    let (model, x, y) = setup("scaler_twice");
    let mut scaler = GradScaler::new(Cpu);
    scaler
        .scale(CrossEntropyLoss::new().forward(&model.forward(&x), &y))
        .backward();
    scaler.try_unscale_(&model).unwrap();
    let e = scaler.try_unscale_(&model).unwrap_err().to_string();
    assert!(
        e.contains("unscale_() has already been called on this optimizer since the last update()."),
        "{e}"
    );
    scaler.update();
    assert_eq!(scaler.get_scale(), 65536.0);
}

#[test]
fn a_gpu_amp_step_makes_no_host_sync() {
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::thread_sync_count;
    let mut model = Linear::new(10, 3, Cpu).to(gpu);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut scaler = GradScaler::new(gpu);
    let loss_fn = CrossEntropyLoss::new();
    let x = Tensor::<Cpu>::randn([8, 10], Cpu).to(gpu);
    let y = Tensor::<Cpu, i64>::from_vec((0..8).map(|i| i % 3).collect(), [8], Cpu).to(gpu);
    let mut adam = Adam::new(0.01);
    let before = thread_sync_count();
    for k in 0..6 {
        opt.zero_grad(&model);
        scaler
            .scale(loss_fn.forward(&model.forward(&x), &y))
            .backward();
        // Sgd, then Adam (its step count lives on the device).
        if k < 3 {
            scaler.step(&mut opt, &mut model);
        } else {
            scaler.step(&mut adam, &mut model);
        }
        scaler.update();
    }
    assert_eq!(
        thread_sync_count(),
        before,
        "an AMP step waited for the GPU"
    );
    assert_eq!(scaler.get_scale(), 65536.0);
}

#[test]
fn unscaling_in_place_leaves_a_held_gradient_as_it_was() {
    let (model, x, y) = setup("scaler_held_grad");
    let mut scaler = GradScaler::new(Cpu);
    scaler
        .scale(CrossEntropyLoss::new().forward(&model.forward(&x), &y))
        .backward();
    let held = model.weight().grad().unwrap();
    let scaled = held.to_vec();
    scaler.unscale_(&model);
    // The parameter's gradient is unscaled (exactly: the scale is a power of two) ...
    let unscaled = model.weight().grad().unwrap().to_vec();
    let want: Vec<f32> = scaled.iter().map(|g| g / 65536.0).collect();
    assert_eq!(unscaled, want);
    // ... and the handle taken before keeps the values it had.
    assert_eq!(held.to_vec(), scaled);
}

/// Gradients of `shape` with values in [-2, 2), times `scale`, with `inf` at `poison`.
fn scaled_grad(rng: &mut Rng, shape: [usize; 2], scale: f32, poison: Option<usize>) -> Vec<f32> {
    let mut g: Vec<f32> = rng
        .values(shape[0] * shape[1], -2.0, 2.0)
        .iter()
        .map(|&v| v as f32 * scale)
        .collect();
    if let Some(at) = poison {
        g[at] = f32::INFINITY;
    }
    g
}

/// What one scaled run on `dev` leaves after each step: parameters, unscaled weight gradient,
/// scale and growth count.
type Trace = Vec<(Vec<Vec<f32>>, Vec<f32>, f32, u32)>;

/// Five scaled steps of a `Linear(40, 30)` on `dev` with gradients set by hand (the same on
/// every device: no product rounds differently): skipped first (the optimizer state is created
/// by a skipped step), good, good (the scale grows), skipped, good. `rng` draws the data:
/// runs to be compared start from one state.
fn scaled_run<D: Device + HostSync>(dev: D, adam: bool, mut rng: Rng) -> Trace {
    let (w, b) = (random(&mut rng, &[30, 40]), random(&mut rng, &[30]));
    let mut model = Linear::from_parameters(w, Some(b)).to(dev);
    let mut scaler = GradScaler::try_with(dev, 1024.0, 2.0, 0.5, 2).unwrap();
    let mut sgd = Sgd::new(0.1).momentum(0.9);
    let mut adam_opt = Adam::new(0.01);
    let mut trace = Vec::new();
    for poison in [Some(7), None, None, Some(1199), None] {
        let scale = scaler.get_scale();
        let gw = scaled_grad(&mut rng, [30, 40], scale, poison);
        let gb = scaled_grad(&mut rng, [1, 30], scale, None);
        let upload = |v: Vec<f32>, shape: &[usize]| Tensor::from_vec(v, shape, Cpu).to(dev);
        model
            .weight()
            .try_set_grad(Some(upload(gw, &[30, 40])))
            .unwrap();
        model
            .bias()
            .unwrap()
            .try_set_grad(Some(upload(gb, &[30])))
            .unwrap();
        if adam {
            scaler.step(&mut adam_opt, &mut model);
        } else {
            scaler.step(&mut sgd, &mut model);
        }
        scaler.update();
        let params = model
            .parameters()
            .iter()
            .map(|p| p.to(Cpu).to_vec())
            .collect();
        let grad = model.weight().grad().unwrap().to(Cpu).to_vec();
        trace.push((params, grad, scaler.get_scale(), scaler.growth_tracker()));
    }
    trace
}

#[test]
fn a_scaled_run_skips_backs_off_and_grows_on_schedule() {
    for adam in [false, true] {
        let trace = scaled_run(Cpu, adam, Rng::new("scaled_run"));
        let schedule: Vec<(f32, u32)> = trace.iter().map(|t| (t.2, t.3)).collect();
        assert_eq!(
            schedule,
            [(512.0, 0), (512.0, 1), (1024.0, 0), (512.0, 0), (512.0, 1)]
        );
        // Skipped steps change nothing; the others do.
        assert_ne!(trace[1].0, trace[0].0, "adam={adam}");
        assert_ne!(trace[2].0, trace[1].0, "adam={adam}");
        assert_eq!(trace[3].0, trace[2].0, "adam={adam}");
        assert_ne!(trace[4].0, trace[3].0, "adam={adam}");
        assert!(trace[3].1.iter().any(|g| g.is_infinite()));
    }
}

#[test]
fn gpu_loss_scaling_matches_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    for adam in [false, true] {
        // One seed for both runs: the CPU and the GPU must see the same data.
        let seed = Rng::new("scaled_run").0;
        let (on_cpu, on_gpu) = (
            scaled_run(Cpu, adam, Rng(seed)),
            scaled_run(gpu, adam, Rng(seed)),
        );
        for (step, (c, g)) in on_cpu.iter().zip(&on_gpu).enumerate() {
            // The schedule and the unscaled gradients agree exactly (power-of-two scales).
            assert_eq!((g.2, g.3), (c.2, c.3), "adam={adam}, step {step}");
            assert_eq!(g.1, c.1, "adam={adam}, step {step}");
            for (pg, pc) in g.0.iter().zip(&c.0) {
                for (a, b) in pg.iter().zip(pc) {
                    // The GPU may contract a multiply and an add into one FMA.
                    assert!(
                        (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                        "adam={adam}, step {step}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
