//! A training run resumes exactly: N + M steps in one go equal N steps, a full checkpoint
//! (`save_checkpoint`), loading it into freshly built objects (`load_checkpoint`), and M more
//! steps, bit for bit: for SGD with every option, Adam, AdamW, RMSprop, and a `GradScaler` run, each
//! with a schedule and batches drawn from the random generator (whose state is saved too).

mod common;

use devtype::amp::{autocast, GradScaler};
use devtype::nn::utils::clip_grad_norm_;
use devtype::nn::{CrossEntropyLoss, Linear, MSELoss, Module};
use devtype::optim::{
    load_checkpoint, save_checkpoint, Adam, LrScheduler, Optimizer, OptimizerState, RMSprop, Sgd,
};
use devtype::prelude::*;

type Model = Vec<Linear<Cpu>>;

/// The random generator is one per process and the tests of this file run on parallel
/// threads: each run holds this lock, so that no other test draws from the stream meanwhile.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn model() -> Model {
    vec![Linear::new(5, 8, Cpu), Linear::new(8, 3, Cpu)]
}

fn forward(m: &Model, x: &Tensor<Cpu>) -> Tensor<Cpu> {
    m[1].forward(m[0].forward(x).relu())
}

/// One step on a batch drawn from the generator.
fn step<O: Optimizer<Cpu>>(m: &mut Model, opt: &mut O, sched: &mut LrScheduler) {
    m.zero_grad();
    let x = Tensor::<Cpu>::randn([6, 5], Cpu);
    let y = Tensor::<Cpu>::randn([6, 3], Cpu);
    MSELoss::new().forward(&forward(m, &x), &y).backward();
    opt.step(m);
    sched.step(opt).unwrap();
}

fn bits(m: &Model) -> Vec<Vec<u32>> {
    m.parameters()
        .iter()
        .map(|p| p.to_vec().iter().map(|v| v.to_bits()).collect())
        .collect()
}

fn path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "devtype-resume-{name}-{}.safetensors",
        std::process::id()
    ))
}

/// Runs `n + m` steps in one go and `n`, save, load into fresh objects, `m`; compares.
fn resumes_exactly<O: OptimizerState<Cpu, f32>>(
    name: &str,
    make_opt: impl Fn() -> O,
    fresh_opt: impl Fn() -> O,
    make_sched: impl Fn(&mut O) -> LrScheduler,
) {
    let _rng = lock();
    let (n, m) = (5, 6);
    let seed = common::test_seed();
    devtype::manual_seed(seed);
    let mut a = model();
    let mut opt_a = make_opt();
    let mut sched_a = make_sched(&mut opt_a);
    for _ in 0..n + m {
        step(&mut a, &mut opt_a, &mut sched_a);
    }

    devtype::manual_seed(seed);
    let mut b = model();
    let mut opt_b = make_opt();
    let mut sched_b = make_sched(&mut opt_b);
    for _ in 0..n {
        step(&mut b, &mut opt_b, &mut sched_b);
    }
    let file = path(name);
    save_checkpoint(&file, &b, &opt_b, None, Some(&sched_b)).unwrap();
    drop((b, opt_b, sched_b));

    devtype::manual_seed(seed ^ 0xDEAD); // other weights, another stream
    let mut c = model();
    let mut opt_c = fresh_opt();
    let mut sched_c = make_sched(&mut opt_c);
    load_checkpoint(&file, &mut c, &mut opt_c, None, Some(&mut sched_c)).unwrap();
    std::fs::remove_file(&file).ok();
    for _ in 0..m {
        step(&mut c, &mut opt_c, &mut sched_c);
    }
    assert_eq!(
        bits(&a),
        bits(&c),
        "{name}: the resumed run differs (seed {seed})"
    );
    assert_eq!(opt_a.lr().to_bits(), opt_c.lr().to_bits(), "{name}: lr");
}

#[test]
fn sgd_with_every_option_resumes_exactly() {
    resumes_exactly(
        "sgd-nesterov",
        || {
            Sgd::new(0.05)
                .momentum(0.9)
                .weight_decay(0.01)
                .nesterov(true)
        },
        || Sgd::new(0.5), // the file's settings replace these
        |o| LrScheduler::cosine_annealing_lr(o, 4, 0.001).unwrap(),
    );
    resumes_exactly(
        "sgd-dampening",
        || {
            Sgd::new(0.05)
                .momentum(0.8)
                .dampening(0.3)
                .weight_decay(0.02)
        },
        || Sgd::new(0.5),
        |o| {
            let warm = LrScheduler::linear_lr(o, 0.2, 1.0, 3).unwrap();
            let decay = LrScheduler::exponential_lr(o, 0.9).unwrap();
            LrScheduler::sequential_lr(o, vec![warm, decay], &[4]).unwrap()
        },
    );
}

#[test]
fn adam_and_adamw_resume_exactly() {
    resumes_exactly(
        "adam",
        || Adam::new(0.01).betas(0.8, 0.99).weight_decay(0.01),
        || Adam::new(0.5),
        |o| LrScheduler::step_lr(o, 3, 0.5).unwrap(),
    );
    resumes_exactly(
        "adamw",
        || Adam::new(0.01).eps(1e-6).decoupled_weight_decay(0.1),
        || Adam::new(0.5),
        |o| LrScheduler::one_cycle_lr_default(o, 0.05, 20).unwrap(),
    );
}

#[test]
fn rmsprop_resumes_exactly() {
    resumes_exactly(
        "rmsprop",
        || {
            RMSprop::new(0.01)
                .alpha(0.9)
                .eps(1e-6)
                .weight_decay(0.01)
                .momentum(0.7)
                .centered(true)
        },
        || RMSprop::new(0.5), // the file's settings replace these
        |o| LrScheduler::step_lr(o, 3, 0.5).unwrap(),
    );
    resumes_exactly(
        "rmsprop-plain",
        || RMSprop::new(0.005),
        || RMSprop::new(0.5).momentum(0.9),
        |o| LrScheduler::exponential_lr(o, 0.9).unwrap(),
    );
    scaled_run_resumes("scaled-rmsprop", || RMSprop::new(0.01).momentum(0.5));
}

/// One `f16` autocast step with a scaler; `poison` puts an `inf` in the batch so the step is
/// skipped and the scale backs off.
fn scaled_step<O: Optimizer<Cpu>>(
    m: &mut Model,
    opt: &mut O,
    scaler: &mut GradScaler<Cpu>,
    k: usize,
) {
    m.zero_grad();
    let mut x = Tensor::<Cpu>::randn([6, 5], Cpu).to_vec();
    if k % 4 == 2 {
        x[0] = f32::INFINITY;
    }
    let x = Tensor::<Cpu>::from_vec(x, [6, 5], Cpu);
    let y = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 2, 0, 1, 2], [6], Cpu);
    let logits = autocast::<f16, _>(|| forward(m, &x));
    scaler
        .scale(CrossEntropyLoss::new().forward(&logits, &y))
        .backward();
    scaler.step(opt, m);
    scaler.update();
}

fn scaled_run_resumes<O: OptimizerState<Cpu, f32>>(name: &str, make_opt: impl Fn() -> O) {
    let _rng = lock();
    let (n, m) = (7, 7);
    let seed = common::test_seed();
    let scaler = || GradScaler::try_with(Cpu, 1024.0, 2.0, 0.5, 2).unwrap();
    devtype::manual_seed(seed);
    let mut a = model();
    let mut opt_a = make_opt();
    let mut sc_a = scaler();
    for k in 0..n + m {
        scaled_step(&mut a, &mut opt_a, &mut sc_a, k);
    }

    devtype::manual_seed(seed);
    let mut b = model();
    let mut opt_b = make_opt();
    let mut sc_b = scaler();
    for k in 0..n {
        scaled_step(&mut b, &mut opt_b, &mut sc_b, k);
    }
    let file = path(name);
    save_checkpoint(&file, &b, &opt_b, Some(&sc_b), None).unwrap();

    devtype::manual_seed(seed ^ 1);
    let mut c = model();
    let mut opt_c = make_opt();
    let mut sc_c = GradScaler::new(Cpu);
    load_checkpoint(&file, &mut c, &mut opt_c, Some(&mut sc_c), None).unwrap();
    std::fs::remove_file(&file).ok();
    assert_eq!(sc_c.get_scale(), sc_b.get_scale());
    assert_eq!(sc_c.growth_tracker(), sc_b.growth_tracker());
    for k in n..n + m {
        scaled_step(&mut c, &mut opt_c, &mut sc_c, k);
    }
    assert_eq!(
        bits(&a),
        bits(&c),
        "{name}: the resumed scaled run differs (seed {seed})"
    );
    assert_eq!(sc_a.get_scale(), sc_c.get_scale());
    assert_eq!(sc_a.growth_tracker(), sc_c.growth_tracker());
}

#[test]
fn a_grad_scaler_run_resumes_exactly() {
    scaled_run_resumes("scaled-sgd", || Sgd::new(0.05).momentum(0.9));
    // Adam's step count lives on the device once a step could be skipped: saved as `step`.
    scaled_run_resumes("scaled-adam", || Adam::new(0.01));
}

#[test]
fn loading_a_bad_checkpoint_changes_nothing() {
    let _rng = lock();
    devtype::manual_seed(common::test_seed());
    let mut b = model();
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut sched = LrScheduler::step_lr(&mut opt, 2, 0.5).unwrap();
    step(&mut b, &mut opt, &mut sched);
    let file = path("bad");
    save_checkpoint(&file, &b, &opt, None, Some(&sched)).unwrap();

    // Adam from an SGD file: an error, and nothing changed (not the model, not the rng).
    let mut c = model();
    let before = bits(&c);
    let rng = devtype::get_rng_state();
    let mut adam = Adam::new(0.3);
    let mut sched_c = LrScheduler::step_lr(&mut adam, 2, 0.5).unwrap();
    let err = load_checkpoint(&file, &mut c, &mut adam, None, Some(&mut sched_c)).unwrap_err();
    assert!(err.to_string().contains("not of Adam"), "{err}");
    assert_eq!(bits(&c), before);
    assert_eq!(adam.lr(), 0.3);
    assert_eq!(devtype::get_rng_state(), rng);
    assert_eq!(sched_c.last_epoch(), 0);

    // A scaler asked for but not saved: an error, and the model unchanged.
    let mut sgd = Sgd::new(0.3);
    let mut scaler = GradScaler::new(Cpu);
    let err = load_checkpoint(&file, &mut c, &mut sgd, Some(&mut scaler), None).unwrap_err();
    assert!(err.to_string().contains("scaler."), "{err}");
    assert_eq!(bits(&c), before);
    assert_eq!(sgd.lr(), 0.3);

    // A model of another shape: PyTorch's size-mismatch error, nothing changed.
    let mut other = vec![Linear::<Cpu>::new(5, 9, Cpu), Linear::new(9, 3, Cpu)];
    let err = load_checkpoint(&file, &mut other, &mut sgd, None, None).unwrap_err();
    assert!(
        err.to_string().contains("size mismatch for 0.weight"),
        "{err}"
    );
    assert_eq!(sgd.lr(), 0.3);
    std::fs::remove_file(&file).ok();
}

#[test]
fn a_gpu_checkpoint_resumes_on_the_cpu_and_back() {
    let Some(gpu) = common::gpu() else { return };
    let _rng = lock();
    devtype::manual_seed(common::test_seed());
    let cpu_model = model();
    let mut g = cpu_model.to(gpu);
    let mut opt = Adam::new(0.01);
    let x = Tensor::<Cpu>::randn([6, 5], Cpu);
    let y = Tensor::<Cpu>::randn([6, 3], Cpu);
    let run = |m: &mut Vec<Linear<_>>, opt: &mut Adam<_>, dev| {
        m.zero_grad();
        let (x, y) = (x.to(dev), y.to(dev));
        MSELoss::new()
            .forward(&m[1].forward(m[0].forward(&x).relu()), &y)
            .backward();
        opt.step(m);
    };
    run(&mut g, &mut opt, gpu);
    let file = path("gpu");
    save_checkpoint(&file, &g, &opt, None, None).unwrap();
    let mut c = model();
    let mut opt_c = Adam::new(0.5);
    load_checkpoint(&file, &mut c, &mut opt_c, None, None).unwrap();
    assert_eq!(bits(&c), bits(&g.to(Cpu)));
    let mut back = model().to(gpu);
    let mut opt_back = Adam::new(0.5);
    load_checkpoint(&file, &mut back, &mut opt_back, None, None).unwrap();
    std::fs::remove_file(&file).ok();
    run(&mut g, &mut opt, gpu);
    run(&mut back, &mut opt_back, gpu);
    assert_eq!(bits(&g.to(Cpu)), bits(&back.to(Cpu)));
}

/// The README's training example, verbatim (between the first and last line).
#[test]
fn the_readme_training_example() {
    let _rng = lock();
    let dev = Cpu; // or Cuda::<0>::open()?
    let path = std::env::temp_dir().join("devtype-readme-run.safetensors");
    let train = |model: &mut Linear<Cpu>, opt: &mut Adam<Cpu>, sched: &mut LrScheduler, steps| {
        for _ in 0..steps {
            model.zero_grad();
            let x = Tensor::randn([8, 4], dev); // drawn from the saved generator
            MSELoss::new()
                .forward(model.forward(&x), Tensor::<Cpu>::zeros([8, 2], dev))
                .backward();
            clip_grad_norm_(&*model, 1.0, 2.0);
            opt.step(model);
            sched.step(opt).unwrap();
        }
    };
    let fresh = || {
        let mut opt = Adam::new(1e-2).decoupled_weight_decay(0.01);
        let sched = LrScheduler::one_cycle_lr_default(&mut opt, 1e-2, 10).unwrap();
        (Linear::new(4, 2, Cpu).to(dev), opt, sched)
    };
    devtype::manual_seed(0);
    let (mut model, mut opt, mut sched) = fresh();
    train(&mut model, &mut opt, &mut sched, 10); // 10 steps in one go

    devtype::manual_seed(0);
    let (mut a, mut opt_a, mut sched_a) = fresh();
    train(&mut a, &mut opt_a, &mut sched_a, 4); // 4 steps, then saved...
    save_checkpoint(&path, &a, &opt_a, None, Some(&sched_a)).unwrap();
    let (mut b, mut opt_b, mut sched_b) = fresh(); // ...and resumed in fresh objects
    load_checkpoint(&path, &mut b, &mut opt_b, None, Some(&mut sched_b)).unwrap();
    train(&mut b, &mut opt_b, &mut sched_b, 6);
    assert_eq!(b.weight().to_vec(), model.weight().to_vec()); // bit for bit
    std::fs::remove_file(&path).ok();
}
