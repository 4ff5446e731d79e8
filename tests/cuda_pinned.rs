//! Pinned memory on a GPU: asynchronous round trips keep the values, uploads from pinned
//! memory and a prefetching loader never make the host wait, and the pool reuses its blocks.
//!
//! Skips with a printed reason without a GPU, unless `DEVTYPE_REQUIRE_CUDA=1` (see
//! `tests/common`). One test in its own binary: the sync counter is process-wide.

mod common;

use devtype::cuda::{pinned_memory_reserved, sync_count};
use devtype::data::{DataLoader, Dataset};
use devtype::prelude::*;

#[test]
fn pinned_round_trips_overlap_and_never_wait_per_batch() {
    let Some(gpu) = common::gpu() else { return };

    // Host -> GPU -> host, asynchronously both ways, several element types and sizes.
    let values: Vec<f32> = (0..3 * 1024 * 1024)
        .map(|i| (i % 977) as f32 * 0.5)
        .collect();
    let host = Tensor::from_vec(values.clone(), [3, 1024, 1024], Cpu);
    let pinned = host.pin_memory();
    assert!(
        pinned.is_pinned(),
        "a GPU is present: the memory must be page-locked"
    );
    let up = pinned.to_async(gpu);
    // Ops on the result are ordered after the copy by the streams alone.
    let doubled = up.tensor() * 2.0;
    let x = up.into_tensor();
    let back = doubled.to_async(Cpu).wait().unwrap();
    assert!(back.is_pinned());
    let want: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    assert_eq!(back.to_vec(), want);
    assert_eq!(x.to_vec(), values);

    let ints = Tensor::<Cpu, i64>::from_vec((0..1000).collect(), [10, 100], Cpu).pin_memory();
    let on_gpu = ints.to_async(gpu).wait().unwrap();
    let t = on_gpu.t(); // a strided source: downloaded in row-major order
    let got = t.to_async(Cpu).wait().unwrap().to_vec();
    assert_eq!(
        got,
        Tensor::<Cpu, i64>::from_vec((0..1000).collect(), [10, 100], Cpu)
            .t()
            .to_vec()
    );
    let flags = Tensor::<Cpu, bool>::from_vec(vec![true, false, true], [3], Cpu).pin_memory();
    assert_eq!(
        flags.to_async(gpu).into_tensor().to_vec(),
        vec![true, false, true]
    );

    // Writing the source right after `into_tensor` waits for the copy, so the GPU keeps the
    // values it was sent.
    let mut buf = Tensor::<Cpu>::ones([1 << 20], Cpu).pin_memory();
    let sent = buf.to_async(gpu).into_tensor();
    buf.as_mut_slice().fill(7.0);
    assert!(sent.to_vec().iter().all(|&v| v == 1.0));

    // Many uploads of one size from pinned buffers: no host wait, and the pool stops growing.
    let batch = Tensor::<Cpu>::randn([256, 784], Cpu);
    let w = Tensor::<Cuda<0>>::randn([784, 10], gpu);
    let mut acc = Tensor::<Cuda<0>>::zeros([], gpu);
    gpu.synchronize().unwrap();
    let before = sync_count();
    let mut reserved = Vec::new();
    for _ in 0..50 {
        let p = batch.pin_memory();
        let x = p.to_async(gpu).into_tensor();
        acc = &acc + &x.matmul(&w).sum_all();
        reserved.push(pinned_memory_reserved());
    }
    assert_eq!(
        sync_count(),
        before,
        "uploads from pinned memory made the host wait"
    );
    let expected = batch.matmul(w.to(Cpu)).sum_all().item() * 50.0;
    let got = acc.item();
    assert!(
        (got - expected).abs() <= 1e-2 * expected.abs().max(1.0),
        "{got} vs {expected}"
    );
    // Blocks come back once their copies finish, so the pool stays bounded.
    assert!(reserved[49] <= reserved[10] * 2 + (1 << 20), "{reserved:?}");

    // A loader with pin_memory(true): batches arrive on the GPU with the right values, and the
    // loop does no host sync per batch.
    let n = 512;
    let data = Dataset {
        inputs: Tensor::<Cpu>::arange(n * 4, Cpu).reshape(&[n as isize, 4]),
        labels: Tensor::<Cpu, i64>::arange(n, Cpu),
        classes: n,
    };
    let loader = DataLoader::new(data, gpu)
        .batch_size(64)
        .num_workers(2)
        .pin_memory(true);
    let mut total = Tensor::<Cuda<0>>::zeros([], gpu);
    gpu.synchronize().unwrap();
    let before = sync_count();
    let mut batches = 0;
    for batch in &loader {
        let (x, _y) = batch.unwrap();
        total = &total + &x.sum_all();
        batches += 1;
    }
    assert_eq!(
        sync_count(),
        before,
        "the pinned loader made the host wait per batch"
    );
    assert_eq!(batches, n / 64);
    let m = (n * 4) as f64;
    assert!((total.item() as f64 - m * (m - 1.0) / 2.0).abs() < 1.0);
}
