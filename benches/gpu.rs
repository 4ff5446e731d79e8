//! GPU benchmarks (issue 3, section 8), each next to its hardware or library baseline:
//!
//! - `relu(x + y)` on 256M f32: GB/s against a device-to-device copy of the same bytes;
//! - matmul 8192^3 f32: TFLOP/s against cuBLAS called directly;
//! - a chain of 1000 tiny element-wise ops: microseconds per op (launch overhead);
//! - a host-to-device copy of 256 MiB: GB/s, from pageable memory (`to`) and from pinned
//!   memory (`pin_memory` + `to_async`);
//! - one training step of the peers' workload D (784-512-10 MLP, batch 256, class-weighted
//!   cross-entropy, SGD): milliseconds, against PyTorch on the same GPU;
//! - mixed precision (issue 13): matmul 8192^3 bf16 against cuBLAS's `GemmEx` called directly,
//!   `relu(x + y)` on 256M bf16 against the copy bandwidth, and workload D's step inside a bf16
//!   autocast (PyTorch: `torch.autocast("cuda", torch.bfloat16)`).
//!
//! GPU times come from CUDA events (devtype's `Timer`, cudarc events for the baselines); the
//! launch-overhead and upload numbers are host wall-clock times that end in a synchronize.
//! `scripts/gpu_torch_bench.py` times PyTorch on the same workloads and prints the ratios.
//!
//! ```sh
//! cargo bench --bench gpu                         # prints a table
//! cargo bench --bench gpu -- --json out.json      # also writes the numbers as JSON
//! cargo bench --bench gpu -- --texts texts.tsv     # also writes the device-mismatch texts
//! ```
//! Without a GPU it prints `no GPU: skipped` and exits cleanly.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::CUevent_flags;
use devtype::cuda::Timer;
use devtype::nn::{CrossEntropyLoss, Linear, ReLU, Reduction, Sequential};
use devtype::optim::Sgd;
use devtype::prelude::*;
use std::time::Instant;

const ELEMS: usize = 256 << 20;
const MM: usize = 8192;
const CHAIN: usize = 1000;
const TINY: usize = 64;
const H2D_BYTES: usize = 256 << 20;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json_path = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let gpu = match Cuda::<0>::open() {
        Ok(gpu) => gpu,
        Err(e) => {
            // On a GPU machine (`scripts/gpu-check.sh run` sets DEVTYPE_REQUIRE_CUDA=1) a GPU
            // that does not open is a failure, not a skip.
            if std::env::var("DEVTYPE_REQUIRE_CUDA").is_ok_and(|v| v == "1") {
                eprintln!("DEVTYPE_REQUIRE_CUDA=1 but Cuda::<0>::open() failed: {e}");
                std::process::exit(1);
            }
            println!("no GPU: skipped ({e})");
            return;
        }
    };
    if let Some(path) = args
        .iter()
        .position(|a| a == "--texts")
        .and_then(|i| args.get(i + 1))
    {
        write_mismatch_texts(path);
    }
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let reps = if quick { 3 } else { 10 };
    let mut results = Results::new(json_path);

    // relu(x + y) on 256M f32, against cuMemcpyDtoD of the same 1 GiB.
    let x = Tensor::<Cuda<0>>::randn([ELEMS], gpu);
    let y = Tensor::<Cuda<0>>::randn([ELEMS], gpu);
    let relu_add = |x: &Tensor<Cuda<0>>, y: &Tensor<Cuda<0>>| (x + y).relu_owned();
    let ms = gpu_ms(reps, || drop(relu_add(&x, &y)));
    let bytes = (ELEMS * 4) as f64;
    // The bytes the result needs (read x and y, write the output), and those two ops move.
    let effective = 3.0 * bytes / (ms * 1e-3) / 1e9;
    let moved = 5.0 * bytes / (ms * 1e-3) / 1e9;
    results.push(("relu_add_ms", ms));
    results.push(("relu_add_gbs", effective));
    results.push(("relu_add_moved_gbs", moved));
    // The same result from the fused kernel: 3 tensors' worth of traffic instead of 5.
    let fused_ms = gpu_ms(reps, || drop(x.add_relu(&y)));
    results.push(("add_relu_ms", fused_ms));
    results.push(("add_relu_gbs", 3.0 * bytes / (fused_ms * 1e-3) / 1e9));
    drop((x, y));
    let copy_ms = cudarc_copy_ms(reps, ELEMS);
    let copy_gbs = 2.0 * bytes / (copy_ms * 1e-3) / 1e9;
    results.push(("copy_gbs", copy_gbs));

    // matmul 8192^3 f32, against cublasSgemm on the same sizes.
    let a = Tensor::<Cuda<0>>::randn([MM, MM], gpu);
    let b = Tensor::<Cuda<0>>::randn([MM, MM], gpu);
    let mm_ms = gpu_ms(reps.min(5), || drop(a.matmul(&b)));
    let flops = 2.0 * (MM as f64).powi(3);
    results.push(("matmul_ms", mm_ms));
    results.push(("matmul_tflops", flops / (mm_ms * 1e-3) / 1e12));
    drop((a, b));
    let blas_ms = cublas_ms::<f32>(reps.min(5), MM, |v| v);
    results.push(("cublas_tflops", flops / (blas_ms * 1e-3) / 1e12));

    // The same product in bf16 (f32 accumulation), against cublasGemmEx on bf16.
    let a = Tensor::<Cuda<0>>::randn([MM, MM], gpu).to_dtype::<bf16>();
    let b = Tensor::<Cuda<0>>::randn([MM, MM], gpu).to_dtype::<bf16>();
    let mm_ms = gpu_ms(reps.min(5), || drop(a.matmul(&b)));
    results.push(("matmul_bf16_ms", mm_ms));
    results.push(("matmul_bf16_tflops", flops / (mm_ms * 1e-3) / 1e12));
    drop((a, b));
    let blas_ms = cublas_ms::<bf16>(reps.min(5), MM, bf16::from_f32);
    results.push(("cublas_bf16_tflops", flops / (blas_ms * 1e-3) / 1e12));

    // relu(x + y) and the fused add_relu on 256M bf16: half the bytes of the f32 case, against
    // the same copy bandwidth.
    let x = Tensor::<Cuda<0>>::randn([ELEMS], gpu).to_dtype::<bf16>();
    let y = Tensor::<Cuda<0>>::randn([ELEMS], gpu).to_dtype::<bf16>();
    let half_bytes = (ELEMS * 2) as f64;
    let ms = gpu_ms(reps, || drop((&x + &y).relu_owned()));
    results.push(("relu_add_bf16_ms", ms));
    results.push(("relu_add_bf16_gbs", 3.0 * half_bytes / (ms * 1e-3) / 1e9));
    let ms = gpu_ms(reps, || drop(x.add_relu(&y)));
    results.push(("add_relu_bf16_gbs", 3.0 * half_bytes / (ms * 1e-3) / 1e9));
    drop((x, y));

    // 1000 tiny element-wise ops: host time to queue them and finish.
    let t = Tensor::<Cuda<0>>::ones([TINY], gpu);
    let chain = || {
        let mut v = t.clone();
        for i in 0..CHAIN {
            v = if i % 2 == 0 {
                v * 1.0001f32
            } else {
                v + 0.5f32
            };
        }
        v
    };
    drop(chain());
    gpu.synchronize().unwrap();
    let mut samples = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        let v = chain();
        gpu.synchronize().unwrap();
        samples.push(start.elapsed().as_secs_f64() * 1e6 / CHAIN as f64);
        drop(v);
    }
    results.push(("chain_us_per_op", median(&mut samples)));

    // Host-to-device copy of 256 MiB from ordinary (pageable) host memory.
    let host = Tensor::<Cpu>::ones([H2D_BYTES / 4], Cpu);
    drop(host.to(gpu));
    gpu.synchronize().unwrap();
    let mut samples = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        let up = host.to(gpu);
        gpu.synchronize().unwrap();
        samples.push(H2D_BYTES as f64 / start.elapsed().as_secs_f64() / 1e9);
        drop(up);
    }
    results.push(("h2d_gbs", median(&mut samples)));

    // The same 256 MiB from a pinned buffer, queued with `to_async` on the copy stream
    // (PyTorch's `x.pin_memory().to(dev, non_blocking=True)`); the issue asks for >= 2x the
    // pageable number above.
    let pinned = host.pin_memory();
    drop(pinned.to_async(gpu).into_tensor());
    gpu.synchronize().unwrap();
    let mut samples = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        let up = pinned.to_async(gpu).into_tensor();
        gpu.synchronize().unwrap();
        samples.push(H2D_BYTES as f64 / start.elapsed().as_secs_f64() / 1e9);
        drop(up);
    }
    let pinned_gbs = median(&mut samples);
    results.push(("h2d_pinned_gbs", pinned_gbs));
    drop(pinned);

    results.push(("train_step_ms", train_step_ms(gpu, reps.max(20), false)));
    results.push(("train_step_amp_ms", train_step_ms(gpu, reps.max(20), true)));

    // CUDA graphs (issue 32): the small MNIST-shaped step (batch 64, 784-128-10, SGD), eager
    // against one graph replay, each timed over many steps ending in one synchronize, and the
    // host cost of one `replay()` call alone. PyTorch's `CUDAGraph` of the same step:
    // scripts/gpu_torch_graph_bench.py. Goals: replay >= 1.8x eager, <= 2 us host per replay.
    let (eager_us, replay_us, host_us) = graph_step_us(gpu, if quick { 50 } else { 500 });
    results.push(("graph_eager_step_us", eager_us));
    results.push(("graph_replay_step_us", replay_us));
    results.push(("graph_replay_host_us", host_us));
    println!(
        "  graph step (64x784 MLP)  {eager_us:8.1} us eager, {replay_us:.1} us replayed ({:.2}x); {host_us:.2} us host per replay",
        eager_us / replay_us
    );

    // An MNIST-shaped epoch (60 batches of 256 x 784): batches from a DataLoader with pinned
    // buffers and prefetching (uploads overlap compute), against the same steps on batches
    // already on the GPU. The issue asks for the first within 10% of the second, and no host
    // sync per step.
    let (resident_ms, loader_ms, syncs_per_step) = epoch_overlap_ms(gpu);
    results.push(("epoch_resident_ms", resident_ms));
    results.push(("epoch_loader_ms", loader_ms));
    results.push(("epoch_loader_over_resident", loader_ms / resident_ms));
    results.push(("epoch_loader_syncs_per_step", syncs_per_step));

    let get = |k: &str| {
        results
            .values
            .iter()
            .find(|(n, _)| *n == k)
            .map_or(f64::NAN, |r| r.1)
    };
    println!("devtype on the GPU ({} reps, median):", reps);
    println!(
        "  relu(x + y), 256M f32   {:8.3} ms  {:7.1} GB/s effective ({:.1} GB/s moved)  copy {:7.1} GB/s  ({:.0}% of copy)",
        get("relu_add_ms"),
        get("relu_add_gbs"),
        get("relu_add_moved_gbs"),
        get("copy_gbs"),
        100.0 * get("relu_add_gbs") / get("copy_gbs")
    );
    println!(
        "  add_relu(x, y) fused    {:8.3} ms  {:7.1} GB/s effective  ({:.0}% of copy)",
        get("add_relu_ms"),
        get("add_relu_gbs"),
        100.0 * get("add_relu_gbs") / get("copy_gbs")
    );
    println!(
        "  matmul 8192^3 f32       {:8.3} ms  {:7.1} TFLOP/s  cuBLAS {:.1} TFLOP/s  ({:.0}% of cuBLAS)",
        get("matmul_ms"),
        get("matmul_tflops"),
        get("cublas_tflops"),
        100.0 * get("matmul_tflops") / get("cublas_tflops")
    );
    println!(
        "  1000 tiny ops            {:8.2} us/op",
        get("chain_us_per_op")
    );
    println!("  host -> device 256 MiB  {:8.1} GB/s", get("h2d_gbs"));
    println!(
        "  ... from pinned memory  {:8.1} GB/s ({:.1}x pageable)",
        get("h2d_pinned_gbs"),
        get("h2d_pinned_gbs") / get("h2d_gbs")
    );
    println!(
        "  matmul 8192^3 bf16      {:8.3} ms  {:7.1} TFLOP/s  cuBLAS {:.1} TFLOP/s  ({:.0}% of cuBLAS)",
        get("matmul_bf16_ms"),
        get("matmul_bf16_tflops"),
        get("cublas_bf16_tflops"),
        100.0 * get("matmul_bf16_tflops") / get("cublas_bf16_tflops")
    );
    println!(
        "  relu(x + y), 256M bf16  {:8.3} ms  {:7.1} GB/s effective  ({:.0}% of copy); fused {:.1} GB/s ({:.0}%)",
        get("relu_add_bf16_ms"),
        get("relu_add_bf16_gbs"),
        100.0 * get("relu_add_bf16_gbs") / get("copy_gbs"),
        get("add_relu_bf16_gbs"),
        100.0 * get("add_relu_bf16_gbs") / get("copy_gbs")
    );
    println!("  MLP train step (D)      {:8.3} ms", get("train_step_ms"));
    println!(
        "  ... in a bf16 autocast  {:8.3} ms",
        get("train_step_amp_ms")
    );
    println!(
        "  MNIST-shaped epoch      {:8.1} ms from a pinned, prefetching loader, {:.1} ms resident ({:.2}x); {:.2} host syncs per step",
        get("epoch_loader_ms"),
        get("epoch_resident_ms"),
        get("epoch_loader_over_resident"),
        get("epoch_loader_syncs_per_step")
    );
    results.finish();
}

/// `DynTensor`'s device-mismatch texts for ten mistakes between `cuda:0` and the CPU, one
/// `case<TAB>text` line each, for `scripts/gpu_torch_bench.py --devtype-texts` to set beside
/// PyTorch's own texts for the same mistakes on the same machine (same case names there).
fn write_mismatch_texts(path: &str) {
    const CPU: DynDevice = DynDevice::cpu();
    const GPU: DynDevice = DynDevice::cuda(0);
    let text = |r: devtype::Result<DynTensor>| match r {
        Ok(_) => "(no error)".to_string(),
        Err(e) => e.to_string(),
    };
    let cases = (|| -> devtype::Result<Vec<(&'static str, String)>> {
        let g = DynTensor::ones([2, 3], GPU)?;
        let c = DynTensor::ones([2, 3], CPU)?;
        let cond = g.gt(&c.to(GPU)?)?;
        let w = DynTensor::ones([4, 3], GPU)?;
        let b = DynTensor::ones([4], GPU)?;
        let idx = DynTensor::from_vec(vec![0i64, 1], [2], CPU)?;
        let targets = DynTensor::from_vec(vec![0i64, 2], [2], GPU)?;
        let weight = DynTensor::ones([3], CPU)?;
        Ok(vec![
            ("add cuda+cpu", text(g.add(&c))),
            ("add cpu+cuda", text(c.add(&g))),
            ("mul cpu*cuda", text(c.mul(&g))),
            ("lt cuda<cpu", text(g.lt(&c))),
            ("where(cuda, cuda, cpu)", text(cond.where_cond(&g, &c))),
            (
                "where(cpu, cuda, cuda)",
                text(cond.to(CPU)?.where_cond(&g, &g)),
            ),
            ("linear(cpu, cuda w, cuda b)", text(c.linear(&w, Some(&b)))),
            ("mm cuda @ cpu", text(g.matmul(&c.transpose(0, 1)?))),
            ("index_select(cuda, cpu idx)", text(g.index_select(0, &idx))),
            (
                "cross_entropy(cuda, weight cpu)",
                text(g.cross_entropy_with(&targets, Some(&weight), Reduction::Mean, -100)),
            ),
        ])
    })();
    let body = match cases {
        Ok(cases) => cases
            .iter()
            .map(|(case, text)| format!("{case}\t{text}\n"))
            .collect::<String>(),
        Err(e) => format!("setup\tthe tensors could not be made: {e}\n"),
    };
    if let Err(e) = std::fs::write(path, body) {
        eprintln!("could not write the mismatch texts to {path}: {e}");
    }
}

/// The numbers measured so far, rewritten to the JSON file after each one, so a run cut short
/// (a time limit, a crash in a later workload) still leaves the numbers it has.
struct Results {
    values: Vec<(&'static str, f64)>,
    json: Option<String>,
}

impl Results {
    fn new(json: Option<String>) -> Self {
        let r = Results {
            values: Vec::new(),
            json,
        };
        r.write(false);
        r
    }

    fn push(&mut self, value: (&'static str, f64)) {
        self.values.push(value);
        self.write(false);
    }

    fn finish(&self) {
        self.write(true);
    }

    /// Writes `{"name": value, ..., "complete": bool}` through a temporary file and a rename, so
    /// a reader never sees half a file. Infinities and NaN (a zero time, a failed measurement)
    /// become `null`: JSON has no such numbers and Python's `json` rejects the bare words.
    fn write(&self, complete: bool) {
        let Some(path) = &self.json else { return };
        let mut body: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| {
                if v.is_finite() {
                    format!("\"{k}\": {v}")
                } else {
                    format!("\"{k}\": null")
                }
            })
            .collect();
        body.push(format!("\"complete\": {complete}"));
        let tmp = format!("{path}.tmp");
        let written = std::fs::write(&tmp, format!("{{{}}}\n", body.join(", ")))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            eprintln!("could not write the JSON results to {path}: {e}");
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median GPU milliseconds of `f` (after one warm-up run), timed with CUDA events.
/// Milliseconds per training step of workload D on `gpu`: the model built on the host and
/// moved once, the batch moved once, then zero_grad, forward, backward and SGD per step. With
/// `amp`, the forward pass runs in a bf16 autocast (products in bf16, f32 master weights).
fn train_step_ms(gpu: Cuda<0>, reps: usize, amp: bool) -> f64 {
    const B: usize = 256;
    const I: usize = 784;
    const H: usize = 512;
    const O: usize = 10;
    devtype::manual_seed(0);
    let x = Tensor::randn([B, I], Cpu).to(gpu);
    let y =
        Tensor::<Cpu, i64>::from_vec((0..B).map(|k| ((7 * k + 3) % O) as i64).collect(), [B], Cpu)
            .to(gpu);
    let weights = Tensor::from_vec((0..O).map(|c| 0.5 + 0.1 * c as f32).collect(), [O], Cpu);
    let model = Sequential::new((Linear::cpu(I, H), ReLU, Linear::cpu(H, O)));
    let mut model = model.to(gpu);
    let criterion = CrossEntropyLoss::new().with_weight(weights).to(gpu);
    let mut opt = Sgd::new(0.01);
    gpu_ms(reps, || {
        model.zero_grad();
        let logits = if amp {
            devtype::amp::autocast::<bf16, _>(|| model.forward(&x))
        } else {
            model.forward(&x)
        };
        let loss = criterion.forward(&logits, &y);
        loss.backward();
        opt.step(&mut model);
    })
}

/// The small MNIST-shaped training step, eager and captured into a CUDA graph: microseconds
/// per eager step, per replayed step (both over `steps` steps and one final synchronize), and
/// the host time of one `replay()` call.
fn graph_step_us(gpu: Cuda<0>, steps: usize) -> (f64, f64, f64) {
    use devtype::cuda::{Capturing, StaticTensor};
    use devtype::optim::Optimizer;
    const B: usize = 64;
    const I: usize = 784;
    const H: usize = 128;
    const O: usize = 10;
    fn step<D: Device>(
        model: &mut Sequential<(Linear<D>, ReLU, Linear<D>)>,
        opt: &mut Sgd<D>,
        x: &Tensor<D>,
        y: &Tensor<D, i64>,
    ) {
        opt.zero_grad(model);
        CrossEntropyLoss::new()
            .forward(&model.forward(x), y)
            .backward();
        opt.step(model);
    }
    devtype::manual_seed(0);
    let x = Tensor::randn([B, I], Cpu).to(gpu);
    let y =
        Tensor::<Cpu, i64>::from_vec((0..B).map(|k| ((7 * k + 3) % O) as i64).collect(), [B], Cpu)
            .to(gpu);
    let model = Sequential::new((Linear::cpu(I, H), ReLU, Linear::cpu(H, O)));
    let time = |f: &mut dyn FnMut()| {
        f();
        gpu.synchronize().unwrap();
        let start = Instant::now();
        for _ in 0..steps {
            f();
        }
        gpu.synchronize().unwrap();
        start.elapsed().as_secs_f64() * 1e6 / steps as f64
    };
    let mut eager = model.to(gpu);
    let mut opt = Sgd::new(0.01);
    let eager_us = time(&mut || step(&mut eager, &mut opt, &x, &y));

    let mut graphed = model.to(Capturing::new(gpu));
    let mut graphed_opt = Sgd::new(0.01);
    let (sx, sy) = (StaticTensor::new(&x), StaticTensor::new(&y));
    let graph = devtype::cuda::capture(gpu, |dev| {
        step(&mut graphed, &mut graphed_opt, &sx.get(dev), &sy.get(dev));
        Ok(())
    })
    .unwrap();
    let replay_us = time(&mut || graph.replay().unwrap());
    let mut host = Vec::new();
    for _ in 0..10 {
        gpu.synchronize().unwrap();
        let start = Instant::now();
        for _ in 0..20 {
            graph.replay().unwrap();
        }
        host.push(start.elapsed().as_secs_f64() * 1e6 / 20.0);
    }
    gpu.synchronize().unwrap();
    (eager_us, replay_us, median(&mut host))
}

/// One epoch of MNIST-shaped training on the GPU, timed twice: on batches uploaded beforehand,
/// and on batches from a pinned, prefetching `DataLoader`. Returns both times in ms and the
/// host syncs per step of the loader's epoch.
fn epoch_overlap_ms(gpu: Cuda<0>) -> (f64, f64, f64) {
    use devtype::data::{DataLoader, Dataset};
    const N: usize = 60 * 256;
    const I: usize = 784;
    const O: usize = 10;
    devtype::manual_seed(1);
    let data = Dataset {
        inputs: Tensor::rand([N, I], Cpu),
        labels: Tensor::<Cpu, i64>::from_vec((0..N).map(|k| (k % O) as i64).collect(), [N], Cpu),
        classes: O,
    };
    let loader = DataLoader::new(data, gpu)
        .batch_size(256)
        .num_workers(2)
        .prefetch(4)
        .pin_memory(true);
    let mut model = Sequential::new((Linear::cpu(I, 512), ReLU, Linear::cpu(512, O))).to(gpu);
    let criterion = CrossEntropyLoss::new();
    let mut opt = Sgd::new(0.01);
    let mut step = |x: &Tensor<Cuda<0>>, y: &Tensor<Cuda<0>, i64>| {
        model.zero_grad();
        criterion.forward(&model.forward(x), y).backward();
        opt.step(&mut model);
    };
    // The same batches, already resident.
    let resident: Vec<_> = loader.iter().map(|b| b.unwrap()).collect();
    gpu.synchronize().unwrap();
    let mut resident_ms = Vec::new();
    let mut loader_ms = Vec::new();
    let mut syncs = 0.0;
    for _ in 0..3 {
        let start = Instant::now();
        for (x, y) in &resident {
            step(x, y);
        }
        gpu.synchronize().unwrap();
        resident_ms.push(start.elapsed().as_secs_f64() * 1e3);
        let before = devtype::cuda::sync_count();
        let start = Instant::now();
        let mut steps = 0;
        for batch in loader.iter() {
            let (x, y) = batch.unwrap();
            step(&x, &y);
            steps += 1;
        }
        let after = devtype::cuda::sync_count();
        gpu.synchronize().unwrap();
        loader_ms.push(start.elapsed().as_secs_f64() * 1e3);
        syncs = (after - before) as f64 / steps.max(1) as f64;
    }
    (median(&mut resident_ms), median(&mut loader_ms), syncs)
}

fn gpu_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut samples = Vec::new();
    for _ in 0..reps {
        let timer = Timer::start(0).unwrap();
        f();
        samples.push(timer.elapsed_ms().unwrap() as f64);
    }
    median(&mut samples)
}

/// Milliseconds of a device-to-device copy of `n` f32 (cuMemcpyDtoDAsync), timed with events.
fn cudarc_copy_ms(reps: usize, n: usize) -> f64 {
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let src = stream.alloc_zeros::<f32>(n).unwrap();
    let mut dst = stream.alloc_zeros::<f32>(n).unwrap();
    event_median_ms(&ctx, &stream, reps, || {
        stream.memcpy_dtod(&src, &mut dst).unwrap();
    })
}

/// Milliseconds of one `n x n x n` product called directly through cudarc: cublasSgemm for
/// f32, cublasGemmEx with f32 compute for bf16; `from_f32` makes the operands' values.
fn cublas_ms<T>(reps: usize, n: usize, from_f32: fn(f32) -> T) -> f64
where
    CudaBlas: Gemm<T>,
    T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy,
{
    use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    // Random operands, as devtype's side uses (a GPU's clocks depend a little on the data).
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let host: Vec<T> = (0..n * n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            from_f32((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect();
    let a = stream.clone_htod(&host).unwrap();
    let b = stream.clone_htod(&host).unwrap();
    let mut c = stream.alloc_zeros::<T>(n * n).unwrap();
    let cfg = GemmConfig {
        transa: CUBLAS_OP_N,
        transb: CUBLAS_OP_N,
        m: n as i32,
        n: n as i32,
        k: n as i32,
        alpha: from_f32(1.0),
        lda: n as i32,
        ldb: n as i32,
        beta: from_f32(0.0),
        ldc: n as i32,
    };
    event_median_ms(&ctx, &stream, reps, || {
        // SAFETY: a, b and c each hold n * n values of T on this stream's device, matching the config
        // (column-major n x n, leading dimension n); the events order the timing around it.
        unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();
    })
}

/// Median milliseconds of `f`'s work on `stream`, timed with CUDA events around each of
/// `reps` calls after one warm-up call (the baselines' side of `gpu_ms`).
fn event_median_ms(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    reps: usize,
    mut f: impl FnMut(),
) -> f64 {
    let mut samples = Vec::new();
    for i in 0..=reps {
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .unwrap();
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .unwrap();
        start.record(stream).unwrap();
        f();
        end.record(stream).unwrap();
        let ms = start.elapsed_ms(&end).unwrap() as f64;
        if i > 0 {
            samples.push(ms);
        }
    }
    median(&mut samples)
}
