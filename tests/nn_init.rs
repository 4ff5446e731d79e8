//! `nn::init` against PyTorch's formulas: the bounds and spreads of each initialiser, its
//! errors, the same numbers on every device for the same seed, and `Linear`'s default init
//! being `kaiming_uniform_(a = √5)`.

mod common;

use devtype::nn::init::*;
use devtype::nn::Linear;
use devtype::prelude::*;

/// The stream is one per process and tests run in parallel.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn param(shape: &[usize]) -> Tensor<Cpu> {
    Tensor::parameter(Tensor::<Cpu>::zeros(shape, Cpu))
}

fn stats(v: &[f32]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let max = v.iter().fold(0f64, |m, &x| m.max((x as f64).abs()));
    (mean, var.sqrt(), max)
}

#[test]
fn bounds_and_spreads_are_pytorchs() {
    let _g = RNG.lock().unwrap_or_else(|e| e.into_inner());
    devtype::manual_seed(common::test_seed());
    let shape = [200, 50, 3];
    let (fan_in, fan_out) = (150.0f64, 600.0f64);
    let mut w = param(&shape);
    xavier_uniform_(&mut w, 2.0).unwrap();
    let bound = 2.0 * (6.0 / (fan_in + fan_out)).sqrt();
    let (mean, std, max) = stats(&w.to_vec());
    assert!(max <= bound && max > 0.99 * bound, "{max} vs {bound}");
    assert!((std - bound / 3f64.sqrt()).abs() < 0.02 * bound, "{std}");
    assert!(mean.abs() < 0.02 * bound);

    kaiming_normal_(&mut w, 0.0, FanMode::FanOut, "relu").unwrap();
    let (mean, std, _) = stats(&w.to_vec());
    let want = 2f64.sqrt() / fan_out.sqrt();
    assert!((std - want).abs() < 0.02 * want, "{std} vs {want}");
    assert!(mean.abs() < 0.02 * want);

    xavier_normal_(&mut w, 1.0).unwrap();
    let want = (2.0 / (fan_in + fan_out)).sqrt();
    assert!((stats(&w.to_vec()).1 - want).abs() < 0.02 * want);

    kaiming_uniform_(&mut w, 5f64.sqrt(), FanMode::FanIn, "leaky_relu").unwrap();
    let bound = 1.0 / fan_in.sqrt(); // gain √(2/6) × √(3 / fan_in)
    let max = stats(&w.to_vec()).2;
    assert!(max <= bound * (1.0 + 1e-6) && max > 0.99 * bound);

    uniform_(&mut w, -0.5, 2.0).unwrap();
    let v = w.to_vec();
    assert!(v.iter().all(|&x| (-0.5..2.0).contains(&x)));
    normal_(&mut w, 3.0, 0.5).unwrap();
    let (mean, std, _) = stats(&w.to_vec());
    assert!((mean - 3.0).abs() < 0.01 && (std - 0.5).abs() < 0.01);
    constant_(&mut w, 0.25).unwrap();
    assert!(w.to_vec().iter().all(|&x| x == 0.25));
    ones_(&mut w).unwrap();
    assert!(w.to_vec().iter().all(|&x| x == 1.0));
    zeros_(&mut w).unwrap();
    assert!(w.to_vec().iter().all(|&x| x == 0.0));
    // Still the same parameter: a leaf that tracks gradients.
    assert!(w.requires_grad() && w.is_leaf());
}

#[test]
fn gains_and_errors_are_pytorchs() {
    assert_eq!(calculate_gain("tanh", None).unwrap(), 5.0 / 3.0);
    assert_eq!(calculate_gain("relu", None).unwrap(), 2f64.sqrt());
    assert_eq!(
        calculate_gain("leaky_relu", None).unwrap(),
        (2.0 / (1.0 + 0.01f64 * 0.01)).sqrt()
    );
    assert_eq!(calculate_gain("selu", None).unwrap(), 0.75);
    assert_eq!(
        calculate_gain("gelu", None).unwrap_err().to_string(),
        "Unsupported nonlinearity gelu"
    );
    let mut b = param(&[5]);
    assert_eq!(
        xavier_uniform_(&mut b, 1.0).unwrap_err().to_string(),
        "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    );
    assert!(b.to_vec().iter().all(|&x| x == 0.0));
}

#[test]
fn linear_default_init_is_kaiming_uniform_with_a_sqrt5() {
    let _g = RNG.lock().unwrap_or_else(|e| e.into_inner());
    devtype::manual_seed(11);
    let layer = Linear::<Cpu>::new(40, 30, Cpu);
    let bound = 1.0 / 40f64.sqrt();
    let (_, _, max) = stats(&layer.weight().to_vec());
    assert!(max <= bound && max > 0.95 * bound);
    let (_, _, max) = stats(&layer.bias().unwrap().to_vec());
    assert!(max <= bound);
}

#[test]
fn the_same_seed_gives_the_same_numbers_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let _g = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = param(&[33, 17]);
    let mut g = Tensor::parameter(Tensor::<Cuda<0>>::zeros([33, 17], gpu));
    devtype::manual_seed(5);
    kaiming_uniform_(&mut c, 0.0, FanMode::FanIn, "relu").unwrap();
    xavier_normal_(&mut c, 1.0).unwrap();
    devtype::manual_seed(5);
    kaiming_uniform_(&mut g, 0.0, FanMode::FanIn, "relu").unwrap();
    xavier_normal_(&mut g, 1.0).unwrap();
    assert_eq!(c.to_vec(), g.to(Cpu).to_vec());
}
