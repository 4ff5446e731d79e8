//! A two-layer transformer decoder learns to reverse sequences of digits: given
//! `a1 .. an SEP`, it writes `an .. a1`, one token at a time, from the causal self-attention
//! of `MultiheadAttention`, `LayerNorm`, `GELU` and token and position `Embedding`s. On
//! `Cuda<0>` when it opens, otherwise on the CPU (`--device cpu` to choose).
//!
//! ```text
//! cargo run --release --example transformer                    # best device
//! cargo run --release --example transformer -- --device cpu    # or cuda:0
//! cargo run --release --example transformer -- --steps 600     # fewer or more steps
//! cargo run --release --example transformer -- --stop-after 2  # blocks 1 and 2, saved
//! cargo run --release --example transformer -- --resume reverse-run.safetensors
//! ```
//!
//! Every batch is generated afresh from a seeded stream (the same run every time); training
//! is next-token prediction on the reversed half. After every block of 100 steps the whole
//! run is saved (`--checkpoint PATH`, by default `reverse-run.safetensors`): the model, Adam's
//! state and the schedule's position; `--resume PATH` carries on from there. The held-out
//! token accuracy (teacher forcing, 2,048 sequences never trained on) must reach 99%; the
//! greedy decoding's accuracy, feeding the model its own tokens, is printed too.

use devtype::device::DeviceJob;
use devtype::nn::{Approximate, Embedding, LayerNorm, Linear, MultiheadAttention, GELU};
use devtype::optim::{load_checkpoint, save_checkpoint, Adam, LrScheduler};
use devtype::prelude::*;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

/// Digits 0..9 and the separator.
const DIGITS: usize = 10;
const SEP: i64 = DIGITS as i64;
const VOCAB: usize = DIGITS + 1;
/// Digits per sequence: the model sees `2 · LEN` tokens.
const LEN: usize = 8;
const STEPS_PER_BLOCK: usize = 100;

/// One pre-norm decoder block: causal self-attention and a GELU MLP, each residual.
struct Block<D: Device> {
    ln1: LayerNorm<D>,
    attn: MultiheadAttention<D>,
    ln2: LayerNorm<D>,
    fc1: Linear<D>,
    act: GELU,
    fc2: Linear<D>,
}
devtype::module!(Block<D> { ln1, attn, ln2, fc1, act, fc2 });

impl<D: Device> Block<D> {
    fn forward(&self, x: &Tensor<D>) -> Tensor<D> {
        let h = self.ln1.forward(x);
        // The causal mask is made inside, on the input's device.
        let x = x + &self.attn.forward(&h, &h, &h, None, true);
        let h = self.act.forward(self.fc1.forward(self.ln2.forward(&x)));
        &x + &self.fc2.forward(&h)
    }
}

/// Token and position embeddings, two blocks, a final norm and the head.
struct Decoder<D: Device> {
    tok: Embedding<D>,
    pos: Embedding<D>,
    blocks: Vec<Block<D>>,
    ln_f: LayerNorm<D>,
    head: Linear<D>,
}
devtype::module!(Decoder<D> { tok, pos, blocks, ln_f, head });

impl Decoder<Cpu> {
    fn new(d: usize, heads: usize, layers: usize) -> Self {
        let block = || Block {
            ln1: LayerNorm::new(&[d], Cpu),
            attn: MultiheadAttention::new(d, heads, Cpu),
            ln2: LayerNorm::new(&[d], Cpu),
            fc1: Linear::new(d, 4 * d, Cpu),
            act: GELU::new(Approximate::Tanh),
            fc2: Linear::new(4 * d, d, Cpu),
        };
        Decoder {
            tok: Embedding::new(VOCAB, d, Cpu),
            pos: Embedding::new(2 * LEN, d, Cpu),
            blocks: (0..layers).map(|_| block()).collect(),
            ln_f: LayerNorm::new(&[d], Cpu),
            head: Linear::new(d, VOCAB, Cpu),
        }
    }
}

impl<D: Device> Decoder<D> {
    /// Logits `[batch, t, VOCAB]` for token ids `[batch, t]` (on the model's device).
    fn forward(&self, ids: &Tensor<D, i64>) -> Tensor<D> {
        let t = ids.shape()[1];
        // Positions made on the ids' device: nothing here can be on another one.
        let positions = Tensor::<D, i64>::arange(t, ids.device());
        let mut x = self.tok.forward(ids) + &self.pos.forward(&positions);
        for block in &self.blocks {
            x = block.forward(&x);
        }
        self.head.forward(self.ln_f.forward(&x))
    }
}

/// SplitMix64, for the generated sequences.
struct Stream(u64);

impl Stream {
    fn digit(&mut self) -> i64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % DIGITS as u64) as i64
    }

    /// `batch` sequences: inputs `[a, SEP, reversed a without its last]` and the targets
    /// (the reversed `a`), both on the host.
    fn batch(&mut self, batch: usize) -> (Tensor<Cpu, i64>, Tensor<Cpu, i64>) {
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for _ in 0..batch {
            let a: Vec<i64> = (0..LEN).map(|_| self.digit()).collect();
            let rev: Vec<i64> = a.iter().rev().copied().collect();
            inputs.extend_from_slice(&a);
            inputs.push(SEP);
            inputs.extend_from_slice(&rev[..LEN - 1]);
            targets.extend_from_slice(&rev);
        }
        (
            Tensor::from_vec(inputs, [batch, 2 * LEN], Cpu),
            Tensor::from_vec(targets, [batch, LEN], Cpu),
        )
    }
}

/// The logits of the reversed half, `[batch · LEN, VOCAB]`: position `LEN + i` (the separator,
/// then the reversed digits so far) predicts target `i`.
fn answer_logits<D: Device>(logits: &Tensor<D>) -> Tensor<D> {
    logits.narrow(1, LEN, LEN).reshape(&[-1, VOCAB as isize])
}

struct Job {
    steps: usize,
    batch: usize,
    lr: f64,
    d_model: usize,
    heads: usize,
    checkpoint: PathBuf,
    resume: Option<PathBuf>,
    stop_after: Option<usize>,
}

impl DeviceJob for Job {
    /// Teacher-forced token accuracy; `None` for a run stopped by `--stop-after`.
    type Output = Option<f64>;

    fn run<D: Device + HostSync>(self, dev: D) -> Option<f64> {
        println!(
            "training on {dev}: reverse {LEN} digits, 2 layers, d_model {}, {} heads, {} steps of {}",
            self.d_model, self.heads, self.steps, self.batch
        );
        devtype::manual_seed(0);
        let mut model = Decoder::new(self.d_model, self.heads, 2).to(dev);
        let mut opt = Adam::new(self.lr);
        let blocks = self.steps.div_ceil(STEPS_PER_BLOCK);
        let mut schedule =
            LrScheduler::cosine_annealing_lr(&mut opt, blocks as i64, self.lr / 20.0)
                .expect("steps > 0");
        if let Some(path) = &self.resume {
            if let Err(e) = load_checkpoint(path, &mut model, &mut opt, None, Some(&mut schedule)) {
                eprintln!("cannot resume from {}: {e}", path.display());
                std::process::exit(2);
            }
            println!(
                "resumed from {} after block {}",
                path.display(),
                schedule.last_epoch()
            );
        }
        let first = schedule.last_epoch() as usize;
        let bar = ProgressBar::new((blocks * STEPS_PER_BLOCK) as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} steps {elapsed_precise} {msg}")
                .expect("template"),
        );
        bar.set_position((first * STEPS_PER_BLOCK) as u64);
        let start = Instant::now();
        for block in first..blocks {
            // Each block's batches come from their own stream: a resumed run sees the same.
            let mut data = Stream(1_000 + block as u64);
            let mut total = Tensor::<D>::zeros([], dev);
            for _ in 0..STEPS_PER_BLOCK {
                let (x, y) = data.batch(self.batch);
                let (x, y) = (x.to(dev), y.to(dev).reshape(&[-1]));
                model.zero_grad();
                let loss = answer_logits(&model.forward(&x)).cross_entropy(&y);
                loss.backward();
                opt.step(&mut model);
                total = &total + &loss.detach();
                bar.inc(1);
            }
            let mean = total.item() / STEPS_PER_BLOCK as f32; // one host sync per block
            let line = format!("block {:>2}: loss {mean:.4}", block + 1);
            if bar.is_hidden() {
                println!("{line}");
            } else {
                bar.println(line);
            }
            bar.set_message(format!("loss {mean:.4}"));
            if let Err(e) = schedule.step(&mut opt) {
                eprintln!("schedule: {e}");
            }
            if let Err(e) = save_checkpoint(&self.checkpoint, &model, &opt, None, Some(&schedule)) {
                eprintln!("could not save the checkpoint: {e}");
            }
            if self.stop_after == Some(block + 1) {
                bar.finish_and_clear();
                println!(
                    "stopped after block {}: the run is in {path}; carry on with --resume {path}",
                    block + 1,
                    path = self.checkpoint.display()
                );
                return None;
            }
        }
        bar.finish_and_clear();
        let seconds = start.elapsed().as_secs_f64();

        // Held out: a stream never trained on.
        model.eval();
        let (x, y) = Stream(7).batch(2048);
        let (x, y) = (x.to(dev), y.to(dev));
        let (forced, greedy) = no_grad(|| {
            let correct = |pred: Tensor<D, i64>| {
                pred.eq(&y).to_dtype::<f32>().sum_all().item() as f64 / y.numel() as f64
            };
            let forced = correct(
                answer_logits(&model.forward(&x))
                    .argmax(1)
                    .reshape(&[-1, LEN as isize]),
            );
            // Greedy: the model's own tokens replace the reversed half, one at a time.
            let mut seq = x.narrow(1, 0, LEN + 1);
            for _ in 0..LEN {
                let logits = model.forward(&seq);
                let t = seq.shape()[1];
                let next = logits.narrow(1, t - 1, 1).argmax(2);
                seq = Tensor::cat((&seq, &next), 1);
            }
            (forced, correct(seq.narrow(1, LEN + 1, LEN)))
        });
        println!(
            "held-out token accuracy {:.2}% (greedy decoding {:.2}%) after {seconds:.1} s of training",
            100.0 * forced,
            100.0 * greedy
        );
        Some(forced)
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
    let positive = |flag: &str| match value(flag).map(|n| n.parse::<usize>()) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            eprintln!("{flag} takes a positive whole number");
            std::process::exit(2);
        }
    };
    let job = Job {
        steps: positive("--steps").unwrap_or(1_500),
        batch: 64,
        lr: 2e-3,
        d_model: 64,
        heads: 4,
        checkpoint: value("--checkpoint")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("reverse-run.safetensors")),
        resume: value("--resume").map(PathBuf::from),
        stop_after: positive("--stop-after"),
    };
    let accuracy = match value("--device").as_deref() {
        None => devtype::device::run_on_best_device(job),
        Some("cpu") => job.run(Cpu),
        Some("cuda:0" | "cuda") => match Cuda::<0>::open() {
            Ok(gpu) => job.run(gpu),
            Err(e) => {
                eprintln!("cannot open cuda:0: {e}");
                std::process::exit(2);
            }
        },
        Some(other) => {
            eprintln!("--device takes cpu or cuda:0, not {other}");
            std::process::exit(2);
        }
    };
    let Some(accuracy) = accuracy else {
        return; // stopped by --stop-after, saved
    };
    if accuracy < 0.99 {
        eprintln!("token accuracy below 99%");
        std::process::exit(1);
    }
}
