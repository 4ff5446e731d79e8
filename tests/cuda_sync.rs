//! Asynchrony: a loop of GPU ops never makes the host wait, and reading values back is what
//! syncs, as `torch.cuda.set_sync_debug_mode` reports it.
//!
//! One test in its own binary: the sync counter and the debug mode are process-wide.

mod common;

use devtype::cuda::{set_sync_debug_mode, sync_count, thread_sync_count, SyncDebugMode};
use devtype::nn::Reduction;
use devtype::prelude::*;

#[test]
fn a_loop_of_gpu_ops_never_waits_and_reading_values_does() {
    let Some(gpu) = common::gpu() else { return };
    let x = Tensor::<Cuda<0>>::randn([256, 128], gpu);
    let w = Tensor::<Cuda<0>>::randn([64, 128], gpu);
    let b = Tensor::<Cuda<0>>::zeros([64], gpu);
    // Host data goes up without waiting for the GPU.
    let targets = Tensor::<Cuda<0>, i64>::from_vec((0..256).map(|i| i % 64).collect(), [256], gpu);
    let rows = Tensor::<Cuda<0>, i64>::from_vec(vec![0, 5, 9, 255], [4], gpu);
    let mut acc = Tensor::<Cuda<0>>::zeros([], gpu);

    // In `error` mode any implicit sync inside the loop would fail (and the infallible ops
    // below would panic with "called a synchronizing CUDA operation").
    set_sync_debug_mode(SyncDebugMode::Error);
    let before = sync_count();
    let mut ops = 0;
    for _ in 0..100 {
        let h = x.try_linear(&w, Some(&b)).unwrap(); // cuBLAS
        let h = h.relu();
        let p = h.softmax(1);
        let picked = p.index_select(0, &rows);
        let best = picked.argmax(1);
        let big = h.gt_scalar(0.5);
        let masked = big.where_cond(&h, &p);
        let both = Tensor::cat((&masked, &h), 0);
        let loss = h
            .to_dyn()
            .cross_entropy_with(&targets.to_dyn(), None, Reduction::Mean, -100)
            .unwrap()
            .try_into_typed::<Cuda<0>>()
            .unwrap();
        let noise = Tensor::<Cuda<0>>::randn([64], gpu);
        acc = &acc + &(both.mean_all() + loss + noise.max_all() + best.to_dtype::<f32>().sum_all());
        ops += 16;
    }
    assert_eq!(sync_count(), before, "{ops} GPU ops made the host wait");

    // Reading a value is a sync: refused in `error` mode, before waiting.
    let e = acc.try_item().unwrap_err();
    assert_eq!(e.to_string(), "called a synchronizing CUDA operation");
    assert!(acc.try_to_vec().is_err());
    assert!(acc.try_to(Cpu).is_err());
    assert_eq!(sync_count(), before);
    // An explicit synchronize is allowed in every mode, and counted.
    gpu.synchronize().unwrap();
    assert_eq!(sync_count(), before + 1);

    // `warn` mode prints and goes on; each read is one sync.
    set_sync_debug_mode(SyncDebugMode::Warn);
    let v = acc.try_item().unwrap();
    assert!(v.is_finite(), "{v}");
    assert_eq!(sync_count(), before + 2);
    set_sync_debug_mode(SyncDebugMode::Default);
    let host = acc.to(Cpu);
    assert_eq!(host.item(), v);
    assert_eq!(sync_count(), before + 3);
    // Printing reads the values back: one more sync.
    let printed = format!("{acc}");
    assert!(printed.ends_with("device='cuda:0')"), "{printed}");
    assert_eq!(sync_count(), before + 4);
    // Uploads and GPU-to-GPU work do not wait.
    let up = Tensor::from_vec(vec![1.0f32; 1 << 20], [1 << 20], gpu);
    let _sum = up.sum_all();
    assert_eq!(sync_count(), before + 4);

    // Another thread's wait counts for the process, not for this thread.
    let mine = thread_sync_count();
    std::thread::scope(|s| {
        s.spawn(|| {
            let there = thread_sync_count();
            gpu.synchronize().unwrap();
            assert_eq!(thread_sync_count(), there + 1);
        });
    });
    assert_eq!(sync_count(), before + 5);
    assert_eq!(thread_sync_count(), mine);
    let _back = up.to(Cpu); // a copy back: one wait, on this thread
    assert_eq!(thread_sync_count(), mine + 1);
}
