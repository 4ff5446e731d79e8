//! The machine's ceiling for f32 matrix products: fused multiply-adds with no memory traffic,
//! on one thread and on every thread, with 256-bit (AVX2) and 512-bit (AVX-512) vectors.
//!
//! No GEMM, ours or a peer's, can beat this number; it says how far a GEMM target can be met
//! on the machine at hand. (An AMD Zen 4 core, for one, runs a 512-bit FMA as two 256-bit
//! halves, so both widths give the same ceiling there.)
//!
//! Then, in the same run, the f32 GEMM three ways at n = 1024 and 2048, each as a fraction of
//! the ceiling: the `gemm-f32` crate's entry point called directly with a column-major and with
//! a row-major destination, and devtype's `matmul`. The crate's kernels want a column-major
//! destination; called with a row-major one they run at about half speed, which is how
//! devtype's GEMM once lost half its speed unnoticed. `matmul` must stay level with the
//! column-major call.
//!
//! Last, `conv2d` (with a bias) at LeNet's two shapes and a ResNet block's (those of
//! `cargo bench --bench cpu -- V`), forward and forward+backward, as fractions of the ceiling
//! (`2·N·Cout·Hout·Wout·Cin·k·k` flop forward, three times that forward+backward).
//!
//! On CPUs with AVX512-BF16, the same for `bf16`: the ceiling of `vdpbf16ps` (two products and
//! two additions per 32-bit lane; on cores without AMX tiles PyTorch's oneDNN also runs its
//! bf16 GEMMs with it) and devtype's `bf16` `matmul` against it; where the CPU has AMX-BF16
//! and the OS grants the tiles, against the ceiling of AMX's `tdpbf16ps` instead (four
//! independent tile products, operands loaded once), which both devtype and oneDNN use there.
//!
//! First, the time a cache line takes to go from one core to another and back (two threads
//! passing a counter): 50-60 ns between the two vCPUs of the Zen 4 VMs measured, 320-350 ns in
//! the windows where the VM placed them on different dies. In such a window everything that
//! shares data between threads runs slower, however fast each core computes; a figure below
//! taken in one is not comparable with one taken outside.
//!
//! ```sh
//! cargo bench --bench peak                      # every thread
//! RAYON_NUM_THREADS=1 cargo bench --bench peak  # the GEMMs on one thread
//! ```

use std::hint::black_box;
use std::time::Instant;

mod common;

/// Independent accumulator chains, at least FMA latency times FMA ports on any x86 core, and
/// few enough to stay in registers (AVX2 has 16, AVX-512 32).
const CHAINS_AVX2: usize = 12;
const CHAINS_AVX512: usize = 16;
/// Loop trips per timed call.
const ITERS: u64 = 20_000_000;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{CHAINS_AVX2, CHAINS_AVX512, ITERS};
    use std::arch::x86_64::*;

    /// Flops of one call of [`fma_avx512`].
    pub const FLOPS_AVX512: f64 = (ITERS as usize * CHAINS_AVX512 * 16 * 2) as f64;
    /// Flops of one call of [`fma_avx2`].
    pub const FLOPS_AVX2: f64 = (ITERS as usize * CHAINS_AVX2 * 8 * 2) as f64;

    /// `CHAINS_AVX512` independent FMA chains of 16 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma_avx512(seed: f32) -> f32 {
        let a = _mm512_set1_ps(0.999_999);
        let b = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(seed); CHAINS_AVX512];
        for _ in 0..ITERS {
            for v in acc.iter_mut() {
                *v = _mm512_fmadd_ps(*v, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for v in acc {
            sum = _mm512_add_ps(sum, v);
        }
        _mm512_reduce_add_ps(sum)
    }

    /// Flops of one call of [`dpbf16_avx512`]: 16 lanes, each two products and two additions.
    pub const FLOPS_BF16: f64 = (ITERS as usize * CHAINS_AVX512 * 16 * 4) as f64;

    /// `CHAINS_AVX512` independent `vdpbf16ps` chains of 16 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX512-BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn dpbf16_avx512(seed: f32) -> f32 {
        let a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5), _mm512_set1_ps(0.25));
        let b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7), _mm512_set1_ps(-1e-7));
        let mut acc = [_mm512_set1_ps(seed); CHAINS_AVX512];
        for _ in 0..ITERS {
            for v in acc.iter_mut() {
                *v = _mm512_dpbf16_ps(*v, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for v in acc {
            sum = _mm512_add_ps(sum, v);
        }
        _mm512_reduce_add_ps(sum)
    }

    /// `tdpbf16ps` steps per call of [`tdpbf16_amx`].
    const AMX_STEPS: usize = 1 << 20;
    /// Flops of one call of [`tdpbf16_amx`]: per step four 16 x 32 by 32 x 16 tile products.
    pub const FLOPS_AMX: f64 = (AMX_STEPS * 4 * 16 * 16 * 32 * 2) as f64;

    /// Four independent chains of `tdpbf16ps` into four `16 x 16` tiles of `f32` sums, from
    /// operand tiles loaded once (no memory traffic in the loop).
    ///
    /// # Safety
    /// `devtype::cpu::capability()` must have reported `bf16` products on AMX's tiles (the CPU
    /// has AMX-BF16, and the OS has granted this process the tile state at devtype's request).
    pub unsafe fn tdpbf16_amx(seed: f32) -> f32 {
        #[repr(C, align(64))]
        struct Tiles([u8; 64], [f32; 256]);
        let mut t = Tiles([0; 64], [seed * 1e-30; 256]);
        t.0[0] = 1;
        for i in 0..8 {
            t.0[16 + 2 * i] = 64;
            t.0[48 + i] = 16;
        }
        // SAFETY: AMX is there and granted (the caller's contract); the loads read the 1 KiB of
        // `t.1`, the store writes it; the tiles are released at the end.
        unsafe {
            std::arch::asm!(
                "ldtilecfg [{cfg}]",
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                "tileloadd tmm4, [{buf} + {s64}*1]",
                "tileloadd tmm5, [{buf} + {s64}*1]",
                "tileloadd tmm6, [{buf} + {s64}*1]",
                "tileloadd tmm7, [{buf} + {s64}*1]",
                "2:",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "dec {steps}",
                "jnz 2b",
                "tilestored [{buf} + {s64}*1], tmm0",
                "tilerelease",
                cfg = in(reg) t.0.as_ptr(),
                buf = in(reg) t.1.as_mut_ptr(),
                s64 = in(reg) 64usize,
                steps = inout(reg) AMX_STEPS => _,
                options(nostack),
            );
        }
        t.1[0]
    }

    /// `CHAINS_AVX2` independent FMA chains of 8 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_avx2(seed: f32) -> f32 {
        let a = _mm256_set1_ps(0.999_999);
        let b = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(seed); CHAINS_AVX2];
        for _ in 0..ITERS {
            for v in acc.iter_mut() {
                *v = _mm256_fmadd_ps(*v, a, b);
            }
        }
        let mut sum = _mm256_setzero_ps();
        for v in acc {
            sum = _mm256_add_ps(sum, v);
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` is 8 writable f32s; the unaligned store has no alignment needs.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
        lanes.iter().sum()
    }
}

/// Median GFLOP/s of `threads` threads each running `kernel` at once.
fn measure(threads: usize, flops_per_call: f64, kernel: fn(f32) -> f32) -> f64 {
    let mut rates: Vec<f64> = (0..5)
        .map(|round| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for t in 0..threads {
                    s.spawn(move || black_box(kernel(black_box(round as f32 + t as f32))));
                }
            });
            threads as f64 * flops_per_call / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn report(case: &str, gflops: f64) {
    println!(
        "{{\"peer\":\"machine\",\"workload\":\"peak\",\"case\":\"{case}\",\"value\":{gflops:.1},\"unit\":\"GFLOP/s\"}}"
    );
}

/// Median seconds of one call of `f` over 7 samples, after a warm-up call.
fn median_secs(mut f: impl FnMut()) -> f64 {
    f();
    let mut secs: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    secs[secs.len() / 2]
}

/// The f32 GEMM at `n` three ways, each printed with its fraction of `ceiling` (GFLOP/s, the
/// FMA ceiling of as many threads as the GEMMs use).
fn gemms(n: usize, ceiling: f64) {
    use devtype::prelude::*;
    let threads = rayon::current_num_threads();
    let a = Tensor::<Cpu>::randn([n, n], Cpu);
    let b = Tensor::<Cpu>::randn([n, n], Cpu);
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut dst = vec![0f32; n * n];
    let par = if threads > 1 {
        gemm_common::Parallelism::Rayon(threads)
    } else {
        gemm_common::Parallelism::None
    };
    let flops = 2.0 * (n as f64).powi(3);
    let mut direct = |dst_cs: isize, dst_rs: isize| {
        let gemm = gemm_f32::gemm::f32::get_gemm_fn();
        let n_ = n as isize;
        // The same product either way: with dst row-major (cs 1, rs n) it is A B from row-major
        // A and B; with dst column-major (cs n, rs 1) it is the transposed problem B^T A^T.
        let (lhs, rhs) = if dst_cs == 1 { (&va, &vb) } else { (&vb, &va) };
        let (l_cs, l_rs) = if dst_cs == 1 { (1, n_) } else { (n_, 1) };
        median_secs(|| {
            // SAFETY: every matrix is n x n inside a vector of n * n elements, with strides
            // (1, n) or (n, 1); `dst` is a distinct, writable allocation.
            unsafe {
                gemm(
                    n,
                    n,
                    n,
                    dst.as_mut_ptr(),
                    dst_cs,
                    dst_rs,
                    false,
                    lhs.as_ptr(),
                    l_cs,
                    l_rs,
                    rhs.as_ptr(),
                    l_cs,
                    l_rs,
                    1.0,
                    1.0,
                    false,
                    false,
                    false,
                    par,
                )
            }
            black_box(&dst);
        })
    };
    let col = direct(n as isize, 1);
    let row = direct(1, n as isize);
    let ours = median_secs(|| {
        black_box(a.matmul(&b));
    });
    for (how, secs) in [
        ("gemm-f32 direct, column-major dst", col),
        ("gemm-f32 direct, row-major dst", row),
        ("devtype matmul", ours),
    ] {
        let gf = flops / secs / 1e9;
        println!(
            "{{\"peer\":\"gemm\",\"workload\":\"peak\",\"case\":\"sgemm n={n} {threads} threads, {how}\",\"value\":{gf:.1},\"unit\":\"GFLOP/s\",\"of_ceiling\":{:.3}}}",
            gf / ceiling
        );
    }
}

/// `conv2d` at LeNet's and a ResNet block's shapes (`benches/cpu.rs`'s workload V), forward
/// without recording and forward+backward (input, weight and bias requiring gradients), each
/// printed with its fraction of `ceiling`.
fn convs(ceiling: f64) {
    use devtype::prelude::*;
    let threads = rayon::current_num_threads();
    // (name, batch, in channels, side, out channels, kernel, padding)
    let shapes = [
        ("lenet conv1 64x1x28x28 -> 6 k5 p2", 64, 1, 28, 6, 5, 2),
        ("lenet conv2 64x6x14x14 -> 16 k5", 64, 6, 14, 16, 5, 0),
        ("resnet 32x64x56x56 -> 64 k3 p1", 32, 64, 56, 64, 3, 1),
    ];
    for (name, n, cin, side, cout, k, p) in shapes {
        let out = side + 2 * p - k + 1;
        let flops = 2.0 * (n * cout * out * out * cin * k * k) as f64;
        let x = Tensor::parameter(Tensor::<Cpu>::randn([n, cin, side, side], Cpu));
        let w = Tensor::parameter(Tensor::<Cpu>::randn([cout, cin, k, k], Cpu));
        let b = Tensor::parameter(Tensor::<Cpu>::randn([cout], Cpu));
        let g = Tensor::<Cpu>::randn([n, cout, out, out], Cpu);
        let conv = || x.conv2d(&w, Some(&b), (1, 1), (p, p), (1, 1), 1);
        let fwd = median_secs(|| {
            black_box(no_grad(conv));
        });
        let both = median_secs(|| {
            for t in [&x, &w, &b] {
                t.zero_grad();
            }
            conv().backward_with(&g);
        });
        for (how, secs, flops) in [("fwd", fwd, flops), ("fwd+bwd", both, 3.0 * flops)] {
            let gf = flops / secs / 1e9;
            println!(
                "{{\"peer\":\"devtype\",\"workload\":\"peak\",\"case\":\"conv2d {name} {how}, {threads} threads\",\"value\":{gf:.1},\"unit\":\"GFLOP/s\",\"of_ceiling\":{:.3}}}",
                gf / ceiling
            );
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let gemm_threads = rayon::current_num_threads();
    common::print_capability();
    if all > 1 {
        println!(
            "{{\"peer\":\"machine\",\"workload\":\"peak\",\"case\":\"cache line round trip between two threads\",\"value\":{:.0},\"unit\":\"ns\"}}",
            round_trip_ns()
        );
    }
    // The ceiling for the GEMMs below: the widest FMA the CPU has, on as many threads.
    let mut ceiling = 0f64;
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA were detected just above.
        let kernel: fn(f32) -> f32 = |s| unsafe { x86::fma_avx2(s) };
        let one = measure(1, x86::FLOPS_AVX2, kernel);
        report("f32 FMA, AVX2, 1 thread", one);
        let name = format!("f32 FMA, AVX2, {all} threads");
        let every = measure(all, x86::FLOPS_AVX2, kernel);
        report(&name, every);
        ceiling = ceiling.max(if gemm_threads == 1 { one } else { every });
    }
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F was detected just above.
        let kernel: fn(f32) -> f32 = |s| unsafe { x86::fma_avx512(s) };
        let one = measure(1, x86::FLOPS_AVX512, kernel);
        report("f32 FMA, AVX-512, 1 thread", one);
        let name = format!("f32 FMA, AVX-512, {all} threads");
        let every = measure(all, x86::FLOPS_AVX512, kernel);
        report(&name, every);
        ceiling = ceiling.max(if gemm_threads == 1 { one } else { every });
    }
    if ceiling > 0.0 {
        for n in [1024, 2048] {
            gemms(n, ceiling);
        }
        convs(ceiling);
    }
    if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16") {
        // SAFETY: AVX-512F and AVX512-BF16 were detected just above.
        let kernel: fn(f32) -> f32 = |s| unsafe { x86::dpbf16_avx512(s) };
        let one = measure(1, x86::FLOPS_BF16, kernel);
        report("bf16 dot products (vdpbf16ps), 1 thread", one);
        let every = measure(all, x86::FLOPS_BF16, kernel);
        report(
            &format!("bf16 dot products (vdpbf16ps), {all} threads"),
            every,
        );
        let mut bf16_ceiling = if gemm_threads == 1 { one } else { every };
        if devtype::cpu::capability().bf16_matmul == devtype::cpu::Bf16Matmul::AmxTiles {
            // devtype's bf16 GEMM runs on AMX here: its ceiling is the tiles'.
            // SAFETY: devtype found the tiles and has the OS's grant for them.
            let kernel: fn(f32) -> f32 = |s| unsafe { x86::tdpbf16_amx(s) };
            let one = measure(1, x86::FLOPS_AMX, kernel);
            report("bf16 tile products (AMX tdpbf16ps), 1 thread", one);
            let every = measure(all, x86::FLOPS_AMX, kernel);
            report(
                &format!("bf16 tile products (AMX tdpbf16ps), {all} threads"),
                every,
            );
            bf16_ceiling = if gemm_threads == 1 { one } else { every };
        }
        for n in [512, 1024, 2048] {
            bf16_gemm(n, bf16_ceiling);
        }
    }
}

/// Nanoseconds for one cache line (an atomic counter) to go from this thread to another and
/// back, the median of five runs of 100,000 round trips; each thread spins, so with as many
/// threads as cores they run on two different cores.
fn round_trip_ns() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    const ROUNDS: u64 = 100_000;
    let mut ns: Vec<f64> = (0..5)
        .map(|_| {
            let turn = AtomicU64::new(0);
            std::thread::scope(|s| {
                s.spawn(|| {
                    for i in 0..ROUNDS {
                        while turn.load(Ordering::Acquire) != 2 * i + 1 {
                            std::hint::spin_loop();
                        }
                        turn.store(2 * i + 2, Ordering::Release);
                    }
                });
                let t = Instant::now();
                for i in 0..ROUNDS {
                    turn.store(2 * i + 1, Ordering::Release);
                    while turn.load(Ordering::Acquire) != 2 * i + 2 {
                        std::hint::spin_loop();
                    }
                }
                t.elapsed().as_nanos() as f64 / ROUNDS as f64
            })
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    ns[ns.len() / 2]
}

/// devtype's `bf16` `matmul` at `n`, printed with its fraction of `ceiling` (the `vdpbf16ps`
/// or AMX ceiling of as many threads as the GEMM uses).
fn bf16_gemm(n: usize, ceiling: f64) {
    use devtype::half::bf16;
    use devtype::prelude::*;
    let threads = rayon::current_num_threads();
    let a = Tensor::<Cpu>::randn([n, n], Cpu).to_dtype::<bf16>();
    let b = Tensor::<Cpu>::randn([n, n], Cpu).to_dtype::<bf16>();
    let secs = median_secs(|| {
        black_box(a.matmul(&b));
    });
    let gf = 2.0 * (n as f64).powi(3) / secs / 1e9;
    println!(
        "{{\"peer\":\"devtype\",\"workload\":\"peak\",\"case\":\"bf16 gemm n={n} {threads} threads, devtype matmul\",\"value\":{gf:.1},\"unit\":\"GFLOP/s\",\"of_ceiling\":{:.3}}}",
        gf / ceiling
    );
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("the peak probe measures x86-64 vector units only");
}
