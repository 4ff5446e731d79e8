//! CPU benchmarks, each with a PyTorch side in `scripts/torch_cpu_bench.py` (same shapes, same
//! data, same timing method: warm-up, calibrated iterations, median of samples), printed as the
//! same JSON lines so the two runs can be read side by side.
//!
//! ```sh
//! cargo bench --bench cpu              # everything
//! cargo bench --bench cpu -- A C E     # a subset
//! cargo bench --bench cpu -- H         # f32 vs f16 vs bf16, per element
//! cargo bench --bench cpu -- S         # optimizer steps, plain and under a GradScaler
//! cargo bench --bench cpu -- K         # clip_grad_norm_ over a 4.2M-parameter model
//! ```

use devtype::amp::GradScaler;
use devtype::nn::Linear;
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;
use std::hint::black_box;

const GEMM_SIZES: [usize; 3] = [256, 1024, 2048];
const ELEM_N: usize = 16 * 1024 * 1024;
const TINY_REPS: usize = 100_000;

mod common;

use common::{det_sym, median, time_fixed};

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
        let g = gflops(2.0 * (n as f64).powi(3));
        let t = time_per_call(cfg, || {
            black_box(a.matmul(&c));
        });
        report(
            "devtype",
            "H",
            &format!("gemm f32 n={n}"),
            "GFLOP/s",
            &t,
            &g,
        );
        let (ah, ch): (Tensor<Cpu, f16>, Tensor<Cpu, f16>) = (a.to_dtype(), c.to_dtype());
        let t = time_per_call(cfg, || {
            black_box(ah.matmul(&ch));
        });
        report(
            "devtype",
            "H",
            &format!("gemm f16 n={n}"),
            "GFLOP/s",
            &t,
            &g,
        );
        let (ab, cb): (Tensor<Cpu, bf16>, Tensor<Cpu, bf16>) = (a.to_dtype(), c.to_dtype());
        let t = time_per_call(cfg, || {
            black_box(ab.matmul(&cb));
        });
        report(
            "devtype",
            "H",
            &format!("gemm bf16 n={n}"),
            "GFLOP/s",
            &t,
            &g,
        );
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

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |w: &str| args.is_empty() || args.iter().any(|a| a == w);
    let cfg = cfg();
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
}
