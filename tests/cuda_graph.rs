//! CUDA graphs (`devtype::cuda::capture`): a training step captured once and replayed equals
//! the same number of eager steps bit for bit; what breaks a capture at run time (a host sync,
//! a kernel compile the warm-up did not do) is an `Err` and the device stays usable.
//!
//! Run on the simulated device in CI (`scripts/cuda-sim.sh`); skipped without a GPU.

mod common;

use common::Rng;
use devtype::amp::GradScaler;
use devtype::nn::{Linear, MSELoss, Module};
use devtype::optim::{Optimizer, Sgd};
use devtype::prelude::*;
use std::sync::Mutex;

/// A capture records everything queued on the device's stream: the tests of this file take
/// turns so that one test's work never lands in another's graph.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn random<D: Device>(rng: &mut Rng, shape: &[usize], dev: D) -> Tensor<D> {
    let n = shape.iter().product();
    let v: Vec<f32> = rng.values(n, -1.0, 1.0).iter().map(|&x| x as f32).collect();
    Tensor::<Cpu>::from_vec(v, shape, Cpu).to(dev)
}

/// A two-layer MLP (MNIST-shaped, smaller).
struct Mlp<D: Device> {
    l1: Linear<D>,
    l2: Linear<D>,
}

impl<D: Device> Mlp<D> {
    fn new(rng: &mut Rng, dev: D) -> Self {
        let mut lin = |i: usize, o: usize| {
            Linear::from_parameters(random(rng, &[o, i], dev), Some(random(rng, &[o], dev)))
        };
        Mlp {
            l1: lin(12, 16),
            l2: lin(16, 4),
        }
    }
    fn copy(&self) -> Self {
        let c = |m: &Linear<D>| {
            Linear::from_parameters(m.weight().detach(), m.bias().map(|b| b.detach()))
        };
        Mlp {
            l1: c(&self.l1),
            l2: c(&self.l2),
        }
    }
    fn loss(&self, x: &Tensor<D>, y: &Tensor<D>) -> Tensor<D> {
        MSELoss::new().forward(&self.l2.forward(&self.l1.forward(x).relu()), y)
    }
    /// The parameters' values, through GPU 0 (a capturing device's tensors move to a GPU, not
    /// to the host).
    fn values(&self) -> Vec<Vec<f32>>
    where
        D: devtype::CopyTo<Cuda<0>>,
    {
        let gpu = Cuda::<0>::open().unwrap();
        [&self.l1, &self.l2]
            .iter()
            .flat_map(|l| l.parameters())
            .map(|p| p.to(gpu).to_vec())
            .collect()
    }
}

/// One SGD step (momentum, weight decay) of `model` on `(x, y)`.
fn step<D: Device>(
    model: &mut Mlp<D>,
    opts: &mut [Sgd<D>; 2],
    x: &Tensor<D>,
    y: &Tensor<D>,
) -> devtype::Result<()> {
    model.l1.zero_grad();
    model.l2.zero_grad();
    model.loss(x, y).try_backward()?;
    opts[0].try_step(&mut model.l1)?;
    opts[1].try_step(&mut model.l2)
}

fn sgd<D: Device>() -> [Sgd<D>; 2] {
    [0, 1].map(|_| Sgd::new(0.05).momentum(0.9).weight_decay(0.01))
}

#[test]
fn a_replayed_training_step_equals_eager_steps_exactly() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    let mut rng = Rng::new("cuda graph training step");
    let mut eager = Mlp::new(&mut rng, gpu);
    let mut graphed = eager.copy();
    let x = random(&mut rng, &[32, 12], gpu);
    let y = random(&mut rng, &[32, 4], gpu);
    let (mut eager_opt, mut graphed_opt) = (sgd(), sgd());

    // The warm-up run inside `capture` is a real step; the recorded one is not run.
    let graph =
        devtype::cuda::capture(gpu, |_| step(&mut graphed, &mut graphed_opt, &x, &y)).unwrap();
    step(&mut eager, &mut eager_opt, &x, &y).unwrap();
    assert_eq!(graphed.values(), eager.values(), "after the warm-up");
    let replays = 5;
    for _ in 0..replays {
        graph.replay().unwrap();
        step(&mut eager, &mut eager_opt, &x, &y).unwrap();
    }
    let (g, e) = (graphed.values(), eager.values());
    assert_eq!(g, e, "after {replays} replays");
    // The steps moved the parameters (a replay that does nothing would fail above).
    assert_ne!(
        e,
        Mlp::new(&mut Rng::new("cuda graph training step"), gpu).values()
    );
    drop(graph);
    // The model is usable eagerly after the graph is gone.
    step(&mut graphed, &mut graphed_opt, &x, &y).unwrap();
    step(&mut eager, &mut eager_opt, &x, &y).unwrap();
    assert_eq!(
        graphed.values(),
        eager.values(),
        "an eager step after the graph"
    );
}

#[test]
fn a_replayed_step_with_a_grad_scaler_equals_eager_steps_exactly() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    let mut rng = Rng::new("cuda graph grad scaler");
    let mut eager = Mlp::new(&mut rng, gpu);
    let mut graphed = eager.copy();
    let x = random(&mut rng, &[32, 12], gpu);
    let y = random(&mut rng, &[32, 4], gpu);
    let (mut eager_opt, mut graphed_opt) = (sgd(), sgd());
    let (mut eager_scaler, mut graphed_scaler) = (GradScaler::new(gpu), GradScaler::new(gpu));
    fn scaled<D: Device>(
        m: &mut Mlp<D>,
        opts: &mut [Sgd<D>; 2],
        s: &mut GradScaler<D>,
        x: &Tensor<D>,
        y: &Tensor<D>,
    ) -> devtype::Result<()> {
        m.l1.zero_grad();
        m.l2.zero_grad();
        s.scale(&m.loss(x, y)).try_backward()?;
        let [a, b] = opts;
        s.try_step(a, &mut m.l1)?;
        s.try_step(b, &mut m.l2)?;
        s.try_update()
    }
    let graph = devtype::cuda::capture(gpu, |_| {
        scaled(&mut graphed, &mut graphed_opt, &mut graphed_scaler, &x, &y)
    })
    .unwrap();
    scaled(&mut eager, &mut eager_opt, &mut eager_scaler, &x, &y).unwrap();
    for _ in 0..4 {
        graph.replay().unwrap();
        scaled(&mut eager, &mut eager_opt, &mut eager_scaler, &x, &y).unwrap();
    }
    assert_eq!(graphed.values(), eager.values());
}

#[test]
fn a_sync_or_a_compile_inside_a_capture_is_an_error_and_the_device_stays_usable() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    let x = Tensor::<Cuda<0>>::from_vec(vec![-1.0, 2.0, -3.0, 4.0], [4], gpu);

    // Reading a value back makes the host wait: refused by the driver during the capture.
    let err = devtype::cuda::capture(gpu, |cap| {
        let y = x.relu();
        if !cap.is_warm_up() {
            y.try_to_vec()?;
        }
        Ok(())
    })
    .err()
    .expect("a sync inside a capture must fail");
    assert!(
        err.to_string()
            .contains("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
        "{err}"
    );
    assert_eq!(
        x.relu().to_vec(),
        vec![0.0, 2.0, 0.0, 4.0],
        "usable after a failed capture"
    );

    // An op family the warm-up never ran would compile and load its kernels in the capture.
    let err = devtype::cuda::capture(gpu, |cap| {
        if !cap.is_warm_up() {
            x.try_softmax(0)?;
        }
        Ok(())
    })
    .err()
    .expect("a kernel compile inside a capture must fail");
    assert_eq!(
        err.to_string(),
        "CUDA error in cuModuleLoadData: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (code 900)"
    );
    let e: Vec<f64> = [-1.0f64, 2.0, -3.0, 4.0].iter().map(|v| v.exp()).collect();
    let want: Vec<f32> = e
        .iter()
        .map(|v| (v / e.iter().sum::<f64>()) as f32)
        .collect();
    let got = x.softmax(0).to_vec();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-6,
            "softmax after the failed capture: {got:?} vs {want:?}"
        );
    }

    // An explicit synchronize fails too.
    let err = devtype::cuda::capture(gpu, |cap| {
        if !cap.is_warm_up() {
            gpu.synchronize()?;
        }
        Ok(())
    })
    .err()
    .expect("synchronize inside a capture must fail");
    assert!(err.to_string().contains("STREAM_CAPTURE"), "{err}");
    assert_eq!((&x * 2.0).to_vec(), vec![-2.0, 4.0, -6.0, 8.0]);

    // A module on the capturing device does not move to the CPU inside a capture (the lesson
    // graph_module_to_cpu_in_capture); after it, the module moves to the GPU and from there on.
    let cap = devtype::cuda::Capturing::new(gpu);
    let layer = Linear::from_parameters(x.reshape(&[1, 4]).to(cap), None);
    devtype::cuda::capture(gpu, |dev| {
        let _ = layer.forward(&x.reshape(&[1, 4]).to(dev));
        Ok(())
    })
    .unwrap();
    assert_eq!(
        layer.try_to(gpu).unwrap().to(Cpu).weight().to_vec(),
        vec![-1.0, 2.0, -3.0, 4.0],
        "after the capture, the module moves to the GPU, then to the CPU"
    );
}

/// The driver backs the memory a capture allocates only when a graph made from the capture
/// runs. A tensor made in a capture and kept past it is an error to use until a replay ran (a
/// kernel reading its address would fault and end the context), and when none ever can (the
/// capture failed, the graph was dropped unreplayed), dropping it frees nothing: the driver
/// refuses that free, and the error would surface in the next unrelated call.
#[test]
fn a_tensor_made_in_a_capture_holds_memory_once_its_graph_ran() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::{capture, Capturing};
    let x = Tensor::<Cuda<0>>::from_vec(vec![1.0, -2.0, 3.0], [3], gpu);
    let unbacked = |t: &Tensor<Capturing<Cuda<0>>>| {
        // (To the plain GPU is a change of type, no copy; the read is what touches memory.)
        let e = t
            .try_to(gpu)
            .and_then(|t| t.try_to_vec())
            .expect_err("read a tensor whose graph never ran")
            .to_string();
        assert!(e.contains("no replay of that graph has run"), "{e}");
    };

    // A failed capture that lets a tensor out: nothing is at its address, ever.
    let mut kept = None;
    let failed = capture(gpu, |dev| {
        let y = x.to(dev).relu();
        if !dev.is_warm_up() {
            kept = Some(y);
            gpu.synchronize()?;
        }
        Ok(())
    });
    assert!(failed.is_err());
    let y = kept.take().expect("the recorded run kept its tensor");
    unbacked(&y);
    assert!(y.try_add(&y).is_err(), "an op on it");
    drop(y);
    assert_eq!(
        x.relu().to_vec(),
        vec![1.0, 0.0, 3.0],
        "usable after the drop"
    );

    // A graph made fine: its tensor is real once a replay ran, not before.
    let mut out = None;
    let graph = capture(gpu, |dev| {
        out = Some(x.to(dev).relu() * 2.0);
        Ok(())
    })
    .unwrap();
    let y = out.take().unwrap();
    unbacked(&y);
    graph.replay().unwrap();
    assert_eq!(y.try_to(gpu).unwrap().to_vec(), vec![2.0, 0.0, 6.0]);
    drop(graph);
    drop(y);
    assert_eq!(
        (&x + 1.0).to_vec(),
        vec![2.0, -1.0, 4.0],
        "usable after the frees"
    );

    // A graph dropped without a replay: its tensor never holds memory.
    let mut out = None;
    let graph = capture(gpu, |dev| {
        out = Some(x.to(dev) * 3.0);
        Ok(())
    })
    .unwrap();
    drop(graph);
    let y = out.take().unwrap();
    unbacked(&y);
    drop(y);
    assert_eq!(
        (&x * 4.0).to_vec(),
        vec![4.0, -8.0, 12.0],
        "usable after the drop"
    );
}

#[test]
fn static_inputs_take_new_batches_and_the_static_output_is_read_after_each_replay() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::{Capturing, StaticTensor};
    let mut rng = Rng::new("cuda graph static inputs");
    let mut eager = Mlp::new(&mut rng, gpu);
    // The graphed model lives on the capturing device: the step cannot read it back.
    let cap = Capturing::new(gpu);
    let c = |m: &Linear<Cuda<0>>| {
        Linear::from_parameters(
            m.weight().detach().to(cap),
            m.bias().map(|b| b.detach().to(cap)),
        )
    };
    let mut graphed = Mlp {
        l1: c(&eager.l1),
        l2: c(&eager.l2),
    };
    let batches: Vec<(Tensor<Cuda<0>>, Tensor<Cuda<0>>)> = (0..4)
        .map(|_| {
            (
                random(&mut rng, &[8, 12], gpu),
                random(&mut rng, &[8, 4], gpu),
            )
        })
        .collect();
    let mut x = StaticTensor::new(&batches[0].0);
    let mut y = StaticTensor::new(&batches[0].1);
    let mut loss = StaticTensor::new(&Tensor::<Cuda<0>>::zeros([], gpu));
    let (mut eager_opt, mut graphed_opt) = (sgd(), sgd());
    let graph = devtype::cuda::capture(gpu, |dev| {
        let (xs, ys) = (x.get(dev), y.get(dev));
        loss.set(&graphed.loss(&xs, &ys).detach());
        step(&mut graphed, &mut graphed_opt, &xs, &ys)
    })
    .unwrap();
    // The warm-up was a real step on batch 0 (the output buffer is the graph's from now on:
    // its values are the last replay's).
    step(&mut eager, &mut eager_opt, &batches[0].0, &batches[0].1).unwrap();
    for (bx, by) in &batches[1..] {
        x.copy_from(bx);
        y.copy_from(by);
        graph.replay().unwrap();
        let want = eager.loss(bx, by).to_vec();
        step(&mut eager, &mut eager_opt, bx, by).unwrap();
        assert_eq!(loss.read().to_vec(), want, "the loss of this batch");
    }
    assert_eq!(graphed.values(), eager.values());
    // A read is a copy: it keeps its values when the graph runs again.
    let before = loss.read();
    let kept = before.to_vec();
    graph.replay().unwrap();
    assert_eq!(before.to_vec(), kept);

    // A batch of another shape is PyTorch's `copy_` error, and nothing is written.
    let err = x
        .try_copy_from(&random(&mut rng, &[8, 11], gpu))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "The size of tensor a (12) must match the size of tensor b (11) at non-singleton dimension 1"
    );
    let err = x
        .try_copy_from(&random(&mut rng, &[2, 8, 12], gpu))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "output with shape [8, 12] doesn't match the broadcast shape [2, 8, 12]"
    );
    // A broadcast source fills every row.
    let row = random(&mut rng, &[12], gpu);
    x.copy_from(&row);
    let want: Vec<f32> = row.to_vec().repeat(8);
    assert_eq!(x.read().to_vec(), want);
}

/// Checks that `mask` (dropout of ones with probability `p`) is a dropout mask: every value
/// is 0 or `1 / (1 - p)` (in `f32`, as the kernel scales), and the zeros are a fraction near
/// `p` (within five standard deviations of a binomial).
fn assert_dropout_mask(mask: &[f32], p: f64, what: &str) {
    let scale = (1.0 / (1.0 - p)) as f32;
    assert!(
        mask.iter().all(|&v| v == 0.0 || v == scale),
        "{what}: a value that is neither 0 nor {scale}"
    );
    let n = mask.len() as f64;
    let zeros = mask.iter().filter(|&&v| v == 0.0).count() as f64 / n;
    let sd = (p * (1.0 - p) / n).sqrt();
    assert!(
        (zeros - p).abs() <= 5.0 * sd,
        "{what}: {zeros} of the values are zero, p = {p}"
    );
}

#[test]
fn dropout_in_a_graph_draws_fresh_numbers_at_each_replay() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::StaticTensor;
    use devtype::nn::functional::dropout;
    let (p, n) = (0.25, 4096);
    let x = StaticTensor::new(&Tensor::<Cuda<0>>::ones([n], gpu));
    let mut out = StaticTensor::new(&Tensor::<Cuda<0>>::zeros([n], gpu));
    devtype::manual_seed(11);
    let graph = devtype::cuda::capture(gpu, |dev| {
        out.set(&dropout(&x.get(dev), p, true));
        Ok(())
    })
    .unwrap();
    let mut masks = Vec::new();
    for _ in 0..3 {
        graph.replay().unwrap();
        masks.push(out.read().to_vec());
    }
    for (i, m) in masks.iter().enumerate() {
        assert_dropout_mask(m, p, &format!("replay {i}"));
    }
    assert_ne!(masks[0], masks[1], "two replays drew the same mask");
    assert_ne!(masks[1], masks[2], "two replays drew the same mask");

    // The k-th replay draws what the (k + 1)-th eager dropout draws from the same seed (the
    // warm-up being the first), on the CPU too: the counter-based stream is the same on every
    // device.
    devtype::manual_seed(11);
    let ones = Tensor::<Cpu>::ones([n], Cpu);
    let _warm_up = dropout(&ones, p, true);
    for (i, m) in masks.iter().enumerate() {
        assert_eq!(
            &dropout(&ones, p, true).to_vec(),
            m,
            "replay {i} against the CPU"
        );
    }

    // `{:?}` still prints a GPU tensor's values (a capturing device's tensors have no `Debug`).
    let t = out.read();
    assert_eq!(format!("{t:?}"), format!("{t}"));
    assert!(format!("{t:?}").contains("device='cuda:0'"), "{t:?}");

    // `manual_seed` between replays applies to the next one, as for an eager draw.
    devtype::manual_seed(11);
    graph.replay().unwrap();
    let again = out.read().to_vec();
    devtype::manual_seed(11);
    assert_eq!(again, dropout(&ones, p, true).to_vec(), "after manual_seed");
}

#[test]
fn randn_in_a_graph_draws_the_eager_stream() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    use devtype::cuda::StaticTensor;
    let mut out = StaticTensor::new(&Tensor::<Cuda<0>>::zeros([3, 5], gpu));
    devtype::manual_seed(5);
    // An odd count first, so that the normal draw starts at an odd position of the stream.
    let graph = devtype::cuda::capture(gpu, |dev| {
        let u = Tensor::rand([3], dev);
        out.set(&(Tensor::randn([3, 5], dev) + u.sum()));
        Ok(())
    })
    .unwrap();
    let mut got: Vec<Vec<f32>> = Vec::new();
    for _ in 0..3 {
        graph.replay().unwrap();
        got.push(out.read().to_vec());
    }
    // The same draws eagerly on the CPU, from the same seed, after the warm-up's.
    devtype::manual_seed(5);
    let _warm_up = (Tensor::rand([3], Cpu), Tensor::randn([3, 5], Cpu));
    for (i, got) in got.iter().enumerate() {
        let u = Tensor::rand([3], Cpu);
        let want = (Tensor::randn([3, 5], Cpu) + u.sum()).to_vec();
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-5,
                "replay {i}: {got:?} against {want:?}"
            );
        }
    }
    assert_ne!(got[0], got[1], "two replays drew the same numbers");
}

/// One SGD step of `model` with dropout (`p = 0.3`) between the layers.
fn step_with_dropout<D: Device>(
    model: &mut Mlp<D>,
    opts: &mut [Sgd<D>; 2],
    x: &Tensor<D>,
    y: &Tensor<D>,
) -> devtype::Result<()> {
    use devtype::nn::functional::try_dropout;
    model.l1.zero_grad();
    model.l2.zero_grad();
    let h = try_dropout(&model.l1.forward(x).relu(), 0.3, true)?;
    MSELoss::new()
        .forward(&model.l2.forward(&h), y)
        .try_backward()?;
    opts[0].try_step(&mut model.l1)?;
    opts[1].try_step(&mut model.l2)
}

#[test]
fn a_replayed_step_with_dropout_equals_eager_steps_exactly() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(gpu) = common::gpu() else { return };
    let mut rng = Rng::new("cuda graph dropout step");
    let initial = Mlp::new(&mut rng, gpu);
    let x = random(&mut rng, &[32, 12], gpu);
    let y = random(&mut rng, &[32, 4], gpu);
    let replays = 5;

    // Captured: the warm-up is the first step, each replay one more, each with fresh masks.
    let mut graphed = initial.copy();
    let mut graphed_opt = sgd();
    devtype::manual_seed(21);
    let graph = devtype::cuda::capture(gpu, |_| {
        step_with_dropout(&mut graphed, &mut graphed_opt, &x, &y)
    })
    .unwrap();
    for _ in 0..replays {
        graph.replay().unwrap();
    }
    let after_graph = devtype::get_rng_state();

    // Eager from the same seed: the same masks, so the same parameters bit for bit, and the
    // generator at the same place.
    let mut eager = initial.copy();
    let mut eager_opt = sgd();
    devtype::manual_seed(21);
    for _ in 0..=replays {
        step_with_dropout(&mut eager, &mut eager_opt, &x, &y).unwrap();
    }
    assert_eq!(graphed.values(), eager.values(), "after {replays} replays");
    assert_eq!(devtype::get_rng_state(), after_graph);

    // The masks matter: the same steps with the first mask at every step (what a graph with
    // its random numbers frozen at capture would do) end elsewhere.
    let mut frozen = initial.copy();
    let mut frozen_opt = sgd();
    for _ in 0..=replays {
        devtype::manual_seed(21);
        step_with_dropout(&mut frozen, &mut frozen_opt, &x, &y).unwrap();
    }
    assert_ne!(frozen.values(), eager.values());
}
