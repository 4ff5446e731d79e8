//! Helpers shared by the integration tests: a seeded generator, and for the GPU tests, open
//! the GPU or skip with a printed reason.
//!
//! Without a GPU the tests print why they skip and pass, so `cargo test` works everywhere.
//! With `DEVTYPE_REQUIRE_CUDA=1` (set by `scripts/gpu-check.sh run` on GPU machines) a missing
//! GPU fails the test instead, so a broken driver setup cannot pass silently.
#![allow(dead_code)]

use devtype::{Cuda, DType, DynTensor};

/// True when `DEVTYPE_REQUIRE_CUDA=1`.
pub fn cuda_required() -> bool {
    std::env::var("DEVTYPE_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// GPU 0, or `None` (after printing the reason) when it cannot be opened. Panics instead when
/// `DEVTYPE_REQUIRE_CUDA=1`.
#[track_caller]
pub fn gpu() -> Option<Cuda<0>> {
    match Cuda::<0>::open() {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            if cuda_required() {
                panic!("DEVTYPE_REQUIRE_CUDA=1 but Cuda::<0>::open() failed: {e}");
            }
            let caller = std::panic::Location::caller();
            eprintln!("skipping the CUDA test at {caller}: no usable GPU ({e})");
            None
        }
    }
}

/// GPU 1 when there are two GPUs, else `None` (printing why); never required.
pub fn second_gpu() -> Option<Cuda<1>> {
    match Cuda::<1>::open() {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            eprintln!("skipping the two-GPU part: no cuda:1 ({e})");
            None
        }
    }
}

/// The seed of a randomized test: `DEVTYPE_TEST_SEED` when set, else the clock (a fixed
/// seed under Miri, which has no clock).
pub fn test_seed() -> u64 {
    std::env::var("DEVTYPE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            if cfg!(miri) {
                return 0x5EED;
            }
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// SplitMix64: fresh random inputs for every run, reproducible from the printed seed.
pub struct Rng(pub u64);

impl Rng {
    /// Seeded by [`test_seed`] (printed, so the harness shows it on failure); different tests
    /// get different streams from one seed.
    pub fn new(test: &str) -> Rng {
        let seed = test_seed();
        println!("{test}: seed = {seed} (rerun with DEVTYPE_TEST_SEED={seed})");
        let salt = test
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        Rng(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    /// Uniform in `lo..=hi` (`lo` when the range is empty).
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo.wrapping_add(
            (self.next_u64() % (hi.wrapping_sub(lo) as u64).wrapping_add(1).max(1)) as i64,
        )
    }

    /// `n` values uniform in `[lo, hi)`.
    pub fn values(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }

    /// `count` bytes, each uniform in `0..below` (`below` at most 256).
    pub fn bytes(&mut self, count: usize, below: u64) -> Vec<u8> {
        (0..count)
            .map(|_| (self.next_u64() % below) as u8)
            .collect()
    }
}

/// A tensor's values as f64, whatever its element type (booleans as 0 and 1).
pub fn values_f64(t: &DynTensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        DType::F64 => t.to_vec::<f64>().unwrap(),
        DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(|v| v as u8 as f64)
            .collect(),
        DType::F16 => t
            .to_vec::<devtype::f16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        DType::BF16 => t
            .to_vec::<devtype::bf16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        #[allow(unreachable_patterns)]
        other => panic!("no f64 view of {other:?}"),
    }
}

/// Asserts `got` equals `want` element by element within `tol`, relative to each wanted
/// value's size (`|g - w| <= tol (1 + |w|)`), naming `what` and the first index that is not.
#[track_caller]
pub fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, want {w} (tol {tol})"
        );
    }
}
