//! `DynModule::cast_to` / `to_dtype`, PyTorch's `model.to(torch.float64)` / `model.half()` on
//! the dynamic front: every floating-point parameter and buffer converted in place, parameters
//! kept as the same leaves with their gradients converted along, integral state kept, integral
//! targets refused with PyTorch's text, and nothing changed when it fails. Each converted layer
//! is checked against the same layer left in `f32`, run on the same input (f64 outputs against
//! the f32 ones; half outputs against the f32 ones at half precision).

use devtype::nn::{
    DynBatchNorm1d, DynBatchNorm2d, DynBuffer, DynConv1d, DynConv2d, DynEmbedding, DynGroupNorm,
    DynLayerNorm, DynLinear, DynModule, DynSequential, ReLU,
};
use devtype::{DType, DynDevice, DynTensor};

mod common;

use common::close;

const CPU: DynDevice = DynDevice::cpu();

/// Each layer with an input of its shape (integer ids for the embedding).
fn layers() -> Vec<(Box<dyn DynModule>, Vec<usize>)> {
    vec![
        (Box::new(DynLinear::new(5, 3, CPU).unwrap()), vec![4, 5]),
        (Box::new(DynLayerNorm::new(&[4], CPU).unwrap()), vec![3, 4]),
        (
            Box::new(DynGroupNorm::new(2, 4, CPU).unwrap()),
            vec![3, 4, 2],
        ),
        (Box::new(DynBatchNorm1d::new(4, CPU).unwrap()), vec![6, 4]),
        (
            Box::new(DynBatchNorm2d::new(4, CPU).unwrap()),
            vec![2, 4, 3, 3],
        ),
        (Box::new(DynEmbedding::new(6, 3, CPU).unwrap()), vec![5]),
        (
            Box::new(DynConv1d::new(2, 3, 3, CPU).unwrap()),
            vec![2, 2, 7],
        ),
        (
            Box::new(DynConv2d::new(2, 3, (3, 3), CPU).unwrap()),
            vec![2, 2, 5, 5],
        ),
        (
            Box::new(
                DynSequential::new()
                    .append(DynLinear::new(4, 8, CPU).unwrap())
                    .append(ReLU)
                    .append(DynBatchNorm1d::new(8, CPU).unwrap())
                    .append(DynLinear::new(8, 2, CPU).unwrap()),
            ),
            vec![5, 4],
        ),
    ]
}

/// A fresh random input of `shape` in `dtype` (ids in `0..6` for a 1-D shape).
fn input(shape: &[usize], dtype: DType) -> DynTensor {
    if shape.len() == 1 {
        let ids: Vec<i64> = (0..shape[0] as i64).map(|i| (i * 5 + 1) % 6).collect();
        return DynTensor::from_vec(ids, shape, CPU).unwrap();
    }
    DynTensor::randn(shape, CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

fn f64s(t: &DynTensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The parameters' and tensor buffers' dtypes, in visiting order.
fn dtypes(m: &dyn DynModule) -> Vec<(String, DType)> {
    let mut out: Vec<(String, DType)> = m
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.dtype()))
        .collect();
    for (n, b) in m.named_buffers() {
        if let DynBuffer::Tensor(t) = b {
            out.push((n, t.dtype()));
        }
    }
    out
}

/// Every value of the module's state: parameters, gradients, buffers (counts included).
fn state(m: &dyn DynModule) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for (n, p) in m.named_parameters() {
        out.push((n.clone(), f64s(&p)));
        if let Some(g) = p.grad() {
            out.push((format!("{n}.grad"), f64s(&g)));
        }
    }
    for (n, b) in m.named_buffers() {
        match b {
            DynBuffer::Tensor(t) => out.push((n, f64s(&t))),
            DynBuffer::Count(c) => out.push((n, vec![c as f64])),
        }
    }
    out
}

/// Cast to each floating-point dtype after a training step: the state is the f32 state
/// rounded to the new type (values, gradients, running statistics; counts unchanged), every
/// parameter is still a leaf that requires grad, and a forward and backward in the new type
/// agree with the f32 layer's on the same input.
#[test]
fn each_layer_casts_in_place_and_computes_in_the_new_dtype() {
    for dtype in [DType::F64, DType::F16, DType::BF16, DType::F32] {
        // Half precision: 8 (bf16) or 11 (f16) significant bits, through a few ops.
        let tol = match dtype {
            DType::F64 | DType::F32 => 1e-5,
            DType::F16 => 2e-2,
            _ => 8e-2,
        };
        for (mut layer, shape) in layers() {
            let what = format!("{shape:?} as {dtype:?}");
            // A training step in f32 first: gradients and running statistics to convert.
            let x32 = input(&shape, DType::F32);
            layer
                .forward(&x32)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            let before = state(&*layer);
            let kept: Vec<DynTensor> = layer
                .named_parameters()
                .into_iter()
                .map(|(_, p)| p)
                .collect();

            layer.cast_to(dtype).unwrap();

            for (n, d) in dtypes(&*layer) {
                assert_eq!(d, dtype, "{what}: {n}");
            }
            let after = state(&*layer);
            assert_eq!(
                after.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                before.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                "{what}: the same state"
            );
            for ((n, a), (_, b)) in after.iter().zip(&before) {
                close(&format!("{what}: {n}"), a, b, tol);
            }
            // The same leaves: a handle taken before the cast sees the converted gradient.
            for (p, (n, now)) in kept.iter().zip(layer.named_parameters()) {
                assert!(now.requires_grad() && now.is_leaf(), "{what}: {n}");
                let (g_old, g_new) = (p.grad().unwrap(), now.grad().unwrap());
                assert_eq!(
                    g_old.dtype(),
                    dtype,
                    "{what}: {n}.grad through an old handle"
                );
                assert_eq!(f64s(&g_old), f64s(&g_new), "{what}: {n}.grad");
            }

            // Forward in the new type against the f32 layer on the same (rounded) input.
            layer.zero_grad();
            let x = if shape.len() == 1 {
                x32.clone()
            } else {
                x32.to_dtype(dtype).unwrap()
            };
            let mut reference = layers().into_iter().find(|(_, s)| *s == shape).unwrap().0;
            // The reference: the cast layer's values, back in f32 (so both run the same
            // parameters), in eval mode as the cast one is put in, so the statistics used are
            // the stored ones.
            copy_state(&*layer, &mut *reference);
            layer.eval();
            reference.eval();
            let y = layer.forward(&x).unwrap();
            assert_eq!(y.dtype(), dtype, "{what}: output dtype");
            let x_ref = if shape.len() == 1 {
                x.clone()
            } else {
                x.to_dtype(DType::F32).unwrap()
            };
            let want = reference.forward(&x_ref).unwrap();
            close(
                &format!("{what}: forward"),
                &f64s(&y),
                &f64s(&want),
                tol * 4.0,
            );
        }
    }
}

/// Copies `from`'s parameter and tensor buffer values into `to` (same architecture), in
/// `to`'s dtypes.
fn copy_state(from: &dyn DynModule, to: &mut dyn DynModule) {
    let params: Vec<DynTensor> = from
        .named_parameters()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    let mut it = params.into_iter();
    to.visit_parameters_mut("", &mut |_, p| {
        let v = it.next().unwrap().to_dtype(p.dtype()).unwrap();
        *p = DynTensor::parameter(v).unwrap();
    });
    let buffers: Vec<DynTensor> = from
        .named_buffers()
        .into_iter()
        .filter_map(|(_, b)| match b {
            DynBuffer::Tensor(t) => Some(t),
            DynBuffer::Count(_) => None,
        })
        .collect();
    let mut it = buffers.into_iter();
    to.visit_buffers_mut("", &mut |_, b| {
        *b = it.next().unwrap().to_dtype(b.dtype()).unwrap()
    });
}

/// An integral dtype is refused with PyTorch's text, and the module is left exactly as it was;
/// `to_dtype` chains as `to` does.
#[test]
fn integral_dtypes_are_refused_and_nothing_changes() {
    for (mut layer, shape) in layers() {
        layer.forward(&input(&shape, DType::F32)).unwrap();
        let before = state(&*layer);
        for dtype in [DType::I64, DType::Bool] {
            let err = layer.cast_to(dtype).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={}",
                    dtype.torch_name()
                )
            );
            assert_eq!(state(&*layer), before, "{shape:?}");
        }
    }
    let mut linear = DynLinear::new(3, 2, CPU).unwrap();
    let y = linear
        .to_dtype(DType::F64)
        .unwrap()
        .to(CPU)
        .unwrap()
        .forward(&input(&[2, 3], DType::F64))
        .unwrap();
    assert_eq!(y.dtype(), DType::F64);
}

/// After a cast, an input of the old dtype is a dtype error (PyTorch's checks), not a silent
/// conversion; and a weight shared by two layers stays shared (one leaf, both converted).
#[test]
fn a_cast_model_checks_its_inputs_and_keeps_shared_weights() {
    let mut model = DynSequential::new()
        .append(DynLinear::new(3, 3, CPU).unwrap())
        .append(DynLinear::new(3, 3, CPU).unwrap());
    // Share the first layer's weight with the second (`b.weight = a.weight`).
    let mut first = None;
    model.visit_parameters_mut("", &mut |name, p| match name {
        "0.weight" => first = Some(p.clone()),
        "1.weight" => *p = first.clone().unwrap(),
        _ => {}
    });
    assert_eq!(model.named_parameters().len(), 3, "listed once");
    model.cast_to(DType::F64).unwrap();
    assert!(model.forward(&input(&[2, 3], DType::F32)).is_err());
    let y = model.forward(&input(&[2, 3], DType::F64)).unwrap();
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(model.named_parameters().len(), 3, "still listed once");
    let mut weights = Vec::new();
    model.visit_parameters("", &mut |name, p| {
        if name.ends_with("weight") {
            weights.push(f64s(&p.grad().unwrap()));
        }
    });
    assert_eq!(weights[0], weights[1], "one gradient for the shared weight");
}

/// On the GPU: each layer moved there and cast (both orders) computes what the same layer cast
/// on the CPU computes, and its state lives on the GPU in the new dtype.
#[test]
fn on_the_gpu_a_cast_layer_equals_the_cpu() {
    let Some(gpu) = common::gpu().map(DynDevice::from) else {
        return;
    };
    for dtype in [DType::F64, DType::F16, DType::BF16] {
        let tol = if dtype == DType::F64 { 1e-9 } else { 2e-2 };
        for (cast_first, (mut on_cpu, shape)) in [false, true].into_iter().cycle().zip(layers()) {
            let mut on_gpu = layers().into_iter().find(|(_, s)| *s == shape).unwrap().0;
            copy_state(&*on_cpu, &mut *on_gpu);
            if cast_first {
                on_gpu.cast_to(dtype).unwrap();
                on_gpu.move_to(gpu).unwrap();
            } else {
                on_gpu.move_to(gpu).unwrap();
                on_gpu.cast_to(dtype).unwrap();
            }
            on_cpu.cast_to(dtype).unwrap();
            on_gpu.visit_parameters("", &mut |n, p| {
                assert_eq!((p.device(), p.dtype()), (gpu, dtype), "{n}");
                assert!(p.requires_grad(), "{n}");
            });
            on_gpu.visit_buffers_mut("", &mut |n, b| {
                assert_eq!((b.device(), b.dtype()), (gpu, dtype), "{n}")
            });
            let x = input(&shape, dtype);
            let want = on_cpu.forward(&x).unwrap();
            let got = on_gpu.forward(&x.to(gpu).unwrap()).unwrap();
            let what = format!("{shape:?} as {dtype:?}, cast first {cast_first}");
            close(&what, &f64s(&got), &f64s(&want), tol);
        }
    }
}

/// A module whose visitors give other tensors on a second call (a broken contract): the
/// conversion is an error and nothing changes, not a panic or a half-converted module.
#[test]
fn a_module_whose_visitors_change_is_an_error_and_nothing_changes() {
    struct Fickle {
        a: DynTensor,
        b: DynTensor,
        calls: usize,
    }
    impl DynModule for Fickle {
        fn forward(&self, input: &DynTensor) -> devtype::Result<DynTensor> {
            Ok(input.clone())
        }
        fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
            f(prefix, &self.a);
            f(prefix, &self.b);
        }
        fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
            self.calls += 1;
            f(prefix, &mut self.a);
            if self.calls == 1 {
                f(prefix, &mut self.b);
            }
        }
    }
    let leaf = || DynTensor::parameter(DynTensor::randn([3], CPU).unwrap()).unwrap();
    let mut m = Fickle {
        a: leaf(),
        b: leaf(),
        calls: 0,
    };
    let before = (f64s(&m.a), f64s(&m.b));
    let err = m.cast_to(DType::F64).unwrap_err();
    assert!(matches!(err, devtype::Error::Internal { .. }), "{err:?}");
    assert_eq!((m.a.dtype(), m.b.dtype()), (DType::F32, DType::F32));
    assert_eq!((f64s(&m.a), f64s(&m.b)), before);
}
