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
    fn values(&self) -> Vec<Vec<f32>> {
        [&self.l1, &self.l2]
            .iter()
            .flat_map(|l| l.parameters())
            .map(|p| p.to(Cpu).to_vec())
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
