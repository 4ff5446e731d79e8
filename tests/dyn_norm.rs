//! The dynamic front's `DynLayerNorm`, `DynBatchNorm1d`, `DynBatchNorm2d`, `DynGroupNorm` and
//! `DynEmbedding` (issue 30) against the typed layers (themselves checked against PyTorch's
//! recorded values in `norm_batch.rs` and `nn_layers.rs`): the same random inputs and
//! parameters give the same outputs, input and parameter gradients, running statistics, in
//! training and in evaluation; the same error texts; PyTorch's device and dtype errors; moves
//! in place, all or nothing; and on a GPU (the simulator in CI) the CPU's results.

mod common;

use devtype::nn::{
    BatchNorm1d, BatchNorm2d, DynBatchNorm1d, DynBatchNorm2d, DynBuffer, DynEmbedding,
    DynGroupNorm, DynLayerNorm, DynModule, Embedding, Forward, GroupNorm, LayerNorm, Module,
};
use devtype::prelude::*;

const CPU: DynDevice = DynDevice::cpu();

fn vals(t: &DynTensor) -> Vec<f32> {
    t.to(CPU).unwrap().to_vec::<f32>().unwrap()
}

/// The same random values as a typed leaf and as a dynamic leaf (two separate parameters).
fn leaves(shape: &[usize]) -> (Tensor<Cpu>, DynTensor) {
    let v = Tensor::<Cpu>::randn(shape, Cpu).to_vec();
    (
        Tensor::parameter(Tensor::from_vec(v.clone(), shape, Cpu)),
        DynTensor::parameter(DynTensor::from_vec(v, shape, CPU).unwrap()).unwrap(),
    )
}

/// Gives both layers the same random parameters (so that a wrong weight or bias shows), each
/// its own leaves; the names must agree.
fn same_parameters<M: Module<Cpu>>(typed: &mut M, dynamic: &mut dyn DynModule) {
    let mut given = Vec::new();
    typed.visit_parameters_mut("", &mut |name, p| {
        let (t, d) = leaves(p.shape());
        *p = t;
        given.push((name.to_string(), d));
    });
    let mut given = given.into_iter();
    dynamic.visit_parameters_mut("", &mut |name, p| {
        let (n, d) = given.next().expect("as many parameters");
        assert_eq!(n, name);
        *p = d;
    });
    assert!(given.next().is_none(), "as many parameters");
}

/// A copy of `src`'s parameters into `dst` as new leaves (no shared gradients).
fn copy_parameters(src: &dyn DynModule, dst: &mut dyn DynModule) {
    let values: Vec<DynTensor> = src
        .named_parameters()
        .into_iter()
        .map(|(_, p)| p.detach())
        .collect();
    let mut values = values.into_iter();
    dst.visit_parameters_mut("", &mut |_, p| {
        let v = values.next().unwrap().to(p.device()).unwrap();
        *p = DynTensor::parameter(v).unwrap();
    });
}

/// One step on the same random input: the outputs, the input's gradient and every
/// parameter's gradient equal.
fn same_step<M: Forward<Cpu> + Module<Cpu>>(
    what: &str,
    typed: &M,
    dynamic: &dyn DynModule,
    shape: &[usize],
) {
    typed.zero_grad();
    dynamic.zero_grad();
    let (xt, xd) = leaves(shape);
    let yt = typed.forward(&xt);
    let yd = dynamic.forward(&xd).unwrap();
    assert_eq!(yd.shape(), yt.shape(), "{what}: shape");
    assert_eq!(vals(&yd), yt.to_vec(), "{what}: forward");
    let (gt, gd) = leaves(shape);
    yt.mul(gt.detach()).sum_all().backward();
    yd.mul(&gd.detach())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        vals(&xd.grad().unwrap()),
        xt.grad().unwrap().to_vec(),
        "{what}: gradient of the input"
    );
    let grads_t: Vec<(String, Vec<f32>)> = typed
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.grad().unwrap().to_vec()))
        .collect();
    let grads_d: Vec<(String, Vec<f32>)> = dynamic
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, vals(&p.grad().unwrap())))
        .collect();
    assert_eq!(grads_d, grads_t, "{what}: parameter gradients");
}

#[test]
fn layer_norm_equals_the_typed_layer() {
    for (affine, bias) in [(true, true), (true, false), (false, false)] {
        let what = format!("LayerNorm affine={affine} bias={bias}");
        let mut typed =
            LayerNorm::<Cpu>::try_with_options(&[3, 5], 1e-3, affine, bias, Cpu).unwrap();
        let mut dynamic = DynLayerNorm::with_options(&[3, 5], 1e-3, affine, bias, CPU).unwrap();
        same_parameters(&mut typed, &mut dynamic);
        same_step(&what, &typed, &dynamic, &[4, 3, 5]);
        let names: Vec<String> = dynamic
            .named_parameters()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let want = ["weight", "bias"];
        assert_eq!(names, want[..affine as usize + bias as usize], "{what}");
    }
    // The same shape error text.
    let typed = LayerNorm::<Cpu>::new(&[8], Cpu);
    let dynamic = DynLayerNorm::new(&[8], CPU).unwrap();
    let x = Tensor::<Cpu>::randn([2, 7], Cpu);
    assert_eq!(
        dynamic.forward(&x.to_dyn()).unwrap_err().to_string(),
        typed.try_forward(&x).err().unwrap().to_string()
    );
}

#[test]
fn group_norm_equals_the_typed_layer() {
    for affine in [true, false] {
        let what = format!("GroupNorm affine={affine}");
        let mut typed = GroupNorm::<Cpu>::try_with_options(3, 6, 1e-5, affine, Cpu).unwrap();
        let mut dynamic = DynGroupNorm::with_options(3, 6, 1e-5, affine, CPU).unwrap();
        same_parameters(&mut typed, &mut dynamic);
        same_step(&what, &typed, &dynamic, &[4, 6, 3, 2]);
        same_step(&what, &typed, &dynamic, &[2, 6]);
    }
    let typed = GroupNorm::<Cpu>::new(3, 6, Cpu);
    let dynamic = DynGroupNorm::new(3, 6, CPU).unwrap();
    for shape in [&[4][..], &[2, 4, 3], &[2, 9, 3]] {
        let x = Tensor::<Cpu>::randn(shape, Cpu);
        assert_eq!(
            dynamic.forward(&x.to_dyn()).unwrap_err().to_string(),
            typed.try_forward(&x).err().unwrap().to_string(),
            "{shape:?}"
        );
    }
    assert_eq!(
        DynGroupNorm::new(4, 6, CPU).unwrap_err().to_string(),
        "num_channels (6) must be divisible by num_groups (4)"
    );
}

/// The running statistics of a dynamic batch norm, on the host.
fn dyn_stats(m: &dyn DynModule) -> Vec<(String, Vec<f32>)> {
    m.named_buffers()
        .into_iter()
        .map(|(n, b)| match b {
            DynBuffer::Tensor(t) => {
                assert!(!t.requires_grad(), "{n} is recorded");
                (n, vals(&t))
            }
            DynBuffer::Count(c) => (n, vec![c as f32]),
        })
        .collect()
}

/// The same of a typed one.
fn typed_stats<M: Module<Cpu>>(m: &M) -> Vec<(String, Vec<f32>)> {
    m.named_buffers()
        .into_iter()
        .map(|(n, b)| match b {
            devtype::nn::Buffer::Tensor(t) => (n, t.to_vec()),
            devtype::nn::Buffer::Count(c) => (n, vec![c as f32]),
        })
        .collect()
}

/// Three training steps, the running statistics, then evaluation, on both layers.
fn same_batch_norm<M: Forward<Cpu> + Module<Cpu>>(
    what: &str,
    mut typed: M,
    mut dynamic: impl DynModule,
    shapes: [&[usize]; 3],
) {
    same_parameters(&mut typed, &mut dynamic);
    for (i, shape) in shapes.iter().enumerate() {
        same_step(&format!("{what} step {i}"), &typed, &dynamic, shape);
        assert_eq!(
            dyn_stats(&dynamic),
            typed_stats(&typed),
            "{what} step {i}: running statistics"
        );
    }
    Module::eval(&mut typed);
    dynamic.eval();
    same_step(&format!("{what} eval"), &typed, &dynamic, shapes[0]);
    assert_eq!(dyn_stats(&dynamic), typed_stats(&typed), "{what} eval");
}

#[test]
fn batch_norm_equals_the_typed_layer() {
    for momentum in [Some(0.1), Some(0.7), None] {
        for (affine, track) in [(true, true), (false, true), (true, false), (false, false)] {
            let what = format!("momentum={momentum:?} affine={affine} track={track}");
            same_batch_norm(
                &format!("BatchNorm1d {what}"),
                BatchNorm1d::<Cpu>::try_with_options(3, 1e-5, momentum, affine, track, Cpu)
                    .unwrap(),
                DynBatchNorm1d::with_options(3, 1e-5, momentum, affine, track, CPU).unwrap(),
                [&[5, 3], &[4, 3, 2], &[2, 3]],
            );
            same_batch_norm(
                &format!("BatchNorm2d {what}"),
                BatchNorm2d::<Cpu>::try_with_options(4, 1e-3, momentum, affine, track, Cpu)
                    .unwrap(),
                DynBatchNorm2d::with_options(4, 1e-3, momentum, affine, track, CPU).unwrap(),
                [&[2, 4, 3, 3], &[3, 4, 2, 1], &[1, 4, 2, 2]],
            );
        }
    }
}

#[test]
fn batch_norm_errors_are_the_typed_layers() {
    let shapes: [&[usize]; 5] = [&[2, 3, 4, 5], &[3], &[1, 3], &[1, 3, 1], &[4, 5]];
    for shape in shapes {
        let typed = BatchNorm1d::<Cpu>::new(3, Cpu);
        let dynamic = DynBatchNorm1d::new(3, CPU).unwrap();
        let x = Tensor::<Cpu>::randn(shape, Cpu);
        let want = typed.try_forward(&x).err().unwrap().to_string();
        assert_eq!(
            dynamic.forward(&x.to_dyn()).unwrap_err().to_string(),
            want,
            "{shape:?}"
        );
        // Nothing was updated by a refused batch.
        assert_eq!(dynamic.num_batches_tracked(), Some(0));
    }
    assert_eq!(
        DynBatchNorm1d::new(3, CPU)
            .unwrap()
            .forward(&DynTensor::ones([1, 3], CPU).unwrap())
            .unwrap_err()
            .to_string(),
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"
    );
    let typed = BatchNorm2d::<Cpu>::new(3, Cpu);
    let dynamic = DynBatchNorm2d::new(3, CPU).unwrap();
    let x = Tensor::<Cpu>::randn([2, 3, 4], Cpu);
    assert_eq!(
        dynamic.forward(&x.to_dyn()).unwrap_err().to_string(),
        typed.try_forward(&x).err().unwrap().to_string()
    );
    assert_eq!(
        dynamic.forward(&x.to_dyn()).unwrap_err().to_string(),
        "expected 4D input (got 3D input)"
    );
}

#[test]
fn another_float_dtype_is_pytorchs_dtype_error() {
    let x64 = DynTensor::full([4, 3], 1.5, DType::F64, CPU).unwrap();
    let want = "expected scalar type Double but found Float";
    let layers: Vec<Box<dyn DynModule>> = vec![
        Box::new(DynLayerNorm::new(&[3], CPU).unwrap()),
        Box::new(DynGroupNorm::new(1, 3, CPU).unwrap()),
        Box::new(DynBatchNorm1d::new(3, CPU).unwrap()),
    ];
    for layer in &layers {
        assert_eq!(layer.forward(&x64).unwrap_err().to_string(), want);
    }
    // Without parameters or buffers there is nothing to disagree with.
    let plain = DynBatchNorm1d::with_options(3, 1e-5, Some(0.1), false, false, CPU).unwrap();
    assert_eq!(plain.forward(&x64).unwrap().dtype(), DType::F64);
    // Token ids must be integers.
    let emb = DynEmbedding::new(5, 2, CPU).unwrap();
    assert_eq!(
        emb.forward(&DynTensor::zeros([3], CPU).unwrap())
            .unwrap_err()
            .to_string(),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"
    );
}

#[test]
fn embedding_equals_the_typed_layer() {
    for padding_idx in [None, Some(1), Some(-1)] {
        let what = format!("padding_idx={padding_idx:?}");
        let dynamic = DynEmbedding::with_options(6, 4, padding_idx, CPU).unwrap();
        let resolved = padding_idx.map(|p| if p < 0 { p + 6 } else { p });
        assert_eq!(dynamic.padding_idx, resolved, "{what}");
        if let Some(p) = resolved {
            let rows = vals(&dynamic.weight);
            assert_eq!(rows[p as usize * 4..][..4], [0.0; 4], "{what}: padding row");
        }
        let table = dynamic.weight.detach();
        let typed = Embedding::from_weight(table.try_into_typed::<Cpu>().unwrap(), resolved);
        let ids_v = vec![1i64, 0, 5, 1, 3, 1];
        let ids_t = Tensor::<Cpu, i64>::from_vec(ids_v.clone(), [2, 3], Cpu);
        let ids_d = DynTensor::from_vec(ids_v, [2, 3], CPU).unwrap();
        let yt = typed.forward(&ids_t);
        let yd = dynamic.forward(&ids_d).unwrap();
        assert_eq!(yd.shape(), &[2, 3, 4]);
        assert_eq!(vals(&yd), yt.to_vec(), "{what}: forward");
        let (gt, gd) = leaves(&[2, 3, 4]);
        yt.mul(gt.detach()).sum_all().backward();
        yd.mul(&gd.detach())
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let grad = vals(&dynamic.weight.grad().unwrap());
        assert_eq!(grad, typed.weight().grad().unwrap().to_vec(), "{what}");
        if let Some(p) = resolved {
            assert_eq!(grad[p as usize * 4..][..4], [0.0; 4], "{what}: no gradient");
        }
    }
    assert_eq!(
        DynEmbedding::with_options(3, 2, Some(3), CPU)
            .unwrap_err()
            .to_string(),
        "Padding_idx must be within num_embeddings"
    );
    let emb = DynEmbedding::new(3, 2, CPU).unwrap();
    let ids = DynTensor::from_vec(vec![3i64], [1], CPU).unwrap();
    assert_eq!(
        emb.forward(&ids).unwrap_err().to_string(),
        "index out of range in self"
    );
}

#[test]
fn buffers_are_named_and_not_parameters() {
    let bn = DynBatchNorm2d::new(3, CPU).unwrap();
    let names: Vec<String> = bn.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["running_mean", "running_var", "num_batches_tracked"]
    );
    assert_eq!(bn.named_parameters().len(), 2);
    let untracked = DynBatchNorm2d::with_options(3, 1e-5, None, true, false, CPU).unwrap();
    assert!(untracked.named_buffers().is_empty());
    assert!(untracked.running_mean().is_none());
    let model = devtype::nn::DynSequential::new()
        .append(DynLayerNorm::new(&[3], CPU).unwrap())
        .append(DynBatchNorm1d::new(3, CPU).unwrap());
    let names: Vec<String> = model.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    );
}

/// Every layer of this file, each moved to `dev` (or failing to move there).
fn all_layers() -> Vec<Box<dyn DynModule>> {
    vec![
        Box::new(DynLayerNorm::new(&[4], CPU).unwrap()),
        Box::new(DynGroupNorm::new(2, 4, CPU).unwrap()),
        Box::new(DynBatchNorm1d::new(4, CPU).unwrap()),
        Box::new(DynBatchNorm2d::new(4, CPU).unwrap()),
        Box::new(DynEmbedding::new(4, 3, CPU).unwrap()),
    ]
}

/// A move to a device that does not exist fails and leaves every parameter and buffer where
/// it was (the values and the very tensors).
#[test]
fn a_failed_move_leaves_the_layer_in_place() {
    let missing = DynDevice::cuda(7);
    for mut layer in all_layers() {
        layer.forward(&DynTensor::ones([3, 4], CPU).unwrap()).ok();
        let before: Vec<(String, Vec<f32>)> = layer
            .named_parameters()
            .into_iter()
            .map(|(n, p)| (n, vals(&p)))
            .collect();
        let stats = dyn_stats(&*layer);
        assert!(layer.move_to(missing).is_err());
        layer.visit_parameters("", &mut |_, p| assert_eq!(p.device(), CPU));
        layer.visit_buffers("", &mut |_, b| {
            if let DynBuffer::Tensor(t) = b {
                assert_eq!(t.device(), CPU)
            }
        });
        let after: Vec<(String, Vec<f32>)> = layer
            .named_parameters()
            .into_iter()
            .map(|(n, p)| (n, vals(&p)))
            .collect();
        assert_eq!(after, before);
        assert_eq!(dyn_stats(&*layer), stats);
        // A move to where it is succeeds and keeps it a layer of parameters.
        layer.move_to(CPU).unwrap();
        layer.visit_parameters("", &mut |_, p| assert!(p.requires_grad()));
    }
}

fn gpu_or_skip() -> Option<DynDevice> {
    common::gpu().map(DynDevice::from)
}

#[track_caller]
fn close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

/// Moved to the GPU, each layer gives the CPU's outputs, gradients and running statistics
/// (three training steps, then evaluation).
#[test]
fn on_the_gpu_each_layer_equals_the_cpu() {
    let Some(gpu) = gpu_or_skip() else { return };
    let shapes: [&[usize]; 5] = [&[5, 4], &[3, 4, 2, 2], &[6, 4, 3], &[2, 4, 3, 3], &[2, 5]];
    for (mut cpu_layer, (mut gpu_layer, shape)) in all_layers()
        .into_iter()
        .zip(all_layers().into_iter().zip(shapes))
    {
        copy_parameters(&*cpu_layer, &mut *gpu_layer);
        gpu_layer.move_to(gpu).unwrap();
        gpu_layer.visit_parameters("", &mut |_, p| {
            assert_eq!(p.device(), gpu);
            assert!(p.requires_grad());
        });
        let is_embedding = shape.len() == 2 && shape[1] == 5;
        for step in 0..4 {
            if step == 3 {
                cpu_layer.eval();
                gpu_layer.eval();
            }
            let what = format!("{shape:?} step {step}");
            cpu_layer.zero_grad();
            gpu_layer.zero_grad();
            let x = if is_embedding {
                DynTensor::from_vec(vec![0i64, 3, 1, 1, 2, 0, 3, 3, 2, 1], [2, 5], CPU).unwrap()
            } else {
                DynTensor::parameter(DynTensor::randn(shape, CPU).unwrap()).unwrap()
            };
            let xg = if is_embedding {
                x.to(gpu).unwrap()
            } else {
                DynTensor::parameter(x.detach().to(gpu).unwrap()).unwrap()
            };
            let (yc, yg) = (
                cpu_layer.forward(&x).unwrap(),
                gpu_layer.forward(&xg).unwrap(),
            );
            assert_eq!(yg.device(), gpu);
            close(&what, &vals(&yg), &vals(&yc), 1e-5);
            yc.square().unwrap().sum_all().unwrap().backward().unwrap();
            yg.square().unwrap().sum_all().unwrap().backward().unwrap();
            if !is_embedding {
                close(
                    &format!("{what} grad x"),
                    &vals(&xg.grad().unwrap()),
                    &vals(&x.grad().unwrap()),
                    1e-4,
                );
            }
            for ((n, pc), (_, pg)) in cpu_layer
                .named_parameters()
                .into_iter()
                .zip(gpu_layer.named_parameters())
            {
                assert_eq!(pg.grad().unwrap().device(), gpu);
                close(
                    &format!("{what} grad {n}"),
                    &vals(&pg.grad().unwrap()),
                    &vals(&pc.grad().unwrap()),
                    1e-4,
                );
            }
            let (sc, sg) = (dyn_stats(&*cpu_layer), dyn_stats(&*gpu_layer));
            assert_eq!(sc.len(), sg.len());
            for ((n, c), (_, g)) in sc.iter().zip(&sg) {
                close(&format!("{what} {n}"), g, c, 1e-5);
            }
            gpu_layer.visit_buffers("", &mut |_, b| {
                if let DynBuffer::Tensor(t) = b {
                    assert_eq!(t.device(), gpu)
                }
            });
        }
    }
}

fn argument(arg: &str, found: &str, common: &str, method: &str) -> String {
    format!("Expected all tensors to be on the same device, but got {arg} is on {found}, different from other tensors on {common} (when checking argument in method {method})")
}

/// An input on another device than the layer: PyTorch's argument-check text, as `Err`.
#[test]
fn an_input_on_another_device_is_pytorchs_error() {
    let Some(gpu) = gpu_or_skip() else { return };
    let g = gpu.to_string();
    let x_cpu = DynTensor::randn([4, 3], CPU).unwrap();
    let x_gpu = x_cpu.to(gpu).unwrap();
    let x4_gpu = DynTensor::randn([2, 3, 2, 2], gpu).unwrap();

    // Layer on the CPU, input on the GPU: the CUDA kernel runs, the input sets the device.
    let ln = DynLayerNorm::new(&[3], CPU).unwrap();
    assert_eq!(
        ln.forward(&x_gpu).unwrap_err().to_string(),
        argument("weight", "cpu", &g, "wrapper_CUDA__native_layer_norm")
    );
    // The lesson's case: a BatchNorm2d left on the CPU after a GPU conv (cuDNN's kernel).
    let bn = DynBatchNorm2d::new(3, CPU).unwrap();
    assert_eq!(
        bn.forward(&x4_gpu).unwrap_err().to_string(),
        argument("weight", "cpu", &g, "wrapper_CUDA__cudnn_batch_norm")
    );
    assert_eq!(bn.num_batches_tracked(), Some(0), "nothing updated");
    // Not affine: the native kernel, the running mean named.
    let plain = DynBatchNorm2d::with_options(3, 1e-5, Some(0.1), false, true, CPU).unwrap();
    assert_eq!(
        plain.forward(&x4_gpu).unwrap_err().to_string(),
        argument("running_mean", "cpu", &g, "wrapper_CUDA__native_batch_norm")
    );
    // An eps below cuDNN's minimum: the native kernel, the weight named.
    let small_eps = DynBatchNorm2d::with_options(3, 1e-6, Some(0.1), true, true, CPU).unwrap();
    assert_eq!(
        small_eps.forward(&x4_gpu).unwrap_err().to_string(),
        argument("weight", "cpu", &g, "wrapper_CUDA__native_batch_norm")
    );
    let gn = DynGroupNorm::new(1, 3, CPU).unwrap();
    assert_eq!(
        gn.forward(&x_gpu).unwrap_err().to_string(),
        argument("weight", "cpu", &g, "wrapper_CUDA__native_group_norm")
    );

    // Layer on the GPU, input left on the CPU.
    let mut ln = DynLayerNorm::new(&[3], CPU).unwrap();
    ln.to(gpu).unwrap();
    assert_eq!(
        ln.forward(&x_cpu).unwrap_err().to_string(),
        argument("weight", &g, "cpu", "wrapper_CUDA__native_layer_norm")
    );
    let mut bn = DynBatchNorm1d::new(3, CPU).unwrap();
    bn.to(gpu).unwrap();
    assert_eq!(
        bn.forward(&x_cpu).unwrap_err().to_string(),
        argument("weight", &g, "cpu", "wrapper_CUDA__native_batch_norm")
    );
    let mut emb = DynEmbedding::new(5, 2, CPU).unwrap();
    emb.to(gpu).unwrap();
    let ids = DynTensor::from_vec(vec![0i64, 4], [2], CPU).unwrap();
    assert_eq!(
        emb.forward(&ids).unwrap_err().to_string(),
        argument("index", "cpu", &g, "wrapper_CUDA__index_select")
    );
    // The same layers with their input on their device run.
    assert_eq!(ln.forward(&x_gpu).unwrap().device(), gpu);
    assert_eq!(bn.forward(&x_gpu).unwrap().device(), gpu);
    assert_eq!(emb.forward(&ids.to(gpu).unwrap()).unwrap().shape(), &[2, 2]);
}
