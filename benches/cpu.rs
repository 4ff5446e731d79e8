//! CPU benchmarks, each with a PyTorch side in `scripts/torch_cpu_bench.py` (same shapes, same
//! data, same timing method: warm-up, calibrated iterations, median of samples), printed as the
//! same JSON lines so the two runs can be read side by side.
//!
//! ```sh
//! cargo bench --bench cpu              # everything
//! cargo bench --bench cpu -- A C E     # a subset
//! cargo bench --bench cpu -- H         # f32 vs f16 vs bf16, per element
//! cargo bench --bench cpu -- G         # bf16 GEMMs, n = 256 to 2048 (AMX or vdpbf16ps where the CPU has them)
//! cargo bench --bench cpu -- S         # optimizer steps, plain and under a GradScaler
//! cargo bench --bench cpu -- K         # clip_grad_norm_ over a 4.2M-parameter model
//! cargo bench --bench cpu -- V         # conv2d forward and backward, LeNet and ResNet shapes
//! cargo bench --bench cpu -- T         # training steps: LeNet and examples/transformer.rs (TL, TT: one)
//! ```
//!
//! `BENCH_COUNT=<case>:<n>` runs one tiny case `n` times, untimed, and nothing else: for
//! instruction counts, e.g. `valgrind --tool=callgrind <bench> ` with `n` = 1000 and 2000 (the
//! difference over 1000 is the count per call, without start-up). Cases: `add`, `dyn_add`,
//! `linear`, `dyn_linear`, `matmul`, `clone`; and, for `perf record`, `gemm_f32` and `gemm_bf16`
//! (one 1024x1024 product per count).
//!
//! `BENCH_IN_POOL=1` runs the transformer's step on one of `rayon`'s threads instead of the
//! program's own (what a step costs when no op has to hand work to a sleeping pool).

use devtype::amp::GradScaler;
use devtype::nn::{
    Approximate, Conv2d, Embedding, Flatten, LayerNorm, Linear, MaxPool2d, Module,
    MultiheadAttention, ReLU, GELU,
};
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;
use std::hint::black_box;

const GEMM_SIZES: [usize; 3] = [256, 1024, 2048];
const BF16_GEMM_SIZES: [usize; 4] = [256, 512, 1024, 2048];
const ELEM_N: usize = 16 * 1024 * 1024;
const TINY_REPS: usize = 100_000;

mod common;

use common::{det_sym, det_uniform, median, time_fixed};

#[derive(Clone, Copy)]
struct Cfg {
    min_sample_s: f64,
    samples: usize,
}

fn cfg() -> Cfg {
    if std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1") {
        Cfg {
            min_sample_s: 0.02,
            samples: 3,
        }
    } else {
        Cfg {
            min_sample_s: 0.15,
            samples: 9,
        }
    }
}

/// Seconds per call: warm-up, calibrate to `min_sample_s` per sample, `samples` samples.
fn time_per_call(cfg: Cfg, f: impl FnMut()) -> Vec<f64> {
    common::time_per_call(cfg.min_sample_s, cfg.samples, f)
}

/// One JSON line as the peers print it; `scale` turns seconds into the unit.
fn report(
    peer: &str,
    workload: &str,
    case: &str,
    unit: &str,
    secs: &[f64],
    scale: impl Fn(f64) -> f64,
) {
    let vals: Vec<f64> = secs.iter().map(|&s| scale(s)).collect();
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "{{\"peer\":\"{peer}\",\"workload\":\"{workload}\",\"case\":\"{case}\",\"value\":{:.6},\"unit\":\"{unit}\",\"min\":{min:.6},\"max\":{max:.6},\"samples\":{}}}",
        median(&vals),
        vals.len()
    );
}

fn gflops(flops: f64) -> impl Fn(f64) -> f64 {
    move |s| flops / s / 1e9
}
fn gbps(bytes: f64) -> impl Fn(f64) -> f64 {
    move |s| bytes / s / 1e9
}
fn ns(s: f64) -> f64 {
    s * 1e9
}
fn ms(s: f64) -> f64 {
    s * 1e3
}

fn sgemm(cfg: Cfg) {
    let id = if rayon::current_num_threads() == 1 {
        "A1"
    } else {
        "A"
    };
    for n in GEMM_SIZES {
        let a = Tensor::<Cpu>::randn([n, n], Cpu);
        let b = Tensor::<Cpu>::randn([n, n], Cpu);
        let flops = 2.0 * (n as f64).powi(3);
        let t = time_per_call(cfg, || {
            black_box(a.matmul(&b));
        });
        report(
            "devtype",
            id,
            &format!("sgemm n={n}"),
            "GFLOP/s",
            &t,
            gflops(flops),
        );
        let (da, db) = (a.to_dyn(), b.to_dyn());
        let t = time_per_call(cfg, || {
            black_box(da.matmul(&db).unwrap());
        });
        report(
            "devtype-dyn",
            id,
            &format!("sgemm n={n}"),
            "GFLOP/s",
            &t,
            gflops(flops),
        );
    }
}

/// Workload G: square `bf16` products, `a.matmul(&b)` with both operands row-major. On a CPU
/// with AMX or AVX512-BF16 they run on devtype's own kernels (`ops::matmul::cpu_bf16`), where
/// PyTorch calls oneDNN's; elsewhere both widen to `f32`.
fn bf16_gemm(cfg: Cfg) {
    for n in BF16_GEMM_SIZES {
        let a: Tensor<Cpu, bf16> = Tensor::<Cpu>::randn([n, n], Cpu).to_dtype();
        let b: Tensor<Cpu, bf16> = Tensor::<Cpu>::randn([n, n], Cpu).to_dtype();
        let case = format!("bf16 gemm n={n}");
        report_gflops(cfg, "G", &case, 2.0 * (n as f64).powi(3), || {
            black_box(a.matmul(&b));
        });
    }
}

/// Times `f` and reports it as devtype's `case` of `workload`, in GFLOP/s of `flops` per call.
fn report_gflops(cfg: Cfg, workload: &str, case: &str, flops: f64, f: impl FnMut()) {
    let t = time_per_call(cfg, f);
    report("devtype", workload, case, "GFLOP/s", &t, gflops(flops));
}

fn elementwise(cfg: Cfg) {
    let x = Tensor::<Cpu>::randn([ELEM_N], Cpu);
    let y = Tensor::<Cpu>::randn([ELEM_N], Cpu);
    let bytes = 4.0 * ELEM_N as f64;
    let t = time_per_call(cfg, || {
        black_box(&x + &y);
    });
    report(
        "devtype",
        "B",
        "add x+y (alloc out)",
        "GB/s",
        &t,
        gbps(3.0 * bytes),
    );
    let z = &x + &y;
    let t = time_per_call(cfg, || {
        black_box(z.relu());
    });
    report(
        "devtype",
        "B",
        "relu(z) (alloc out)",
        "GB/s",
        &t,
        gbps(2.0 * bytes),
    );
    let t = time_per_call(cfg, || {
        black_box((&x + &y).relu());
    });
    report(
        "devtype",
        "B",
        "relu(x+y) 2 ops",
        "GB/s",
        &t,
        gbps(5.0 * bytes),
    );
    report("devtype", "B", "relu(x+y) 2 ops time", "ms", &t, ms);
    let t = time_per_call(cfg, || {
        black_box((&x + &y).relu_owned());
    });
    report(
        "devtype",
        "B",
        "relu(x+y) 2 ops, relu in place (relu_owned)",
        "GB/s",
        &t,
        gbps(5.0 * bytes),
    );
    report(
        "devtype",
        "B",
        "relu(x+y) 2 ops, relu in place (relu_owned) time",
        "ms",
        &t,
        ms,
    );
    let t = time_per_call(cfg, || {
        black_box(x.add_relu(&y));
    });
    report(
        "devtype",
        "B",
        "relu(x+y) fused (add_relu)",
        "GB/s",
        &t,
        gbps(3.0 * bytes),
    );
    report(
        "devtype",
        "B",
        "relu(x+y) fused (add_relu) time",
        "ms",
        &t,
        ms,
    );
    let (dx, dy) = (x.to_dyn(), y.to_dyn());
    let t = time_per_call(cfg, || {
        black_box(dx.add(&dy).unwrap().relu().unwrap());
    });
    report(
        "devtype-dyn",
        "B",
        "relu(x+y) 2 ops",
        "GB/s",
        &t,
        gbps(5.0 * bytes),
    );
    report("devtype-dyn", "B", "relu(x+y) 2 ops time", "ms", &t, ms);
    // Correctness spot check against a plain loop.
    let got = (&x + &y).relu().to_vec();
    let (xv, yv) = (x.to_vec(), y.to_vec());
    let bad = (0..ELEM_N)
        .step_by(4099)
        .filter(|&i| got[i] != (xv[i] + yv[i]).max(0.0))
        .count();
    println!(
        "{{\"peer\":\"devtype\",\"info\":\"B check\",\"text\":\"{}\"}}",
        if bad == 0 { "ok" } else { "MISMATCH" }
    );
}

fn tiny() {
    let x = Tensor::from_vec(det_sym(40, 11, 1.0), [4, 10], Cpu);
    let w = Tensor::from_vec(det_sym(20, 12, 0.3), [2, 10], Cpu);
    let b = Tensor::from_vec(det_sym(2, 13, 0.3), [2], Cpu);
    let lin = Linear::from_parameters(w.clone(), Some(b.clone()));
    let t = time_fixed(7, 2, TINY_REPS, || {
        black_box(lin.forward(&x));
    });
    report(
        "devtype",
        "C",
        "Linear(10,2) fwd, plain weights",
        "ns",
        &t,
        ns,
    );
    let (dx, dw, db) = (x.to_dyn(), w.to_dyn(), b.to_dyn());
    let t = time_fixed(7, 2, TINY_REPS, || {
        black_box(dx.linear(&dw, Some(&db)).unwrap());
    });
    report(
        "devtype-dyn",
        "C",
        "Linear(10,2) fwd, plain weights",
        "ns",
        &t,
        ns,
    );
    let wt = w.t();
    let t = time_fixed(7, 2, TINY_REPS, || {
        black_box(x.matmul(&wt));
    });
    report(
        "devtype",
        "C",
        "  of which matmul (4x10)@(10x2)",
        "ns",
        &t,
        ns,
    );
}

fn dispatch() {
    let a = Tensor::from_vec(vec![1.5f32], [1], Cpu);
    let b = Tensor::from_vec(vec![2.5f32], [1], Cpu);
    let t = time_fixed(7, 1000, TINY_REPS, || {
        black_box(&a + &b);
    });
    report("devtype", "E", "a.add(&b), 1-elem f32", "ns", &t, ns);
    let (da, db) = (a.to_dyn(), b.to_dyn());
    let t = time_fixed(7, 1000, TINY_REPS, || {
        black_box(da.add(&db).unwrap());
    });
    report("devtype-dyn", "E", "a.add(&b), 1-elem f32", "ns", &t, ns);
    // A small result that is not inline: 64 elements in a pooled buffer, its layout computed.
    let x = Tensor::from_vec(det_sym(64, 21, 1.0), [8, 8], Cpu);
    let y = Tensor::from_vec(det_sym(64, 22, 1.0), [8, 8], Cpu);
    let t = time_fixed(7, 1000, TINY_REPS, || {
        black_box(&x + &y);
    });
    report("devtype", "E", "x.add(&y), 8x8 f32", "ns", &t, ns);
    let t = time_fixed(7, 1000, TINY_REPS, || {
        black_box(x.relu());
    });
    report("devtype", "E", "x.relu(), 8x8 f32", "ns", &t, ns);
    let t = time_fixed(7, 1000, TINY_REPS * 10, || {
        black_box(black_box(&da).device() == black_box(&db).device());
    });
    report("devtype-dyn", "E", "  ref: device comparison", "ns", &t, ns);
    let t = time_fixed(7, 1000, TINY_REPS, || {
        black_box(a.clone());
    });
    report(
        "devtype",
        "E",
        "  ref: Tensor::clone (Arc bump)",
        "ns",
        &t,
        ns,
    );
}

/// Workload H: the same element-wise ops, casts and products on `f32`, `f16` and `bf16`, in
/// elements (or flops) per second, so the dtypes compare per element: the 16-bit types compute
/// in `f32` and move half the bytes, so they should be at least as fast.
fn half_speed(cfg: Cfg) {
    let n = ELEM_N as f64;
    let gelem = move |s: f64| n / s / 1e9;
    let x32 = Tensor::<Cpu>::randn([ELEM_N], Cpu);
    let y32 = Tensor::<Cpu>::randn([ELEM_N], Cpu);
    macro_rules! ops {
        ($t:ty, $name:expr, $s:expr) => {{
            let (x, y): (Tensor<Cpu, $t>, Tensor<Cpu, $t>) = (x32.to_dtype(), y32.to_dtype());
            let case = |what: &str| format!("{} {what}", $name);
            let t = time_per_call(cfg, || {
                black_box(&x + &y);
            });
            report("devtype", "H", &case("x+y"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.add_relu(&y));
            });
            report("devtype", "H", &case("add_relu"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.relu());
            });
            report("devtype", "H", &case("relu"), "Gelem/s", &t, gelem);
            let s: $t = $s;
            let t = time_per_call(cfg, || {
                black_box(x.mul_scalar(s));
            });
            report("devtype", "H", &case("x*2.5"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.exp());
            });
            report("devtype", "H", &case("exp"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.log());
            });
            report("devtype", "H", &case("log"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.tanh());
            });
            report("devtype", "H", &case("tanh"), "Gelem/s", &t, gelem);
            let t = time_per_call(cfg, || {
                black_box(x.sigmoid());
            });
            report("devtype", "H", &case("sigmoid"), "Gelem/s", &t, gelem);
        }};
    }
    // The reference for `exp`: the C library's `expf` per element, in the same parallel
    // chunks (what the `f32` kernel ran before its vectorizable `exp`).
    {
        use rayon::prelude::*;
        let src = x32.to_vec();
        let t = time_per_call(cfg, || {
            let mut out = vec![0f32; src.len()];
            out.par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(o, s)| o.iter_mut().zip(s).for_each(|(o, s)| *o = s.exp()));
            black_box(out);
        });
        report(
            "devtype",
            "H",
            "  ref: f32 C-library expf",
            "Gelem/s",
            &t,
            gelem,
        );
    }
    ops!(f32, "f32", 2.5);
    ops!(f16, "f16", f16::from_f32(2.5));
    ops!(bf16, "bf16", bf16::from_f32(2.5));
    let t = time_per_call(cfg, || {
        black_box(x32.to_dtype::<f16>());
    });
    report("devtype", "H", "cast f32->f16", "Gelem/s", &t, gelem);
    let t = time_per_call(cfg, || {
        black_box(x32.to_dtype::<bf16>());
    });
    report("devtype", "H", "cast f32->bf16", "Gelem/s", &t, gelem);
    let h: Tensor<Cpu, f16> = x32.to_dtype();
    let t = time_per_call(cfg, || {
        black_box(h.to_dtype::<f32>());
    });
    report("devtype", "H", "cast f16->f32", "Gelem/s", &t, gelem);
    let b: Tensor<Cpu, bf16> = x32.to_dtype();
    let t = time_per_call(cfg, || {
        black_box(b.to_dtype::<f32>());
    });
    report("devtype", "H", "cast bf16->f32", "Gelem/s", &t, gelem);
    for n in [1024usize, 2048] {
        let a = Tensor::<Cpu>::randn([n, n], Cpu);
        let c = Tensor::<Cpu>::randn([n, n], Cpu);
        let flops = 2.0 * (n as f64).powi(3);
        report_gflops(cfg, "H", &format!("gemm f32 n={n}"), flops, || {
            black_box(a.matmul(&c));
        });
        let (ah, ch): (Tensor<Cpu, f16>, Tensor<Cpu, f16>) = (a.to_dtype(), c.to_dtype());
        report_gflops(cfg, "H", &format!("gemm f16 n={n}"), flops, || {
            black_box(ah.matmul(&ch));
        });
        let (ab, cb): (Tensor<Cpu, bf16>, Tensor<Cpu, bf16>) = (a.to_dtype(), c.to_dtype());
        report_gflops(cfg, "H", &format!("gemm bf16 n={n}"), flops, || {
            black_box(ab.matmul(&cb));
        });
    }
}

/// Workload S: one optimizer step of a 2048x2048 `Linear` (4.2M f32 parameters, 16 MiB per
/// buffer, past the caches), plain and under a `GradScaler` (`unscale_`, then the step it may
/// skip, then `update`), for SGD with momentum and for Adam. Memory-bound: the GB/s column
/// counts the bytes a fused pass must move (plain SGD reads p, g, b and writes p, b; Adam reads
/// p, g, m, v and writes p, m, v; the scaler adds a read and a write of g), so the scaled
/// figure is comparable with the plain one. The scale is 1 so that repeated unscaling keeps
/// the gradients as they are (no subnormals).
fn optimizer_steps(cfg: Cfg) {
    const N: usize = 2048;
    let mut model = Linear::new(N, N, Cpu);
    let x = Tensor::<Cpu>::randn([64, N], Cpu);
    model.forward(&x).sum_all().backward();
    let params = (N * N + N) as f64;
    let bytes = |buffers: f64| gbps(params * 4.0 * buffers);
    let mut sgd = Sgd::new(1e-6).momentum(0.9);
    let mut adam = Adam::new(1e-6);
    let mut scaler = GradScaler::try_with(Cpu, 1.0, 2.0, 0.5, 2000).unwrap();
    let t = time_per_call(cfg, || sgd.step(&mut model));
    report("devtype", "S", "sgd momentum step", "GB/s", &t, bytes(5.0));
    report("devtype", "S", "sgd momentum step time", "ms", &t, ms);
    let t = time_per_call(cfg, || {
        scaler.step(&mut sgd, &mut model);
        scaler.update();
    });
    report(
        "devtype",
        "S",
        "sgd momentum scaled step",
        "GB/s",
        &t,
        bytes(7.0),
    );
    report(
        "devtype",
        "S",
        "sgd momentum scaled step time",
        "ms",
        &t,
        ms,
    );
    let t = time_per_call(cfg, || adam.step(&mut model));
    report("devtype", "S", "adam step", "GB/s", &t, bytes(7.0));
    report("devtype", "S", "adam step time", "ms", &t, ms);
    let t = time_per_call(cfg, || {
        scaler.step(&mut adam, &mut model);
        scaler.update();
    });
    report("devtype", "S", "adam scaled step", "GB/s", &t, bytes(9.0));
    report("devtype", "S", "adam scaled step time", "ms", &t, ms);
    // The copy bandwidth this machine gives to one pass (read 16 MiB, write 16 MiB).
    let w = model.weight().clone();
    let t = time_per_call(cfg, || {
        black_box(w.mul_scalar(1.0));
    });
    report(
        "devtype",
        "S",
        "  ref: x*1.0 (read+write)",
        "GB/s",
        &t,
        bytes(2.0),
    );
}

/// Workload K: `clip_grad_norm_` over a 2048x2048 `Linear` (4.2M f32 parameters), side by
/// side with `scripts/torch_cpu_bench.py K` (PyTorch's foreach clip). Memory-bound: the GB/s
/// column counts the bytes a fused clip must move (the norm reads every gradient once, the
/// scaling reads and writes it: 3 x 16 MiB), and the reference line is this machine's one-pass
/// read-and-write bandwidth. `max_norm` is large, so the coefficient is 1 and repeated calls
/// keep the gradients (the scaling pass runs all the same, as PyTorch's).
fn clip_workload(cfg: Cfg) {
    const N: usize = 2048;
    let model = Linear::new(N, N, Cpu);
    let x = Tensor::<Cpu>::randn([64, N], Cpu);
    model.forward(&x).sum_all().backward();
    let params = (N * N + N) as f64;
    let bytes = |buffers: f64| gbps(params * 4.0 * buffers);
    let t = time_per_call(cfg, || {
        black_box(devtype::nn::utils::clip_grad_norm_(&model, 1e9, 2.0));
    });
    report("devtype", "K", "clip_grad_norm_", "GB/s", &t, bytes(3.0));
    report("devtype", "K", "clip_grad_norm_ time", "ms", &t, ms);
    let w = model.weight().clone();
    let t = time_per_call(cfg, || {
        black_box(w.mul_scalar(1.0));
    });
    report(
        "devtype",
        "K",
        "  ref: x*1.0 (read+write)",
        "GB/s",
        &t,
        bytes(2.0),
    );
}

/// Workload L: the tensor API of issue 29 on a 16M-element f32 tensor (`[4096, 4096]`), ms
/// per call, side by side with `scripts/torch_cpu_bench.py L`.
fn lines_workload(cfg: Cfg) {
    let x = Tensor::<Cpu>::randn([4096, 4096], Cpu);
    let mask = x.gt_scalar(0.5);
    let run = |case: &str, mut f: Box<dyn FnMut() + '_>| {
        let t = time_per_call(cfg, &mut f);
        report("devtype", "L", case, "ms", &t, ms);
    };
    run("sum()", Box::new(|| drop(black_box(x.sum()))));
    run("mean()", Box::new(|| drop(black_box(x.mean()))));
    run("cumsum(1)", Box::new(|| drop(black_box(x.cumsum(1)))));
    run("cumsum(0)", Box::new(|| drop(black_box(x.cumsum(0)))));
    run("max(1)", Box::new(|| drop(black_box(x.max(1)))));
    run("sort(1)", Box::new(|| drop(black_box(x.sort(1, false)))));
    run(
        "topk(16, 1)",
        Box::new(|| drop(black_box(x.topk(16, 1, true, true)))),
    );
    run(
        "masked_fill(x > 0.5, 0)",
        Box::new(|| drop(black_box(x.masked_fill(&mask, 0.0)))),
    );
    run(
        "x[:, 1:3] contiguous",
        Box::new(|| drop(black_box(x.i((.., 1..3)).contiguous()))),
    );
}

/// The convolutions of workload V: `(name, batch, in channels, side, out channels, kernel,
/// padding)`, square inputs and kernels, stride 1. The two of LeNet (batch 64) and the 3x3
/// convolution of a ResNet basic block at its first stage (batch 32, 64 channels, 56x56).
const CONVS: [(&str, usize, usize, usize, usize, usize, usize); 3] = [
    ("lenet conv1 64x1x28x28 -> 6 k5 p2", 64, 1, 28, 6, 5, 2),
    ("lenet conv2 64x6x14x14 -> 16 k5", 64, 6, 14, 16, 5, 0),
    ("resnet 32x64x56x56 -> 64 k3 p1", 32, 64, 56, 64, 3, 1),
];

/// Workload V: `conv2d` (with a bias) at LeNet's and a ResNet block's shapes, side by side with
/// `scripts/torch_cpu_bench.py V`. The forward runs without recording (as `torch.no_grad()`);
/// forward+backward records it with the input, weight and bias requiring gradients and runs
/// `backward_with` a fixed output gradient (each call starts with no gradients, as PyTorch's
/// `grad = None`). GFLOP/s count `2·N·Cout·Hout·Wout·Cin·k·k` for the forward and three times
/// that for forward+backward (the input's and the weight's gradients each cost a forward);
/// divide by `cargo bench --bench peak`'s FMA ceiling for the fraction of the machine.
fn conv_workload(cfg: Cfg) {
    for (name, n, cin, side, cout, k, p) in CONVS {
        let out = side + 2 * p - k + 1;
        let flops = 2.0 * (n * cout * out * out * cin * k * k) as f64;
        let x = Tensor::from_vec(
            det_sym(n * cin * side * side, 1, 1.0),
            [n, cin, side, side],
            Cpu,
        );
        let scale = 1.0 / ((cin * k * k) as f32).sqrt();
        let w = Tensor::from_vec(
            det_sym(cout * cin * k * k, 2, scale),
            [cout, cin, k, k],
            Cpu,
        );
        let b = Tensor::from_vec(det_sym(cout, 3, scale), [cout], Cpu);
        let g = Tensor::from_vec(
            det_sym(n * cout * out * out, 4, 1.0),
            [n, cout, out, out],
            Cpu,
        );
        let conv = |x: &Tensor<Cpu>, w: &Tensor<Cpu>, b: &Tensor<Cpu>| {
            x.conv2d(w, Some(b), (1, 1), (p, p), (1, 1), 1)
        };
        let y = no_grad(|| conv(&x, &w, &b));
        assert_eq!(y.shape(), &[n, cout, out, out]);
        assert!(y.to_vec().iter().all(|v| v.is_finite()), "{name}: forward");
        let t = time_per_call(cfg, || {
            black_box(no_grad(|| conv(&x, &w, &b)));
        });
        report(
            "devtype",
            "V",
            &format!("{name} fwd"),
            "GFLOP/s",
            &t,
            gflops(flops),
        );
        report("devtype", "V", &format!("{name} fwd time"), "ms", &t, ms);
        let (x, w, b) = (
            Tensor::parameter(x),
            Tensor::parameter(w),
            Tensor::parameter(b),
        );
        let step = || {
            x.zero_grad();
            w.zero_grad();
            b.zero_grad();
            conv(&x, &w, &b).backward_with(&g);
        };
        step();
        for t in [&x, &w, &b] {
            let grad = t.grad().expect("a gradient");
            assert!(
                grad.to_vec().iter().all(|v| v.is_finite()),
                "{name}: backward"
            );
        }
        let t = time_per_call(cfg, step);
        report(
            "devtype",
            "V",
            &format!("{name} fwd+bwd"),
            "GFLOP/s",
            &t,
            gflops(3.0 * flops),
        );
        report(
            "devtype",
            "V",
            &format!("{name} fwd+bwd time"),
            "ms",
            &t,
            ms,
        );
    }
}

/// Gives every parameter of `model`, in `named_parameters` order, deterministic values that
/// `scripts/torch_cpu_bench.py` gives PyTorch's model (the same names in the same order):
/// parameter `i` of shape `[a, b..]` is `det_sym(numel, 100 + i, 1/√(b·..))`; a vector is
/// `det_sym(numel, 100 + i, 0.1)`, plus 1 for a norm's weight (a vector named `weight`).
fn det_parameters<M: Module<Cpu>>(model: &mut M) {
    let mut i = 0;
    model.visit_parameters_mut("", &mut |name, p| {
        let shape = p.shape().to_vec();
        let numel: usize = shape.iter().product();
        let values = if shape.len() >= 2 {
            let fan_in: usize = shape[1..].iter().product();
            det_sym(numel, 100 + i, 1.0 / (fan_in as f32).sqrt())
        } else if name.ends_with("weight") {
            det_sym(numel, 100 + i, 0.1)
                .into_iter()
                .map(|v| 1.0 + v)
                .collect()
        } else {
            det_sym(numel, 100 + i, 0.1)
        };
        *p = Tensor::parameter(Tensor::from_vec(values, shape, Cpu));
        i += 1;
    });
}

/// LeNet-5 as `examples/cnn.rs` has it.
struct LeNet<D: Device> {
    conv1: Conv2d<D>,
    conv2: Conv2d<D>,
    act: ReLU,
    pool: MaxPool2d,
    flatten: Flatten,
    fc1: Linear<D>,
    fc2: Linear<D>,
    fc3: Linear<D>,
}
devtype::module!(LeNet<D> { conv1, conv2, act, pool, flatten, fc1, fc2, fc3 });

impl LeNet<Cpu> {
    fn new() -> Self {
        LeNet {
            conv1: Conv2d::new(1, 6, (5, 5), Cpu).with_padding((2, 2)),
            conv2: Conv2d::new(6, 16, (5, 5), Cpu),
            act: ReLU,
            pool: MaxPool2d::new((2, 2)),
            flatten: Flatten::default(),
            fc1: Linear::new(400, 120, Cpu),
            fc2: Linear::new(120, 84, Cpu),
            fc3: Linear::new(84, 10, Cpu),
        }
    }

    fn forward(&self, x: &Tensor<Cpu>) -> Tensor<Cpu> {
        let x = self.pool.forward(self.act.forward(self.conv1.forward(x)));
        let x = self.pool.forward(self.act.forward(self.conv2.forward(&x)));
        let x = self.act.forward(self.fc1.forward(self.flatten.forward(&x)));
        let x = self.act.forward(self.fc2.forward(&x));
        self.fc3.forward(&x)
    }
}

/// `examples/transformer.rs`'s decoder block: pre-norm causal self-attention and a GELU MLP.
struct Block<D: Device> {
    ln1: LayerNorm<D>,
    attn: MultiheadAttention<D>,
    ln2: LayerNorm<D>,
    fc1: Linear<D>,
    act: GELU,
    fc2: Linear<D>,
}
devtype::module!(Block<D> { ln1, attn, ln2, fc1, act, fc2 });

/// `examples/transformer.rs`'s decoder: token and position embeddings, blocks, norm, head.
struct Decoder<D: Device> {
    tok: Embedding<D>,
    pos: Embedding<D>,
    blocks: Vec<Block<D>>,
    ln_f: LayerNorm<D>,
    head: Linear<D>,
}
devtype::module!(Decoder<D> { tok, pos, blocks, ln_f, head });

/// The transformer example's sizes: digits 0..9 and a separator, 8 digits reversed (16
/// tokens), d_model 64, 4 heads, 2 layers, batch 64.
const T_VOCAB: usize = 11;
const T_LEN: usize = 8;
const T_D: usize = 64;
const T_HEADS: usize = 4;
const T_LAYERS: usize = 2;
const T_BATCH: usize = 64;

impl Decoder<Cpu> {
    fn new() -> Self {
        let d = T_D;
        let block = || Block {
            ln1: LayerNorm::new(&[d], Cpu),
            attn: MultiheadAttention::new(d, T_HEADS, Cpu),
            ln2: LayerNorm::new(&[d], Cpu),
            fc1: Linear::new(d, 4 * d, Cpu),
            act: GELU::new(Approximate::Tanh),
            fc2: Linear::new(4 * d, d, Cpu),
        };
        Decoder {
            tok: Embedding::new(T_VOCAB, d, Cpu),
            pos: Embedding::new(2 * T_LEN, d, Cpu),
            blocks: (0..T_LAYERS).map(|_| block()).collect(),
            ln_f: LayerNorm::new(&[d], Cpu),
            head: Linear::new(d, T_VOCAB, Cpu),
        }
    }

    /// The logits of the reversed half, `[batch · LEN, VOCAB]`.
    fn answer_logits(&self, ids: &Tensor<Cpu, i64>) -> Tensor<Cpu> {
        let positions = Tensor::<Cpu, i64>::arange(ids.shape()[1], Cpu);
        let mut x = self.tok.forward(ids) + &self.pos.forward(&positions);
        for b in &self.blocks {
            let h = b.ln1.forward(&x);
            x = &x + &b.attn.forward(&h, &h, &h, None, true);
            let h = b.act.forward(b.fc1.forward(b.ln2.forward(&x)));
            x = &x + &b.fc2.forward(&h);
        }
        let logits = self.head.forward(self.ln_f.forward(&x));
        logits
            .narrow(1, T_LEN, T_LEN)
            .reshape(&[-1, T_VOCAB as isize])
    }
}

/// Workload T: whole training steps on the CPU, ms per step, side by side with
/// `scripts/torch_cpu_bench.py T` (the same models, deterministic parameters and data, so
/// the losses printed to stderr can be compared too):
///
/// - LeNet-5 (`examples/cnn.rs`'s), batch 64 of 1x28x28: forward, cross-entropy, backward,
///   plain SGD (lr 0.05);
/// - `examples/transformer.rs`'s decoder (2 layers, d_model 64, 4 heads, 16 tokens), its batch
///   of 64 sequences: forward, cross-entropy on the reversed half, backward, Adam (lr 2e-3).
///
/// `-- TL` or `-- TT` runs one of the two (to profile it alone).
fn lenet_step(cfg: Cfg) {
    let x = Tensor::from_vec(det_uniform(64 * 28 * 28, 1), [64, 1, 28, 28], Cpu);
    let y = Tensor::<Cpu, i64>::from_vec(
        (0..64).map(|k| ((7 * k + 3) % 10) as i64).collect(),
        [64],
        Cpu,
    );
    let mut lenet = LeNet::new();
    det_parameters(&mut lenet);
    let mut sgd = Sgd::new(0.05);
    let loss0 = no_grad(|| lenet.forward(&x).cross_entropy(&y).item());
    let step = |lenet: &mut LeNet<Cpu>, sgd: &mut Sgd<Cpu>| {
        lenet.zero_grad();
        let loss = lenet.forward(&x).cross_entropy(&y);
        loss.backward();
        sgd.step(lenet);
        loss
    };
    for _ in 0..20 {
        step(&mut lenet, &mut sgd);
    }
    let loss20 = no_grad(|| lenet.forward(&x).cross_entropy(&y).item());
    eprintln!("T lenet: loss before training {loss0:.6}, after 20 steps {loss20:.6}");
    assert!(
        loss0.is_finite() && loss20 < loss0,
        "LeNet's loss did not fall"
    );
    let t = time_per_call(cfg, || {
        black_box(step(&mut lenet, &mut sgd));
    });
    report("devtype", "T", "lenet train step (b=64, SGD)", "ms", &t, ms);
}

/// Workload T's second half (`-- TT` alone): the transformer's training step.
fn transformer_step(cfg: Cfg) {
    let digits: Vec<i64> = det_uniform(T_BATCH * T_LEN, 2)
        .into_iter()
        .map(|u| ((u * 10.0) as i64).min(9))
        .collect();
    let (mut inputs, mut targets) = (Vec::new(), Vec::new());
    for a in digits.chunks(T_LEN) {
        let rev: Vec<i64> = a.iter().rev().copied().collect();
        inputs.extend_from_slice(a);
        inputs.push(T_VOCAB as i64 - 1);
        inputs.extend_from_slice(&rev[..T_LEN - 1]);
        targets.extend_from_slice(&rev);
    }
    let ids = Tensor::<Cpu, i64>::from_vec(inputs, [T_BATCH, 2 * T_LEN], Cpu);
    let targets = Tensor::<Cpu, i64>::from_vec(targets, [T_BATCH * T_LEN], Cpu);
    let mut model = Decoder::new();
    det_parameters(&mut model);
    let mut adam = Adam::new(2e-3);
    let loss0 = no_grad(|| model.answer_logits(&ids).cross_entropy(&targets).item());
    let step = |model: &mut Decoder<Cpu>, adam: &mut Adam<Cpu>| {
        model.zero_grad();
        let loss = model.answer_logits(&ids).cross_entropy(&targets);
        loss.backward();
        adam.step(model);
        loss
    };
    for _ in 0..20 {
        step(&mut model, &mut adam);
    }
    let loss20 = no_grad(|| model.answer_logits(&ids).cross_entropy(&targets).item());
    eprintln!("T transformer: loss before training {loss0:.6}, after 20 steps {loss20:.6}");
    assert!(
        loss0.is_finite() && loss20 < loss0,
        "the transformer's loss did not fall"
    );
    let t = time_per_call(cfg, || {
        black_box(step(&mut model, &mut adam));
    });
    report(
        "devtype",
        "T",
        "transformer train step (2x64, 4 heads, 16 tokens, b=64, Adam)",
        "ms",
        &t,
        ms,
    );
}

/// `BENCH_COUNT`: one case of workloads C and E, `n` times, on the same inputs.
fn count_case(spec: &str) {
    let (case, n) = spec.split_once(':').expect("BENCH_COUNT=<case>:<n>");
    let n: usize = n.parse().expect("BENCH_COUNT=<case>:<n>");
    let x = Tensor::from_vec(det_sym(40, 11, 1.0), [4, 10], Cpu);
    let w = Tensor::from_vec(det_sym(20, 12, 0.3), [2, 10], Cpu);
    let b = Tensor::from_vec(det_sym(2, 13, 0.3), [2], Cpu);
    let lin = Linear::from_parameters(w.clone(), Some(b.clone()));
    let (dx, dw, db) = (x.to_dyn(), w.to_dyn(), b.to_dyn());
    let wt = w.t();
    let a1 = Tensor::from_vec(vec![1.5f32], [1], Cpu);
    let b1 = Tensor::from_vec(vec![2.5f32], [1], Cpu);
    let (da1, db1) = (a1.to_dyn(), b1.to_dyn());
    let big = |seed| Tensor::from_vec(det_sym(1024 * 1024, seed, 1.0), [1024, 1024], Cpu);
    let (g1, g2) = if case.starts_with("gemm") {
        (big(14), big(15))
    } else {
        (Tensor::zeros([0, 0], Cpu), Tensor::zeros([0, 0], Cpu))
    };
    let (h1, h2): (Tensor<Cpu, bf16>, Tensor<Cpu, bf16>) = (g1.to_dtype(), g2.to_dtype());
    for _ in 0..n {
        match case {
            "add" => drop(black_box(&a1 + &b1)),
            "dyn_add" => drop(black_box(da1.add(&db1).unwrap())),
            "linear" => drop(black_box(lin.forward(&x))),
            "dyn_linear" => drop(black_box(dx.linear(&dw, Some(&db)).unwrap())),
            "matmul" => drop(black_box(x.matmul(&wt))),
            "clone" => drop(black_box(a1.clone())),
            "gemm_f32" => drop(black_box(g1.matmul(&g2))),
            "gemm_bf16" => drop(black_box(h1.matmul(&h2))),
            _ => panic!("unknown BENCH_COUNT case {case}"),
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var("BENCH_COUNT") {
        count_case(&spec);
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |w: &str| args.is_empty() || args.iter().any(|a| a == w);
    let cfg = cfg();
    common::print_capability();
    if want("A") {
        sgemm(cfg);
    }
    if want("B") {
        elementwise(cfg);
    }
    if want("C") {
        tiny();
    }
    if want("E") {
        dispatch();
    }
    if want("G") {
        bf16_gemm(cfg);
    }
    if want("H") {
        half_speed(cfg);
    }
    if want("S") {
        optimizer_steps(cfg);
    }
    if want("L") {
        lines_workload(cfg);
    }
    if want("K") {
        clip_workload(cfg);
    }
    if want("V") {
        conv_workload(cfg);
    }
    if want("T") || want("TL") {
        lenet_step(cfg);
    }
    if want("T") || want("TT") {
        if std::env::var("BENCH_IN_POOL").is_ok() {
            rayon::scope(|_| transformer_step(cfg));
        } else {
            transformer_step(cfg);
        }
    }
}
