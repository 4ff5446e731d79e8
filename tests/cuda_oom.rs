//! Running out of GPU memory is an `Error::OutOfMemory` with PyTorch's text and our hint, from
//! the `try_` op that asked for too much; afterwards the device keeps working. Also checks the
//! per-device accounting of live tensors.
//!
//! One test in its own binary: it fills the GPU, which other tests must not share.

mod common;

use devtype::cuda::{empty_cache, max_memory_allocated, memory_allocated};
use devtype::prelude::*;
use devtype::Error;

const GIB: u64 = 1 << 30;

#[test]
fn out_of_memory_is_an_error_and_the_device_keeps_working() {
    let Some(gpu) = common::gpu() else { return };
    let base = memory_allocated(0);

    // A request no GPU can hold.
    let e = Tensor::<Cuda<0>>::try_zeros([1usize << 42], gpu).unwrap_err();
    assert!(
        matches!(e, Error::OutOfMemory { device: 0, requested, .. } if requested == 16384 * GIB),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with(
            "CUDA out of memory. Tried to allocate 16384.00 GiB. GPU 0 has a total capacity of "
        ),
        "{text}"
    );
    assert!(
        text.contains(" is free. Of the allocated memory "),
        "{text}"
    );
    assert!(
        text.ends_with("Reduce the batch size first; then drop tensors you no longer need."),
        "{text}"
    );

    // An op whose output does not fit: 2^20 x 2^20 f32 = 4 TiB.
    let a = Tensor::<Cuda<0>>::ones([1 << 20, 1], gpu);
    let e = a.try_matmul(a.t()).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e:?}");
    assert_eq!(memory_allocated(0), base + (4 << 20));

    // Fill the device with 4 GiB tensors until it is full.
    let mut held = Vec::new();
    let err = loop {
        match Tensor::<Cuda<0>>::try_zeros([1usize << 30], gpu) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
        assert!(held.len() < 1024, "never ran out of memory");
    };
    let Error::OutOfMemory {
        total, allocated, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert!(!held.is_empty());
    assert_eq!(allocated, memory_allocated(0));
    assert_eq!(
        memory_allocated(0),
        base + (4 << 20) + held.len() as u64 * 4 * GIB
    );
    assert!(max_memory_allocated(0) >= memory_allocated(0));
    assert!(held.len() as u64 * 4 * GIB <= total);
    eprintln!(
        "cuda_oom: held {} x 4 GiB of {:.1} GiB before running out",
        held.len(),
        total as f64 / GIB as f64
    );
    drop(held);
    assert_eq!(memory_allocated(0), base + (4 << 20));

    // The device keeps working: kernels, cuBLAS, reads. The memory just freed went back to
    // devtype's pool, which keeps it, so the driver itself has almost nothing left; and this is
    // the process's first use of the reduce kernels and of cuBLAS. Loading the module
    // (`cuModuleLoadData`) and creating the cuBLAS handle (`cublasCreate`) allocate outside the
    // pool, run out of memory, and must recover as allocation does: wait, trim the pool, retry.
    // No `empty_cache` before them, or the test would not test that.
    let x = Tensor::<Cuda<0>, f64>::arange(1000, gpu);
    assert_eq!(x.sum_all().item(), 499_500.0);
    let m = Tensor::<Cuda<0>>::ones([64, 32], gpu).matmul(Tensor::ones([32, 16], gpu));
    assert_eq!(m.to_vec(), vec![32.0; 64 * 16]);
    // And the big allocation that failed before fits now.
    let again = Tensor::<Cuda<0>>::try_zeros([1usize << 30], gpu).unwrap();
    assert_eq!(again.narrow(0, 5, 3).to_vec(), vec![0.0; 3]);
    drop((again, a, x, m));
    empty_cache(0).unwrap();
    assert_eq!(memory_allocated(0), base);

    a_move_that_runs_out_of_memory_half_way_moves_nothing(gpu);
}

/// `model.to(gpu)` where the first layer's weight fits and the second's does not: the error is
/// PyTorch's out-of-memory text, every parameter is still on the CPU with its values, and the
/// copy of the first weight is freed again (nothing half-moved).
fn a_move_that_runs_out_of_memory_half_way_moves_nothing(gpu: Cuda<0>) {
    use devtype::nn::{DynEmbedding, DynModule, DynSequential};
    use devtype::{DynDevice, DynTensor};
    const MIB: usize = 1 << 20;
    let cpu = DynDevice::cpu();
    // Weights of 4 MiB and 64 MiB (f32), the only tensors of the model.
    let mut model = DynSequential::new()
        .append(DynEmbedding::new(1024, 1024, cpu).unwrap())
        .append(DynEmbedding::new(16 * 1024, 1024, cpu).unwrap());
    let before: Vec<Vec<f32>> = model
        .named_parameters()
        .into_iter()
        .map(|(_, p)| p.to_vec::<f32>().unwrap())
        .collect();
    // A 4 MiB hole: held while the device is filled in halving steps down to 4 MiB blocks,
    // then freed. The first weight fits in it; the second finds less than 4 MiB anywhere.
    let base = memory_allocated(0);
    let hole = Tensor::<Cuda<0>>::zeros([MIB], gpu);
    let mut held = Vec::new();
    let mut block = 4 * GIB as usize;
    while block >= 4 * MIB {
        match Tensor::<Cuda<0>>::try_zeros([block / 4], gpu) {
            Ok(t) => held.push(t),
            Err(Error::OutOfMemory { .. }) => block /= 2,
            Err(e) => panic!("{e:?}"),
        }
    }
    drop(hole);
    let full = memory_allocated(0);

    let err = model.move_to(DynDevice::from(gpu)).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    model.visit_parameters("", &mut |name, p: &DynTensor| {
        assert_eq!(p.device(), cpu, "{name}");
        assert!(p.requires_grad(), "{name}");
    });
    let after: Vec<Vec<f32>> = model
        .named_parameters()
        .into_iter()
        .map(|(_, p)| p.to_vec::<f32>().unwrap())
        .collect();
    assert!(after == before, "the values changed");
    assert_eq!(
        memory_allocated(0),
        full,
        "the first weight's copy is freed"
    );
    drop(held);
    empty_cache(0).unwrap();
    assert_eq!(memory_allocated(0), base);
    // With room, the same model moves whole.
    model.move_to(DynDevice::from(gpu)).unwrap();
    model.visit_parameters("", &mut |name, p: &DynTensor| {
        assert_eq!(p.device(), DynDevice::from(gpu), "{name}")
    });
}
