//! Helpers shared by the GPU integration tests: open the GPU or skip with a printed reason.
//!
//! Without a GPU the tests print why they skip and pass, so `cargo test` works everywhere.
//! With `DEVTYPE_REQUIRE_CUDA=1` (set by `scripts/gpu-check.sh run` on GPU machines) a missing
//! GPU fails the test instead, so a broken driver setup cannot pass silently.
#![allow(dead_code)]

use devtype::Cuda;

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
