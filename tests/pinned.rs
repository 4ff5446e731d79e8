//! Pinned host tensors on any machine: values, the fallback to ordinary memory without a
//! driver, the pool's reuse and accounting, `empty_pinned_cache`, and the guards' logic.
//!
//! The pool is process-wide, so the tests that read its numbers run one at a time (`LOCK`).
//! Runs under Miri too (`cargo +nightly miri test --test pinned`): there the pool is always the
//! fallback and no driver is probed.

use devtype::cuda::{empty_pinned_cache, pinned_memory_allocated, pinned_memory_reserved};
use devtype::prelude::*;
use devtype::PinnedTensor;
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn gpu_present() -> bool {
    !cfg!(miri) && devtype::cuda::is_available()
}

#[test]
fn pin_memory_copies_the_values_and_reads_like_a_cpu_tensor() {
    let _l = lock();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], Cpu);
    let p = x.pin_memory();
    // Without a driver devtype falls back to ordinary memory (PyTorch would raise).
    assert_eq!(p.is_pinned(), gpu_present());
    assert_eq!(p.shape(), &[2, 3]);
    assert_eq!(p.to_vec(), x.to_vec());
    // Read wherever a CPU tensor is read: ops through `Deref`, or `as_cpu`.
    let y = &*p + &x;
    assert_eq!(y.to_vec(), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    assert_eq!(p.as_cpu().sum_all().item(), 21.0);
    // A strided view is pinned in row-major order.
    let t = x.t().pin_memory();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // Other element types.
    let b = Tensor::<Cpu, bool>::from_vec(vec![true, false, true], [3], Cpu).pin_memory();
    assert_eq!(b.to_vec(), vec![true, false, true]);
    let i = Tensor::<Cpu, i64>::from_vec(vec![-3, 7], [2], Cpu).pin_memory();
    assert_eq!(i.into_cpu().to_vec(), vec![-3, 7]);
    let e = Tensor::<Cpu>::zeros([0, 4], Cpu).pin_memory();
    assert_eq!(e.numel(), 0);
}

#[test]
fn the_pool_reuses_blocks_and_counts_them() {
    let _l = lock();
    empty_pinned_cache();
    let base_reserved = pinned_memory_reserved();
    let base_used = pinned_memory_allocated();
    // 1000 f32 = 4000 bytes: one 4 KiB block.
    let a = Tensor::<Cpu>::ones([1000], Cpu).pin_memory();
    assert_eq!(pinned_memory_reserved(), base_reserved + 4096);
    assert_eq!(pinned_memory_allocated(), base_used + 4096);
    drop(a);
    assert_eq!(pinned_memory_allocated(), base_used);
    assert_eq!(
        pinned_memory_reserved(),
        base_reserved + 4096,
        "kept for reuse"
    );
    // The next batch of about the same size reuses the block: nothing new is reserved.
    for _ in 0..5 {
        let b = Tensor::<Cpu>::ones([900], Cpu).pin_memory();
        assert_eq!(b.to_vec().len(), 900);
        assert_eq!(pinned_memory_reserved(), base_reserved + 4096);
    }
    // A larger one gets a block of the next power of two.
    let c = Tensor::<Cpu, f64>::zeros([1500], Cpu).pin_memory(); // 12000 bytes
    assert_eq!(pinned_memory_reserved(), base_reserved + 4096 + 16384);
    // empty_cache frees the idle block and keeps the one in use.
    assert_eq!(empty_pinned_cache(), 4096);
    assert_eq!(pinned_memory_reserved(), base_reserved + 16384);
    drop(c);
    assert_eq!(empty_pinned_cache(), 16384);
    assert_eq!(pinned_memory_reserved(), base_reserved);
}

#[test]
fn writes_go_to_the_pinned_buffer_and_never_to_a_tensor_sharing_it() {
    let _l = lock();
    let mut p = PinnedTensor::<f32>::zeros([4]);
    p.as_mut_slice().copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(p.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    // A clone of the CPU view shares the storage; writing the pinned tensor then gives it its
    // own block (copy on write), so the clone keeps its values.
    let view: Tensor<Cpu> = p.as_cpu().clone();
    p.as_mut_slice()[0] = 9.0;
    assert_eq!(view.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(p.to_vec(), vec![9.0, 2.0, 3.0, 4.0]);
    assert_eq!(p.is_pinned(), gpu_present());
}

#[test]
fn an_upload_guard_hands_over_its_tensor_and_releases_the_source() {
    let _l = lock();
    let mut p = Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu).pin_memory();
    // To the CPU there is no copy engine: the guard is complete at once.
    let up = p.to_async(Cpu);
    assert!(up.is_complete());
    assert_eq!(up.tensor().to_vec(), vec![1.0, 2.0]);
    let x = up.wait().unwrap();
    // The guard is gone: the source can be written again (the result shares nothing with it
    // once it has its own block).
    p.as_mut_slice()[1] = 5.0;
    assert_eq!(p.to_vec(), vec![1.0, 5.0]);
    assert_eq!(x.to_vec(), vec![1.0, 2.0]);
    let y = p.to_async(Cpu).into_tensor();
    assert_eq!(y.to_vec(), vec![1.0, 5.0]);
}

#[cfg(not(miri))]
#[test]
fn without_a_gpu_to_async_to_cuda_cannot_even_start() {
    let _l = lock();
    // There is no `Cuda<0>` value without an opened GPU, so an upload cannot be attempted.
    if gpu_present() {
        eprintln!("skipping: a GPU is present");
        return;
    }
    assert!(Cuda::<0>::open().is_err());
}

#[cfg(not(miri))]
#[test]
fn a_loader_with_pin_memory_gives_the_same_batches() {
    // Pins blocks from the shared pool: not while another test counts them.
    let _l = lock();
    use devtype::data::{DataLoader, Dataset, ToDevice};
    let n = 50;
    let data = Dataset {
        inputs: Tensor::<Cpu>::arange(n * 3, Cpu).reshape(&[n as isize, 3]),
        labels: Tensor::<Cpu, i64>::arange(n, Cpu),
        classes: n,
    };
    let plain = DataLoader::new(data.clone(), Cpu)
        .batch_size(8)
        .shuffle(true)
        .seed(4);
    let pinned = DataLoader::new(data.clone(), Cpu)
        .batch_size(8)
        .shuffle(true)
        .seed(4)
        .num_workers(2)
        .pin_memory(true);
    let a: Vec<_> = plain
        .iter()
        .map(|b| b.unwrap())
        .map(|(x, y)| (x.to_vec(), y.to_vec()))
        .collect();
    let b: Vec<_> = pinned
        .iter()
        .map(|b| b.unwrap())
        .map(|(x, y)| (x.to_vec(), y.to_vec()))
        .collect();
    assert_eq!(a, b);
    // Pinning a batch keeps its values (the workers do this before a GPU upload).
    let (x, y) = data.batch(&[3, 1]);
    let (px, py) = <_ as ToDevice<Cpu>>::pin_memory((x.clone(), y.clone())).unwrap();
    assert_eq!((px.to_vec(), py.to_vec()), (x.to_vec(), y.to_vec()));
}
