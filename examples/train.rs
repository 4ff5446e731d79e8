//! The seed's training loop, for real: an MLP learns three interleaved spirals (10,000 points
//! from `devtype::data::spirals` with a fixed seed) or MNIST (`devtype::data::Mnist`), on
//! `Cuda<0>` when it opens, otherwise on the CPU.
//!
//! The model moves to the device once; a `DataLoader` built for the same device shuffles and
//! assembles every batch on the host (on two worker threads, ahead of the loop) and hands it
//! over already on the device, typed on it; the loss is accumulated on the device and read once per epoch (one host sync per
//! epoch, not per batch). The trained parameters are saved as safetensors.
//!
//! ```text
//! cargo run --release --example train                     # spirals
//! cargo run --release --example train -- --mnist DIR      # MNIST from IDX files in DIR
//! cargo run --release --example train -- --epochs 5       # fewer or more epochs
//! cargo run --release --example train -- --out model.safetensors
//! cargo run --release --example train -- --amp bf16       # mixed precision (or f16)
//! cargo run --release --example train -- --stop-after 10    # epochs 1 to 10, saved
//! cargo run --release --example train -- --resume spirals-run.safetensors  # 11 to 30
//! ```
//!
//! After every epoch the whole run is saved to one checkpoint (`--checkpoint PATH`, by default
//! `spirals-run.safetensors`): the model, Adam's moments and step counts, the `GradScaler`,
//! the cosine schedule's position (which is also the epoch count) and the random generator.
//! `--resume PATH` loads it into freshly built objects and carries on from the next epoch:
//! the resumed run ends with the very parameters of an uninterrupted one.
//!
//! With `--amp`, the products of the linear layers run in `bf16` or `f16` inside
//! `devtype::amp::autocast` while the parameters, the loss and Adam stay `f32`; with `f16`, a
//! `GradScaler` scales the loss so small gradients survive, and skips the steps whose gradients
//! overflowed, deciding on the device.
//!
//! With `--amp f16` on spirals the mean loss rises in the last epoch (0.0052 -> 0.0348 on the
//! CPU) and recovers within a few dozen steps. Measured per step: the loss starts climbing ten
//! steps before the one skipped step of that epoch (an overflow it causes, not its cause); every
//! skipped step leaves the parameters untouched; the same rise happens with `f16` products and
//! no `GradScaler` at all, but not in `f32` or `bf16`, nor in `f16` at a learning rate of
//! `2e-3`. It is Adam's late-training instability at `lr = 3e-3`, set off by the rounding of
//! `f16` products, not a fault of the scaler or of a kernel.

use devtype::amp::{autocast_dtype, GradScaler};
use devtype::data::{spirals, DataLoader, Dataset, Mnist};
use devtype::device::{run_on_best_device, DeviceJob};
use devtype::nn::{CrossEntropyLoss, Linear, ReLU};
use devtype::optim::{load_checkpoint, save_checkpoint, Adam, LrScheduler};
use devtype::prelude::*;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

/// The model: a struct of layers, made a module by one line.
struct Mlp<D: Device> {
    fc1: Linear<D>,
    act: ReLU,
    fc2: Linear<D>,
    fc3: Linear<D>,
}
devtype::module!(Mlp<D> { fc1, act, fc2, fc3 });

impl Mlp<Cpu> {
    fn new(inputs: usize, hidden: usize, classes: usize) -> Self {
        Mlp {
            fc1: Linear::new(inputs, hidden, Cpu),
            act: ReLU,
            fc2: Linear::new(hidden, hidden, Cpu),
            fc3: Linear::new(hidden, classes, Cpu),
        }
    }
}

impl<D: Device> Forward<D> for Mlp<D> {
    fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
        let x = self.act.forward(self.fc1.forward(x));
        let x = self.act.forward(self.fc2.forward(x));
        self.fc3.forward(x)
    }
}

struct Job {
    train: Dataset,
    test: Dataset,
    hidden: usize,
    epochs: usize,
    batch: usize,
    lr: f64,
    out: PathBuf,
    /// The type products run in (`--amp`), if not `f32`.
    amp: Option<DType>,
    /// Where the whole run is saved after every epoch.
    checkpoint: PathBuf,
    /// A checkpoint to resume from.
    resume: Option<PathBuf>,
    /// Stop (saved) after this many epochs, as an interrupted run would.
    stop_after: Option<usize>,
}

/// `f` inside `autocast` when mixed precision is on.
fn maybe_autocast<R>(amp: Option<DType>, f: impl FnOnce() -> R) -> R {
    match amp {
        Some(dtype) => autocast_dtype(dtype, f).expect("--amp takes f16 or bf16"),
        None => f(),
    }
}

impl DeviceJob for Job {
    /// The held-out accuracy; `None` for a run stopped by `--stop-after`.
    type Output = Option<f64>;

    fn run<D: Device + HostSync>(self, dev: D) -> Option<f64> {
        println!(
            "training on {dev}: {} train / {} held-out points, {} epochs, products in {}",
            self.train.len(),
            self.test.len(),
            self.epochs,
            self.amp
                .map_or("f32", |d| if d == DType::F16 { "f16" } else { "bf16" })
        );
        devtype::manual_seed(0);
        let model = Mlp::new(self.train.features(), self.hidden, self.train.classes);
        let mut model = model.to(dev); // the model moves once
        let criterion = CrossEntropyLoss::new();
        let mut opt = Adam::new(self.lr);
        // f16 needs loss scaling (its smallest normal is 6e-5); bf16 has f32's range.
        let mut scaler = (self.amp == Some(DType::F16)).then(|| GradScaler::new(dev));
        // The rate follows a cosine over the epochs, down to a tenth; its position is the
        // number of epochs done.
        let mut schedule =
            LrScheduler::cosine_annealing_lr(&mut opt, self.epochs as i64, self.lr / 10.0)
                .expect("epochs > 0");
        if let Some(path) = &self.resume {
            if let Err(e) = load_checkpoint(
                path,
                &mut model,
                &mut opt,
                scaler.as_mut(),
                Some(&mut schedule),
            ) {
                eprintln!("cannot resume from {}: {e}", path.display());
                std::process::exit(2);
            }
            println!(
                "resumed from {} after epoch {}",
                path.display(),
                schedule.last_epoch()
            );
        }
        let first_epoch = schedule.last_epoch() as usize;
        // Shuffled with a fixed seed (the same batches on every run, a new order each epoch),
        // prepared by two threads while the model computes.
        let loader = DataLoader::new(self.train, dev)
            .batch_size(self.batch)
            .shuffle(true)
            .seed(7)
            .num_workers(2)
            // Batches go host -> pinned buffer -> GPU while the previous one computes (on the
            // CPU the loader hands them over as they are).
            .pin_memory(true);
        let steps = loader.len();
        let bar = ProgressBar::new((steps * self.epochs) as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} steps {elapsed_precise} {msg}")
                .expect("template"),
        );
        let start = Instant::now();
        for epoch in first_epoch..self.epochs {
            let syncs_before = devtype::cuda::sync_count();
            let mut total = Tensor::<D>::zeros([], dev); // the epoch's loss, summed on the device
            for batch in loader.iter_epoch(epoch as u64) {
                // Every batch arrives on `dev`: (Tensor<D>, Tensor<D, i64>).
                let (x, y) = match batch {
                    Ok(batch) => batch,
                    Err(e) => {
                        bar.abandon();
                        eprintln!("cannot load a batch: {e}");
                        std::process::exit(1);
                    }
                };
                model.zero_grad();
                let logits = maybe_autocast(self.amp, || model.forward(&x));
                let loss = criterion.forward(&logits, &y); // the loss in f32, as autocast does
                match scaler.as_mut() {
                    Some(scaler) => {
                        scaler.scale(&loss).backward();
                        scaler.step(&mut opt, &mut model); // skipped on the device if inf/NaN
                        scaler.update();
                    }
                    None => {
                        loss.backward();
                        opt.step(&mut model);
                    }
                }
                total = &total + &loss.detach(); // no host sync here
                bar.inc(1);
            }
            let mean = total.item() / steps as f32; // the one host sync of the epoch
            let syncs = devtype::cuda::sync_count() - syncs_before;
            let line = if dev.dyn_device().is_cpu() {
                format!("epoch {:>3}: loss {mean:.4}", epoch + 1)
            } else {
                format!("epoch {:>3}: loss {mean:.4} ({syncs} host sync)", epoch + 1)
            };
            if bar.is_hidden() {
                println!("{line}");
            } else {
                bar.println(line);
            }
            bar.set_message(format!("loss {mean:.4}"));
            if let Err(e) = schedule.step(&mut opt) {
                eprintln!("schedule: {e}");
            }
            // The whole run, so that `--resume` carries on from here.
            if let Err(e) = save_checkpoint(
                &self.checkpoint,
                &model,
                &opt,
                scaler.as_ref(),
                Some(&schedule),
            ) {
                eprintln!("could not save the checkpoint: {e}");
            }
            if self.stop_after == Some(epoch + 1) {
                bar.finish_and_clear();
                println!(
                    "stopped after epoch {}: the run is in {path}; carry on with --resume {path}",
                    epoch + 1,
                    path = self.checkpoint.display()
                );
                return None;
            }
        }
        bar.finish_and_clear();
        let seconds = start.elapsed().as_secs_f64();

        // Held-out accuracy, without recording a graph.
        model.eval();
        let (x, y) = (self.test.inputs.to(dev), self.test.labels.to(dev));
        let correct = no_grad(|| {
            maybe_autocast(self.amp, || model.forward(&x))
                .argmax(1)
                .eq(&y)
                .to_dtype::<f32>()
                .sum_all()
                .item()
        });
        let accuracy = correct as f64 / self.test.len() as f64;
        println!(
            "held-out accuracy {:.2}% after {seconds:.1} s of training",
            100.0 * accuracy
        );
        match model.save(&self.out) {
            Ok(()) => println!(
                "saved {} parameters to {}",
                model.num_parameters(),
                self.out.display()
            ),
            Err(e) => eprintln!("could not save the model: {e}"),
        }
        Some(accuracy)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let job = match value("--mnist") {
        Some(dir) => {
            let Mnist { train, test } = match Mnist::load(&dir) {
                Ok(mnist) => mnist,
                Err(e) => {
                    eprintln!("cannot read MNIST from {dir}: {e}");
                    std::process::exit(2);
                }
            };
            Job {
                train,
                test,
                hidden: 256,
                epochs: 3,
                batch: 128,
                lr: 1e-3,
                out: PathBuf::from("mnist-mlp.safetensors"),
                amp: None,
                checkpoint: PathBuf::from("mnist-run.safetensors"),
                resume: None,
                stop_after: None,
            }
        }
        None => {
            let (train, test) = spirals(10_000, 2024).split_at(8_000);
            Job {
                train,
                test,
                hidden: 64,
                epochs: 30,
                batch: 64,
                lr: 3e-3,
                out: PathBuf::from("spirals-mlp.safetensors"),
                amp: None,
                checkpoint: PathBuf::from("spirals-run.safetensors"),
                resume: None,
                stop_after: None,
            }
        }
    };
    let epochs = match value("--epochs").map(|n| n.parse::<usize>()) {
        None => job.epochs,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("--epochs takes a positive whole number");
            std::process::exit(2);
        }
    };
    let amp = match value("--amp").as_deref() {
        None => None,
        Some("bf16") => Some(DType::BF16),
        Some("f16") => Some(DType::F16),
        Some(other) => {
            eprintln!("--amp takes bf16 or f16, not {other}");
            std::process::exit(2);
        }
    };
    let job = Job {
        out: value("--out").map(PathBuf::from).unwrap_or(job.out),
        epochs,
        amp,
        checkpoint: value("--checkpoint")
            .map(PathBuf::from)
            .unwrap_or(job.checkpoint),
        resume: value("--resume").map(PathBuf::from),
        stop_after: match value("--stop-after").map(|n| n.parse::<usize>()) {
            None => None,
            Some(Ok(n)) if n > 0 => Some(n),
            Some(_) => {
                eprintln!("--stop-after takes a positive whole number");
                std::process::exit(2);
            }
        },
        ..job
    };
    let Some(accuracy) = run_on_best_device(job) else {
        return; // stopped by --stop-after, saved
    };
    if accuracy < 0.95 {
        eprintln!("accuracy below 95%");
        std::process::exit(1);
    }
}
