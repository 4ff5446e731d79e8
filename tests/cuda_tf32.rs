//! `devtype::cuda::matmul::set_allow_tf32`, PyTorch's `torch.backends.cuda.matmul.allow_tf32`:
//! off by default; on, f32 products on the GPU round their inputs to TF32's 10-bit mantissa
//! (relative error near 1e-3), off they stay within f32's rounding (near 1e-6). Its own test
//! binary: the switch is process-wide and would change the tolerances of other tests.
//!
//! Without a GPU the test prints why it skips and passes; with `DEVTYPE_REQUIRE_CUDA=1` a
//! missing GPU fails.

mod common;

use devtype::cuda::matmul::{allow_tf32, set_allow_tf32};
use devtype::prelude::*;

/// The largest error of `got` against the f64 product of `a` and `b`, relative to the sum of
/// `|a_ik * b_kj|` of each entry (the scale of its rounding error).
fn worst_relative_error(got: &[f32], a: &[f64], b: &[f64], n: usize) -> f64 {
    let mut worst = 0.0f64;
    for i in 0..n {
        for j in 0..n {
            let (mut exact, mut scale) = (0.0, 0.0);
            for k in 0..n {
                exact += a[i * n + k] * b[k * n + j];
                scale += (a[i * n + k] * b[k * n + j]).abs();
            }
            worst = worst.max((got[i * n + j] as f64 - exact).abs() / scale);
        }
    }
    worst
}

#[test]
fn allow_tf32_is_off_by_default_and_trades_precision_for_speed_when_on() {
    assert!(
        !allow_tf32(),
        "TF32 must be off unless asked for (PyTorch's default)"
    );
    let Some(gpu) = common::gpu() else { return };
    let n = 256;
    devtype::manual_seed(common::test_seed());
    let a = Tensor::<Cpu>::randn([n, n], Cpu);
    let b = Tensor::<Cpu>::randn([n, n], Cpu);
    let (a64, b64) = (a.to_dtype::<f64>().to_vec(), b.to_dtype::<f64>().to_vec());
    let (ga, gb) = (a.to(gpu), b.to(gpu));
    let full = ga.matmul(&gb).to_vec();
    set_allow_tf32(true);
    let tf32 = ga.matmul(&gb).to_vec();
    set_allow_tf32(false);
    let again = ga.matmul(&gb).to_vec();
    let (e_full, e_tf32, e_again) = (
        worst_relative_error(&full, &a64, &b64, n),
        worst_relative_error(&tf32, &a64, &b64, n),
        worst_relative_error(&again, &a64, &b64, n),
    );
    eprintln!("worst relative error: f32 {e_full:.2e}, TF32 {e_tf32:.2e}, f32 again {e_again:.2e}");
    // f32: within a few units of f32 rounding; TF32: inputs carry 2^-11 relative error each.
    assert!(e_full < 2e-5, "f32 product: {e_full}");
    assert!(
        e_again < 1e-5,
        "f32 product after switching back: {e_again}"
    );
    assert!(e_tf32 < 4e-3, "TF32 product: {e_tf32}");
    assert!(
        e_tf32 > 10.0 * e_full,
        "TF32 was not used: {e_tf32} vs {e_full}"
    );
}
