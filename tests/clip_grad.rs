//! `clip_grad_norm_` and `clip_grad_value_` against f64 references on fresh random
//! gradients: the total norm (2, inf, -inf, 1, 0 and a general p), the clip coefficient
//! `max_norm / (total + 1e-6)` clamped to 1, each parameter once, PyTorch's error text, and
//! no host sync on a GPU.

mod common;

use devtype::nn::utils::{clip_grad_norm_, clip_grad_value_, try_clip_grad_norm_};
use devtype::nn::Module;
use devtype::prelude::*;

/// Parameters of the given shapes with random gradients (scaled so that some norms exceed
/// `max_norm` and some do not); the gradients as f64.
fn params_with_grads<D: Device>(
    shapes: &[&[usize]],
    scale: f32,
    dev: D,
) -> (Vec<Tensor<D>>, Vec<Vec<f64>>) {
    let mut params = Vec::new();
    let mut grads = Vec::new();
    for shape in shapes {
        let p = Tensor::parameter(Tensor::<Cpu>::randn(*shape, Cpu).to(dev));
        let g: Vec<f32> = Tensor::<Cpu>::randn(*shape, Cpu)
            .to_vec()
            .iter()
            .map(|v| v * scale)
            .collect();
        grads.push(g.iter().map(|&v| v as f64).collect());
        p.try_set_grad(Some(Tensor::<Cpu>::from_vec(g, *shape, Cpu).to(dev)))
            .unwrap();
        params.push(p);
    }
    (params, grads)
}

/// The f64 reference: the norm of the per-gradient norms.
fn reference_norm(grads: &[Vec<f64>], p: f64) -> f64 {
    let norm = |v: &[f64]| -> f64 {
        if p == 0.0 {
            v.iter().filter(|x| **x != 0.0).count() as f64
        } else if p == f64::INFINITY {
            v.iter().fold(0.0, |m, x| m.max(x.abs()))
        } else if p == f64::NEG_INFINITY {
            v.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()))
        } else {
            v.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
        }
    };
    let norms: Vec<f64> = grads.iter().map(|g| norm(g)).collect();
    norm(&norms)
}

fn grads_of<D: Device + HostSync>(params: &[Tensor<D>]) -> Vec<Vec<f64>> {
    params
        .iter()
        .map(|p| {
            p.grad()
                .unwrap()
                .to(Cpu)
                .to_vec()
                .iter()
                .map(|&v| v as f64)
                .collect()
        })
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    let tol = 1e-5 * b.abs().max(1.0);
    assert!((a - b).abs() <= tol, "{what}: {a} vs reference {b}");
}

#[test]
fn clip_grad_norm_matches_an_f64_reference_for_every_norm_type() {
    let seed = common::test_seed();
    devtype::manual_seed(seed);
    let shapes: &[&[usize]] = &[&[7, 5], &[5], &[3, 4, 2], &[1]];
    for &p in &[2.0, f64::INFINITY, f64::NEG_INFINITY, 1.0, 3.5, 0.0] {
        for &(scale, max_norm) in &[(1.0f32, 0.5), (0.01, 100.0), (3.0, 2.0)] {
            let (params, grads) = params_with_grads(shapes, scale, Cpu);
            let total = clip_grad_norm_(&params, max_norm, p);
            assert_eq!(total.shape(), &[] as &[usize]);
            let want = reference_norm(&grads, p);
            close(
                total.item() as f64,
                want,
                &format!("total norm p={p} (seed {seed})"),
            );
            // PyTorch's coefficient, from the norm as computed (f32), clamped to 1.
            let t = total.item();
            let coef = (max_norm as f32 / (t + 1e-6)).min(1.0) as f64;
            for (got, g) in grads_of(&params).iter().zip(&grads) {
                for (x, y) in got.iter().zip(g) {
                    close(
                        *x,
                        y * coef,
                        &format!("clipped gradient p={p} (seed {seed})"),
                    );
                }
            }
        }
    }
}

#[test]
fn a_tied_parameter_is_counted_and_scaled_once() {
    devtype::manual_seed(common::test_seed());
    let (params, grads) = params_with_grads(&[&[4, 3], &[3]], 2.0, Cpu);
    // The same parameter listed twice (a tied weight): one gradient, counted once.
    let tied = vec![params[0].clone(), params[1].clone(), params[0].clone()];
    let total = clip_grad_norm_(&tied, 0.1, 2.0);
    close(
        total.item() as f64,
        reference_norm(&grads, 2.0),
        "total norm",
    );
    let coef = (0.1f32 / (total.item() + 1e-6)).min(1.0) as f64;
    for (got, g) in grads_of(&params).iter().zip(&grads) {
        for (x, y) in got.iter().zip(g) {
            close(*x, y * coef, "scaled once");
        }
    }
}

#[test]
fn parameters_without_gradients_are_skipped_and_no_gradient_gives_zero() {
    let w = Tensor::parameter(Tensor::<Cpu>::ones([3], Cpu));
    assert_eq!(clip_grad_norm_(&w, 1.0, 2.0).item(), 0.0);
    assert!(w.grad().is_none());
    let (mut params, grads) = params_with_grads(&[&[5]], 10.0, Cpu);
    params.push(w.clone());
    let total = clip_grad_norm_(&params, 1.0, 2.0);
    close(total.item() as f64, reference_norm(&grads, 2.0), "norm");
    assert!(w.grad().is_none());
}

#[test]
fn a_non_finite_norm_is_pytorchs_error_and_changes_nothing() {
    for (bad, p, text) in [
        (f32::INFINITY, 2.0, "2.0"),
        (f32::NAN, f64::INFINITY, "inf"),
        (f32::INFINITY, 1.0, "1.0"),
    ] {
        let w = Tensor::parameter(Tensor::<Cpu>::zeros([3], Cpu));
        w.try_set_grad(Some(Tensor::from_vec(vec![bad, 1.0, 2.0], [3], Cpu)))
            .unwrap();
        let err = try_clip_grad_norm_(&w, 1.0, p, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("The total norm of order {text} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        );
        let g = w.grad().unwrap().to_vec();
        assert_eq!(g[1..], [1.0, 2.0], "a failed clip changed the gradient");
        // Without the check, the gradients are scaled by the non-finite norm (as PyTorch).
        let total = try_clip_grad_norm_(&w, 1.0, p, false).unwrap();
        assert!(!total.item().is_finite());
    }
}

#[test]
fn clip_grad_value_clamps_each_gradient_once() {
    devtype::manual_seed(common::test_seed());
    let (params, grads) = params_with_grads(&[&[6, 4], &[4]], 2.0, Cpu);
    let tied = vec![params[0].clone(), params[1].clone(), params[0].clone()];
    clip_grad_value_(&tied, 0.7);
    for (got, g) in grads_of(&params).iter().zip(&grads) {
        for (x, y) in got.iter().zip(g) {
            assert_eq!(*x, (*y as f32).clamp(-0.7, 0.7) as f64);
        }
    }
    let w = Tensor::parameter(Tensor::<Cpu>::zeros([2], Cpu));
    w.try_set_grad(Some(Tensor::from_vec(vec![f32::NAN, -3.0], [2], Cpu)))
        .unwrap();
    clip_grad_value_(&w, 1.0);
    let g = w.grad().unwrap().to_vec();
    assert!(g[0].is_nan());
    assert_eq!(g[1], -1.0);
}

#[test]
fn clip_grad_norm_on_a_model_clips_every_layer() {
    devtype::manual_seed(common::test_seed());
    let model = vec![
        devtype::nn::Linear::new(6, 4, Cpu),
        devtype::nn::Linear::new(4, 2, Cpu),
    ];
    let x = Tensor::<Cpu>::randn([5, 6], Cpu);
    let y = model[1].forward(model[0].forward(&x));
    y.sum_all().backward();
    let before: Vec<Vec<f64>> = grads_of(&model.parameters());
    let total = clip_grad_norm_(&model, 0.01, 2.0);
    close(
        total.item() as f64,
        reference_norm(&before, 2.0),
        "model norm",
    );
    let after = reference_norm(&grads_of(&model.parameters()), 2.0);
    assert!((after - 0.01).abs() < 1e-6, "clipped norm {after}");
}

#[test]
fn a_gpu_clip_makes_no_host_sync_and_matches_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::thread_sync_count;
    let seed = common::test_seed();
    devtype::manual_seed(seed);
    for &p in &[2.0, f64::INFINITY, 1.5] {
        let (cpu_params, _) = params_with_grads(&[&[33, 17], &[17], &[300]], 1.0, Cpu);
        // The same values on the GPU (tests run in parallel: no second draw from the stream).
        let gpu_params: Vec<Tensor<Cuda<0>>> = cpu_params
            .iter()
            .map(|c| {
                let g = Tensor::parameter(c.detach().to(gpu));
                g.try_set_grad(Some(c.grad().unwrap().to(gpu))).unwrap();
                g
            })
            .collect();
        let cpu_total = clip_grad_norm_(&cpu_params, 0.5, p);
        let before = thread_sync_count();
        let gpu_total = clip_grad_norm_(&gpu_params, 0.5, p);
        clip_grad_value_(&gpu_params, 0.01);
        assert_eq!(thread_sync_count(), before, "clipping waited for the GPU");
        close(
            gpu_total.to(Cpu).item() as f64,
            cpu_total.item() as f64,
            "gpu norm",
        );
        clip_grad_value_(&cpu_params, 0.01);
        for (g, c) in grads_of(&gpu_params).iter().zip(grads_of(&cpu_params)) {
            for (x, y) in g.iter().zip(&c) {
                close(*x, *y, "gpu clipped gradient");
            }
        }
    }
}

/// The fused CPU pass (each gradient read once, in blocks summed in parallel) on gradients of
/// several blocks and ragged tails, in f32 and in bf16: the f64 reference's norm, and the
/// gradients scaled by its coefficient.
#[test]
fn the_fused_norm_of_large_gradients_matches_f64() {
    let shapes: &[&[usize]] = &[&[300, 700], &[1000], &[3], &[131_075]];
    let (params, grads) = params_with_grads(shapes, 0.01, Cpu);
    let want = reference_norm(&grads, 2.0);
    let total = clip_grad_norm_(&params, 1.0, 2.0);
    close(total.item() as f64, want, "fused f32 norm");
    let coef = (1.0 / (want + 1e-6)).min(1.0);
    for (p, g) in params.iter().zip(&grads) {
        let got = p.grad().unwrap().to_vec();
        for (a, b) in got.iter().zip(g) {
            assert!((*a as f64 - b * coef).abs() <= 1e-6 * (1.0 + (b * coef).abs()));
        }
    }
    // bf16: the squares summed in f32 lanes, as PyTorch accumulates the half types.
    let half: Vec<Tensor<Cpu, devtype::bf16>> = shapes
        .iter()
        .zip(&grads)
        .map(|(s, g)| {
            let p = Tensor::parameter(Tensor::<Cpu, devtype::bf16>::zeros(*s, Cpu));
            let g: Vec<devtype::bf16> = g.iter().map(|&v| devtype::bf16::from_f64(v)).collect();
            p.try_set_grad(Some(Tensor::from_vec(g, *s, Cpu))).unwrap();
            p
        })
        .collect();
    let rounded: Vec<Vec<f64>> = half
        .iter()
        .map(|p| p.grad().unwrap().to_dtype::<f64>().to_vec())
        .collect();
    let total = clip_grad_norm_(&half, 1e9, 2.0);
    let want = reference_norm(&rounded, 2.0);
    assert!(
        (total.to_dtype::<f64>().item() - want).abs() <= 8e-3 * want,
        "bf16 norm {} vs {want}",
        total.to_dtype::<f64>().item()
    );
}
