//! `BatchNorm1d`, `BatchNorm2d` and `GroupNorm` (issue 30): values, input/weight/bias
//! gradients, running statistics after several training steps and evaluation-mode outputs
//! against PyTorch's (float64, recorded by `scripts/torch_batchnorm.py`); PyTorch's error
//! texts; the buffers (not parameters, named as PyTorch's `state_dict`, moved by `to`, saved
//! and loaded all or nothing, a PyTorch `state_dict` file loaded); and on a GPU (the simulator
//! in CI) the same results.

mod common;

use common::close;

#[path = "reference/batchnorm_torch.rs"]
#[allow(dead_code, clippy::excessive_precision, clippy::approx_constant)]
mod torch;

use devtype::nn::{BatchNorm1d, BatchNorm2d, Buffer, Conv2d, GroupNorm, Module, Sequential};
use devtype::prelude::*;
use devtype::Float;

/// One recorded layer: three training steps, then the running statistics and an evaluation.
pub struct NormCase {
    pub name: &'static str,
    /// `1d`, `2d` or `group`.
    pub kind: &'static str,
    pub x_shape: &'static [usize],
    pub num_features: usize,
    pub groups: usize,
    pub momentum: Option<f64>,
    pub affine: bool,
    pub track: bool,
    pub weight: Option<&'static [f64]>,
    pub bias: Option<&'static [f64]>,
    pub xs: &'static [&'static [f64]],
    pub vs: &'static [&'static [f64]],
    pub ys: &'static [&'static [f64]],
    pub gxs: &'static [&'static [f64]],
    pub gws: Option<&'static [&'static [f64]]>,
    pub gbs: Option<&'static [&'static [f64]]>,
    pub running_mean: Option<&'static [f64]>,
    pub running_var: Option<&'static [f64]>,
    pub num_batches_tracked: Option<i64>,
    pub eval_x: &'static [f64],
    pub eval_y: &'static [f64],
}

/// A capture records everything queued on the GPU's stream: the GPU tests of this file take
/// turns.
static GPU_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gpu_turn() -> std::sync::MutexGuard<'static, ()> {
    GPU_TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn f64s<D: Device + HostSync, E: Float>(t: &Tensor<D, E>) -> Vec<f64> {
    t.to_vec().into_iter().map(|v| v.to_f64()).collect()
}

fn tensor<D: Device, E: Float>(v: &[f64], shape: &[usize], dev: D) -> Tensor<D, E> {
    Tensor::from_vec(v.iter().map(|&v| E::from_f64(v)).collect(), shape, dev)
}

/// A layer's tensor that may be absent (a weight without `affine`, a running mean untracked).
type Maybe<D, E> = Option<Tensor<D, E>>;

/// One of the recorded layers, on `D`, of `E`.
enum Layer<D: Device, E: Float> {
    B1(BatchNorm1d<D, E>),
    B2(BatchNorm2d<D, E>),
    G(GroupNorm<D, E>),
}

impl<D: Device + HostSync, E: Float> Layer<D, E> {
    fn build(c: &NormCase, dev: D) -> Self {
        let mut layer = match c.kind {
            "1d" => Layer::B1(
                BatchNorm1d::try_with_options(
                    c.num_features,
                    1e-5,
                    c.momentum,
                    c.affine,
                    c.track,
                    dev,
                )
                .unwrap(),
            ),
            "2d" => Layer::B2(
                BatchNorm2d::try_with_options(
                    c.num_features,
                    1e-5,
                    c.momentum,
                    c.affine,
                    c.track,
                    dev,
                )
                .unwrap(),
            ),
            _ => Layer::G(
                GroupNorm::try_with_options(c.groups, c.num_features, 1e-5, c.affine, dev).unwrap(),
            ),
        };
        let n = c.num_features;
        layer.visit_mut(&mut |name, p| {
            let v = match name {
                "weight" => c.weight.unwrap(),
                _ => c.bias.unwrap(),
            };
            *p = Tensor::parameter(tensor(v, &[n], dev));
        });
        layer
    }

    fn visit_mut(&mut self, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        match self {
            Layer::B1(m) => m.visit_parameters_mut("", f),
            Layer::B2(m) => m.visit_parameters_mut("", f),
            Layer::G(m) => m.visit_parameters_mut("", f),
        }
    }

    fn forward(&self, x: &Tensor<D, E>) -> Tensor<D, E> {
        match self {
            Layer::B1(m) => m.forward(x),
            Layer::B2(m) => m.forward(x),
            Layer::G(m) => m.forward(x),
        }
    }

    fn eval(&mut self) {
        match self {
            Layer::B1(m) => Module::<D, E>::eval(m),
            Layer::B2(m) => Module::<D, E>::eval(m),
            Layer::G(m) => Module::<D, E>::eval(m),
        }
    }

    fn weight_bias(&self) -> (Maybe<D, E>, Maybe<D, E>) {
        match self {
            Layer::B1(m) => (m.weight().cloned(), m.bias().cloned()),
            Layer::B2(m) => (m.weight().cloned(), m.bias().cloned()),
            Layer::G(m) => (m.weight().cloned(), m.bias().cloned()),
        }
    }

    fn zero_grad(&self) {
        match self {
            Layer::B1(m) => Module::<D, E>::zero_grad(m),
            Layer::B2(m) => Module::<D, E>::zero_grad(m),
            Layer::G(m) => Module::<D, E>::zero_grad(m),
        }
    }

    fn stats(&self) -> (Maybe<D, E>, Maybe<D, E>, Option<i64>) {
        match self {
            Layer::B1(m) => (m.running_mean(), m.running_var(), m.num_batches_tracked()),
            Layer::B2(m) => (m.running_mean(), m.running_var(), m.num_batches_tracked()),
            Layer::G(_) => (None, None, None),
        }
    }
}

/// Every recorded case on `dev` in `E`: the steps' values and gradients, the running
/// statistics, the evaluation.
fn check_against_torch<D: Device + HostSync, E: Float>(dev: D, tol: f64) {
    for c in torch::CASES {
        let mut layer = Layer::<D, E>::build(c, dev);
        for step in 0..c.xs.len() {
            let what = |s: &str| format!("{} step {step} {s}", c.name);
            layer.zero_grad();
            let x = Tensor::parameter(tensor::<D, E>(c.xs[step], c.x_shape, dev));
            let y = layer.forward(&x);
            assert_eq!(y.shape(), c.x_shape, "{}", c.name);
            close(&what("y"), &f64s(&y), c.ys[step], tol);
            y.mul(tensor::<D, E>(c.vs[step], c.x_shape, dev))
                .sum_all()
                .backward();
            close(&what("grad x"), &f64s(&x.grad().unwrap()), c.gxs[step], tol);
            let (w, b) = layer.weight_bias();
            assert_eq!(w.is_some(), c.affine, "{}", c.name);
            if let (Some(w), Some(gw)) = (w, c.gws) {
                close(
                    &what("grad weight"),
                    &f64s(&w.grad().unwrap()),
                    gw[step],
                    tol,
                );
            }
            if let (Some(b), Some(gb)) = (b, c.gbs) {
                close(&what("grad bias"), &f64s(&b.grad().unwrap()), gb[step], tol);
            }
        }
        let (mean, var, count) = layer.stats();
        assert_eq!(count, c.num_batches_tracked, "{}", c.name);
        assert_eq!(mean.is_some(), c.running_mean.is_some(), "{}", c.name);
        if let (Some(mean), Some(want)) = (&mean, c.running_mean) {
            assert!(
                !mean.requires_grad(),
                "{}: running_mean is recorded",
                c.name
            );
            close(&format!("{} running_mean", c.name), &f64s(mean), want, tol);
        }
        if let (Some(var), Some(want)) = (&var, c.running_var) {
            assert!(!var.requires_grad(), "{}: running_var is recorded", c.name);
            close(&format!("{} running_var", c.name), &f64s(var), want, tol);
        }
        layer.eval();
        let y = layer.forward(&tensor(c.eval_x, c.x_shape, dev));
        close(&format!("{} eval", c.name), &f64s(&y), c.eval_y, tol);
        // Evaluation leaves the running statistics alone.
        assert_eq!(layer.stats().2, c.num_batches_tracked, "{}", c.name);
    }
}

#[test]
fn cpu_matches_pytorch() {
    check_against_torch::<Cpu, f64>(Cpu, 1e-10);
}

#[test]
fn cpu_f32_matches_pytorch() {
    check_against_torch::<Cpu, f32>(Cpu, 2e-4);
}

/// The GPU (the simulator in CI) gives PyTorch's values, gradients and running statistics.
#[test]
fn gpu_matches_pytorch() {
    let _turn = gpu_turn();
    let Some(gpu) = common::gpu() else { return };
    check_against_torch::<Cuda<0>, f64>(gpu, 1e-10);
    check_against_torch::<Cuda<0>, f32>(gpu, 2e-4);
}

/// f16 and bf16 layers run, on the CPU and the GPU alike, near the f64 values.
#[test]
fn half_precision_runs_near_pytorch() {
    check_against_torch::<Cpu, half::f16>(Cpu, 3e-2);
    check_against_torch::<Cpu, half::bf16>(Cpu, 2e-1);
    let _turn = gpu_turn();
    if let Some(gpu) = common::gpu() {
        check_against_torch::<Cuda<0>, half::f16>(gpu, 3e-2);
        check_against_torch::<Cuda<0>, half::bf16>(gpu, 2e-1);
    }
}

#[track_caller]
fn err_text<T>(r: devtype::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// PyTorch 2.15's texts for a wrong rank, one value per channel in training, a wrong channel
/// count and groups that do not divide the channels.
#[test]
fn errors_are_pytorchs() {
    let bn1 = BatchNorm1d::new(3, Cpu);
    let bn2 = BatchNorm2d::new(3, Cpu);
    let x = |shape: &[usize]| Tensor::<Cpu>::randn(shape, Cpu);
    assert_eq!(
        err_text(bn1.try_forward(&x(&[2, 3, 4, 5]))),
        "expected 2D or 3D input (got 4D input)"
    );
    assert_eq!(
        err_text(bn1.try_forward(&x(&[3]))),
        "expected 2D or 3D input (got 1D input)"
    );
    assert_eq!(
        err_text(bn2.try_forward(&x(&[2, 3, 4]))),
        "expected 4D input (got 3D input)"
    );
    assert_eq!(
        err_text(bn1.try_forward(&x(&[1, 3]))),
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"
    );
    assert_eq!(
        err_text(bn2.try_forward(&x(&[1, 3, 1, 1]))),
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 3, 1, 1])"
    );
    assert_eq!(
        err_text(bn2.try_forward(&x(&[2, 4, 2, 2]))),
        "running_mean should contain 4 elements not 3"
    );
    let untracked =
        BatchNorm1d::<Cpu>::try_with_options(3, 1e-5, Some(0.1), true, false, Cpu).unwrap();
    assert_eq!(
        err_text(untracked.try_forward(&x(&[2, 4]))),
        "weight should contain 4 elements not 3"
    );
    let bare = BatchNorm1d::<Cpu>::try_with_options(3, 1e-5, Some(0.1), false, false, Cpu).unwrap();
    assert_eq!(bare.try_forward(&x(&[2, 4])).unwrap().shape(), &[2, 4]);
    // One value per channel is fine in evaluation mode, with running statistics.
    let mut bn = BatchNorm1d::new(3, Cpu);
    bn.eval();
    assert_eq!(bn.try_forward(&x(&[1, 3])).unwrap().shape(), &[1, 3]);
    // A failed forward changes nothing.
    assert_eq!(bn1.num_batches_tracked(), Some(0));

    assert_eq!(
        err_text(GroupNorm::<Cpu>::try_with_options(2, 5, 1e-5, true, Cpu)),
        "num_channels (5) must be divisible by num_groups (2)"
    );
    let gn = GroupNorm::new(2, 4, Cpu);
    assert_eq!(
        err_text(gn.try_forward(&x(&[2, 6, 3]))),
        "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [4] and input of shape [2, 6, 3]"
    );
    assert_eq!(
        err_text(gn.try_forward(&x(&[4]))),
        "Expected at least 2 dimensions for input tensor but received 1"
    );
    let gn4 = GroupNorm::<Cpu>::try_with_options(4, 4, 1e-5, false, Cpu).unwrap();
    assert_eq!(
        err_text(gn4.try_forward(&x(&[2, 6, 3]))),
        "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 3] and num_groups=4"
    );
    assert_eq!(gn.forward(&x(&[1, 4])).shape(), &[1, 4]);
}

struct Net<D: Device> {
    conv: Conv2d<D>,
    bn: BatchNorm2d<D>,
}
devtype::module!(Net<D> { conv, bn });

impl<D: Device> Net<D> {
    fn new(dev: D) -> Self {
        Net {
            conv: Conv2d::new(2, 3, (3, 3), dev),
            bn: BatchNorm2d::new(3, dev),
        }
    }
    fn run(&self, x: &Tensor<D>) -> Tensor<D> {
        self.bn.forward(self.conv.forward(x))
    }
}

fn buffer_names<D: Device, M: Module<D>>(m: &M) -> Vec<String> {
    m.named_buffers().into_iter().map(|(n, _)| n).collect()
}

/// The running statistics are buffers: not parameters, named as PyTorch's `state_dict`
/// through every container, and present only when tracked.
#[test]
fn buffers_are_not_parameters() {
    let net = Net::new(Cpu);
    let params: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(params, ["conv.weight", "conv.bias", "bn.weight", "bn.bias"]);
    assert_eq!(
        buffer_names(&net),
        [
            "bn.running_mean",
            "bn.running_var",
            "bn.num_batches_tracked"
        ]
    );
    let seq = Sequential::new((
        Conv2d::new(2, 3, (3, 3), Cpu),
        BatchNorm2d::new(3, Cpu),
        GroupNorm::new(1, 3, Cpu),
    ));
    assert_eq!(
        buffer_names(&seq),
        ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    );
    let layers = vec![BatchNorm1d::new(2, Cpu), BatchNorm1d::new(2, Cpu)];
    assert_eq!(buffer_names(&layers).len(), 6);
    assert_eq!(buffer_names(&layers)[3], "1.running_mean");
    let untracked =
        BatchNorm2d::<Cpu>::try_with_options(3, 1e-5, Some(0.1), false, false, Cpu).unwrap();
    assert!(buffer_names(&untracked).is_empty());
    assert!(untracked.parameters().is_empty());
    assert!(buffer_names(&GroupNorm::new(1, 3, Cpu)).is_empty());
}

fn path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "devtype-norm-batch-{name}-{}.safetensors",
        std::process::id()
    ))
}

fn stats_of(bn: &BatchNorm2d<Cpu>) -> (Vec<f32>, Vec<f32>, Option<i64>) {
    (
        bn.running_mean().unwrap().to_vec(),
        bn.running_var().unwrap().to_vec(),
        bn.num_batches_tracked(),
    )
}

/// Saved and loaded into a fresh model: the same buffers and the same evaluation output.
#[test]
fn checkpoint_round_trip_includes_buffers() {
    let mut net = Net::new(Cpu);
    for _ in 0..3 {
        net.run(&Tensor::randn([4, 2, 5, 5], Cpu));
    }
    net.eval();
    let file = path("round-trip");
    net.save(&file).unwrap();
    let mut fresh = Net::new(Cpu);
    assert_eq!(fresh.bn.num_batches_tracked(), Some(0));
    fresh.load(&file).unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(stats_of(&fresh.bn), stats_of(&net.bn));
    assert_eq!(fresh.bn.num_batches_tracked(), Some(3));
    fresh.eval();
    let x = Tensor::randn([2, 2, 5, 5], Cpu);
    assert_eq!(fresh.run(&x).to_vec(), net.run(&x).to_vec());
}

/// PyTorch's `state_dict` of the recorded `BatchNorm2d` case (float32, `num_batches_tracked`
/// an int64) loads, and the layer then evaluates as PyTorch's did.
#[test]
fn pytorch_state_dict_loads() {
    let case = torch::CASES
        .iter()
        .find(|c| c.name == "BatchNorm2d")
        .unwrap();
    let file = path("torch");
    std::fs::write(&file, torch::STATE_DICT).unwrap();
    let mut bn = BatchNorm2d::new(3, Cpu);
    bn.load(&file).unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(bn.num_batches_tracked(), Some(3));
    let as64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    close(
        "running_mean",
        &as64(bn.running_mean().unwrap().to_vec()),
        case.running_mean.unwrap(),
        1e-6,
    );
    close(
        "running_var",
        &as64(bn.running_var().unwrap().to_vec()),
        case.running_var.unwrap(),
        1e-6,
    );
    close(
        "weight",
        &as64(bn.weight().unwrap().to_vec()),
        case.weight.unwrap(),
        1e-6,
    );
    bn.eval();
    let y = bn.forward(&tensor::<Cpu, f32>(case.eval_x, case.x_shape, Cpu));
    close("eval", &as64(y.to_vec()), case.eval_y, 1e-5);
}

/// A mis-shaped buffer, or a missing one, is an error naming it, and nothing changes: not
/// the parameters, not the other buffers.
#[test]
fn bad_buffer_leaves_the_module_unchanged() {
    let file = path("bad");
    std::fs::write(&file, torch::BAD_STATE_DICT).unwrap();
    let mut bn = BatchNorm2d::new(3, Cpu);
    bn.forward(&Tensor::randn([2, 3, 2, 2], Cpu));
    let before = stats_of(&bn);
    let weight = bn.weight().unwrap().to_vec();
    let e = bn.load(&file).unwrap_err();
    std::fs::remove_file(&file).ok();
    assert!(
        matches!(&e, devtype::Error::TensorShapeMismatch { name, .. } if name == "running_var"),
        "{e}"
    );
    assert_eq!(stats_of(&bn), before);
    assert_eq!(bn.weight().unwrap().to_vec(), weight);

    // A file without the buffers (a model saved without running statistics).
    let untracked =
        BatchNorm2d::<Cpu>::try_with_options(3, 1e-5, Some(0.1), true, false, Cpu).unwrap();
    let file = path("missing");
    untracked.save(&file).unwrap();
    let e = bn.load(&file).unwrap_err();
    assert!(
        matches!(&e, devtype::Error::MissingTensor { name } if name == "running_mean"),
        "{e}"
    );
    assert_eq!(stats_of(&bn), before);
    // And the other way: buffers the model does not have are unexpected keys.
    let mut untracked = untracked;
    bn.save(&file).unwrap();
    let e = untracked.load(&file).unwrap_err();
    std::fs::remove_file(&file).ok();
    assert!(e.to_string().contains("Unexpected key(s)"), "{e}");
}

/// The training checkpoint (`save_checkpoint`) carries the buffers too.
#[test]
fn training_checkpoint_includes_buffers() {
    use devtype::optim::{load_checkpoint, save_checkpoint, Optimizer, Sgd};
    let mut net = Net::new(Cpu);
    let mut opt = Sgd::new(0.1);
    for _ in 0..2 {
        net.zero_grad();
        net.run(&Tensor::randn([4, 2, 5, 5], Cpu))
            .square()
            .sum_all()
            .backward();
        opt.step(&mut net);
    }
    let file = path("training");
    save_checkpoint(&file, &net, &opt, None, None).unwrap();
    let mut fresh = Net::new(Cpu);
    let mut opt2 = Sgd::new(0.5);
    load_checkpoint(&file, &mut fresh, &mut opt2, None, None).unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(stats_of(&fresh.bn), stats_of(&net.bn));
    assert_eq!(fresh.bn.num_batches_tracked(), Some(2));
}

/// `to` moves the buffers with the parameters; the moved layer's statistics then go their own
/// way (the original's stay), and on a GPU they are the CPU's.
#[test]
fn to_moves_the_buffers() {
    let bn = BatchNorm2d::new(3, Cpu);
    bn.forward(&Tensor::randn([2, 3, 2, 2], Cpu));
    let copy = bn.to(Cpu);
    assert_eq!(stats_of(&copy), stats_of(&bn));
    copy.forward(&Tensor::randn([2, 3, 2, 2], Cpu));
    assert_eq!(copy.num_batches_tracked(), Some(2));
    assert_eq!(bn.num_batches_tracked(), Some(1));
    assert_ne!(stats_of(&copy).0, stats_of(&bn).0);

    let _turn = gpu_turn();
    let Some(gpu) = common::gpu() else { return };
    let on_gpu = bn.to(gpu);
    let mean: Tensor<Cuda<0>> = on_gpu.running_mean().unwrap();
    assert_eq!(mean.to_vec(), bn.running_mean().unwrap().to_vec());
    assert_eq!(on_gpu.num_batches_tracked(), Some(1));
    // A training step on each: the same statistics, the update done on the GPU.
    let x = Tensor::<Cpu>::randn([4, 3, 3, 3], Cpu);
    let want = bn.forward(&x);
    let got = on_gpu.forward(&x.to(gpu));
    let as64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    close("gpu y", &as64(got.to_vec()), &as64(want.to_vec()), 1e-5);
    close(
        "gpu running_var",
        &as64(on_gpu.running_var().unwrap().to_vec()),
        &as64(bn.running_var().unwrap().to_vec()),
        1e-6,
    );
    // Back to the CPU, saved, loaded: the same buffers.
    let back = on_gpu.to(Cpu);
    assert_eq!(
        back.running_var().unwrap().to_vec(),
        on_gpu.running_var().unwrap().to_vec()
    );
    assert!(matches!(back.named_buffers()[2].1, Buffer::Count(2)));
    // Saved from the GPU, loaded on the CPU.
    let file = path("from-gpu");
    on_gpu.save(&file).unwrap();
    let mut fresh = BatchNorm2d::new(3, Cpu);
    fresh.load(&file).unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(stats_of(&fresh), stats_of(&back));
}

/// The training-mode forward, running statistics update included, queues only device work:
/// it runs inside a CUDA graph capture (where any host sync is refused by the driver), and
/// each replay updates the running statistics as an eager step does (PyTorch's in-place
/// update): the capture's warm-up and two replays equal three eager steps.
#[test]
fn training_forward_runs_in_a_cuda_graph() {
    let _turn = gpu_turn();
    let Some(gpu) = common::gpu() else { return };
    let eager = BatchNorm2d::new(3, Cpu).to(gpu);
    let graphed = BatchNorm2d::new(3, Cpu).to(gpu);
    let x = Tensor::<Cpu>::randn([4, 3, 3, 3], Cpu).to(gpu);
    // Every kernel family compiled before the capture, and one step on each.
    eager.forward(&x).sum_all().backward();
    graphed.forward(&x).sum_all().backward();
    let graph = devtype::cuda::capture(gpu, |_| {
        graphed.try_forward(&x)?;
        Ok(())
    })
    .unwrap();
    eager.forward(&x);
    for _ in 0..2 {
        graph.replay().unwrap();
        eager.forward(&x);
    }
    drop(graph);
    let stats = |bn: &BatchNorm2d<Cuda<0>>| {
        (
            bn.running_mean().unwrap().to_vec(),
            bn.running_var().unwrap().to_vec(),
        )
    };
    assert_eq!(stats(&graphed), stats(&eager));
    assert_ne!(stats(&eager), stats(&BatchNorm2d::new(3, Cpu).to(gpu)));
    // The count follows what ran: the warm-up and each replay, not the recording (which ran
    // nothing), as PyTorch's device-side `num_batches_tracked.add_(1)` does in a graph.
    assert_eq!(eager.num_batches_tracked(), Some(4));
    assert_eq!(graphed.num_batches_tracked(), Some(4));
    // A copy taken now counts on its own: later replays update the original only.
    let copy = graphed.clone();
    let graph = devtype::cuda::capture(gpu, |_| {
        graphed.try_forward(&x)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(graphed.num_batches_tracked(), Some(5), "the warm-up");
    graph.replay().unwrap();
    graph.replay().unwrap();
    assert_eq!(graphed.num_batches_tracked(), Some(7));
    assert_eq!(copy.num_batches_tracked(), Some(4));
}

/// A cumulative average (`momentum: None`) weighs each batch by `1 / num_batches_tracked`, a
/// value a graph would freeze at its recording: refused in a capture with the driver's error
/// (PyTorch's reads the count back, a host sync the capture refuses), and the device and the
/// layer keep working eagerly.
#[test]
fn a_cumulative_average_is_refused_in_a_cuda_graph() {
    let _turn = gpu_turn();
    let Some(gpu) = common::gpu() else { return };
    let bn = BatchNorm2d::<Cpu>::try_with_options(3, 1e-5, None, true, true, Cpu)
        .unwrap()
        .to(gpu);
    let x = Tensor::<Cpu>::randn([4, 3, 3, 3], Cpu).to(gpu);
    bn.forward(&x);
    let Err(err) = devtype::cuda::capture(gpu, |_| {
        bn.try_forward(&x)?;
        Ok(())
    }) else {
        panic!("captured a cumulative average")
    };
    assert!(
        err.to_string()
            .contains("operation not permitted when stream is capturing")
            || err
                .to_string()
                .contains("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
        "{err}"
    );
    // The warm-up ran (2); the refused recording counted nothing.
    assert_eq!(bn.num_batches_tracked(), Some(2));
    bn.forward(&x);
    assert_eq!(bn.num_batches_tracked(), Some(3));
}
