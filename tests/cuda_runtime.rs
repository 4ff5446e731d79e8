//! The CUDA runtime around the kernels: errors without a GPU, PyTorch's device-mismatch texts on
//! two real devices, event timers, memory accounting.
//!
//! GPU parts skip with a printed reason when `Cuda::<0>::open()` fails, unless
//! `DEVTYPE_REQUIRE_CUDA=1` (see `tests/common`).

mod common;

use devtype::nn::Reduction;
use devtype::prelude::*;

const CPU: DynDevice = DynDevice::cpu();
const GPU: DynDevice = DynDevice::cuda(0);
const SCALAR: [usize; 0] = [];

#[test]
fn without_a_gpu_everything_is_an_error_never_a_panic() {
    if Cuda::<0>::open().is_ok() {
        eprintln!("skipping the no-GPU checks: a GPU is present");
        return;
    }
    assert!(
        !common::cuda_required(),
        "DEVTYPE_REQUIRE_CUDA=1 but no GPU opens"
    );
    let count = devtype::cuda::device_count();
    assert_eq!(devtype::cuda::is_available(), count > 0);
    let e = Cuda::<0>::open().unwrap_err().to_string();
    if count == 0 && devtype::cuda::device_count() == 0 {
        assert!(
            e.starts_with("Found no NVIDIA driver on your system.")
                || e.starts_with("CUDA error: invalid device ordinal")
                || e.starts_with("The NVIDIA driver on your system is too old"),
            "{e}"
        );
    }
    // Every entry point that needs the device fails the same way.
    assert!(devtype::cuda::synchronize(0).is_err());
    assert!(devtype::cuda::get_device_name(0).is_err());
    assert!(devtype::cuda::Timer::start(0).is_err());
    assert!(devtype::cuda::empty_cache(0).is_err());
    assert_eq!(devtype::cuda::memory_allocated(0), 0);
    let dyn_err = DynTensor::zeros([2], GPU).unwrap_err().to_string();
    assert_eq!(dyn_err, e);
    let x = DynTensor::ones([2], CPU).unwrap();
    assert_eq!(x.to(GPU).unwrap_err().to_string(), e);
    assert!(Cuda::<7>::open().is_err());
}

#[test]
fn device_names_come_from_the_driver() {
    let Some(_gpu) = common::gpu() else { return };
    let count = devtype::cuda::device_count();
    for ordinal in 0..count {
        let name = devtype::cuda::get_device_name(ordinal).unwrap();
        assert!(!name.trim().is_empty(), "GPU {ordinal} has an empty name");
        eprintln!("cuda:{ordinal} is {name}");
    }
    let past = devtype::cuda::get_device_name(count)
        .unwrap_err()
        .to_string();
    assert!(past.contains("invalid device ordinal"), "{past}");
}

#[test]
fn sync_debug_mode_values() {
    use devtype::cuda::{set_sync_debug_mode, sync_debug_mode, SyncDebugMode};
    // This binary's other tests never set the mode, so this is safe to run in parallel.
    assert_eq!(sync_debug_mode(), SyncDebugMode::Default);
    assert_eq!(
        devtype::Error::SynchronizingOperation.to_string(),
        "called a synchronizing CUDA operation"
    );
    set_sync_debug_mode(SyncDebugMode::Default);
}

#[test]
fn out_of_memory_text_follows_pytorch() {
    let e = devtype::Error::OutOfMemory {
        device: 0,
        requested: 20 << 20,
        total: 150_000_000_000,
        free: 3 << 20,
        allocated: 78 << 30,
        reserved: 150 << 20,
    };
    assert_eq!(
        e.to_string(),
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.70 GiB of which 3.00 MiB is free. \
         Of the allocated memory 78.00 GiB is allocated by devtype, and 150.00 MiB is reserved by devtype but unallocated. \
         Reduce the batch size first; then drop tensors you no longer need."
    );
}

/// PyTorch's device-mismatch texts (`docs/pytorch-reference.md` §1), on a real GPU and the CPU.
#[test]
fn device_mismatch_texts_on_cuda0_and_cpu() {
    let Some(_gpu) = common::gpu() else { return };
    let elementwise = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!";
    let argument = |arg: &str, method: &str| {
        format!("Expected all tensors to be on the same device, but got {arg} is on cpu, different from other tensors on cuda:0 (when checking argument in method {method})")
    };
    let g = DynTensor::ones([2, 3], GPU).unwrap();
    let c = DynTensor::ones([2, 3], CPU).unwrap();
    // Element-wise: the GPU is named first whatever the order.
    assert_eq!(g.add(&c).unwrap_err().to_string(), elementwise);
    assert_eq!(c.add(&g).unwrap_err().to_string(), elementwise);
    assert_eq!(c.mul(&g).unwrap_err().to_string(), elementwise);
    assert_eq!(g.lt(&c).unwrap_err().to_string(), elementwise);
    // ... except a CPU 0-dim tensor, which joins as a scalar.
    let two = DynTensor::full(SCALAR, 2.0, DType::F32, CPU).unwrap();
    assert_eq!(g.mul(&two).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 6]);
    assert_eq!(two.sub(&g).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 6]);
    // `where` checks like element-wise ops, without the scalar exemption.
    let cond = g.gt(&two).unwrap();
    assert_eq!(
        cond.where_cond(&g, &c).unwrap_err().to_string(),
        elementwise
    );
    assert_eq!(
        cond.to(CPU)
            .unwrap()
            .where_cond(&g, &g)
            .unwrap_err()
            .to_string(),
        elementwise
    );
    // Argument-checked ops name the argument and PyTorch's method.
    let w = DynTensor::ones([4, 3], GPU).unwrap();
    let b = DynTensor::ones([4], GPU).unwrap();
    assert_eq!(
        c.linear(&w, Some(&b)).unwrap_err().to_string(),
        argument("mat1", "wrapper_CUDA_addmm")
    );
    assert_eq!(
        g.matmul(&c.transpose(0, 1).unwrap())
            .unwrap_err()
            .to_string(),
        argument("mat2", "wrapper_CUDA_mm")
    );
    let idx = DynTensor::from_vec(vec![0i64, 1], [2], CPU).unwrap();
    assert_eq!(
        g.index_select(0, &idx).unwrap_err().to_string(),
        argument("index", "wrapper_CUDA__index_select")
    );
    let targets = DynTensor::from_vec(vec![0i64, 2], [2], GPU).unwrap();
    let weight = DynTensor::ones([3], CPU).unwrap();
    assert_eq!(
        g.cross_entropy_with(&targets, Some(&weight), Reduction::Mean, -100)
            .unwrap_err()
            .to_string(),
        argument("weight", "wrapper_CUDA_nll_loss_forward")
    );
    // The checks run before anything is queued: the same ops on one device work.
    assert_eq!(g.add(&g).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 6]);
    assert_eq!(
        g.linear(&w, Some(&b)).unwrap().to_vec::<f32>().unwrap(),
        vec![4.0; 8]
    );
    let loss = g
        .cross_entropy_with(
            &targets,
            Some(&weight.to(GPU).unwrap()),
            Reduction::Mean,
            -100,
        )
        .unwrap();
    assert!((loss.item::<f32>().unwrap() - 3f32.ln()).abs() < 1e-6);
    // Typed views of dynamic tensors check the device too.
    assert!(g.clone().try_into_typed::<Cpu>().is_err());
    assert!(g.clone().try_into_typed::<Cuda<0>>().is_ok());
}

#[test]
fn device_mismatch_between_two_gpus() {
    let Some(_gpu) = common::gpu() else { return };
    let Some(_second) = common::second_gpu() else {
        return;
    };
    let a = DynTensor::ones([2], GPU).unwrap();
    let b = DynTensor::ones([2], DynDevice::cuda(1)).unwrap();
    let text = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!";
    assert_eq!(a.add(&b).unwrap_err().to_string(), text);
    assert_eq!(
        a.add(&b.to(GPU).unwrap()).unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 2.0]
    );
}

#[test]
fn event_timer_measures_gpu_time() {
    let Some(gpu) = common::gpu() else { return };
    let x = Tensor::<Cuda<0>>::randn([1024, 1024], gpu);
    let mut timer = devtype::cuda::Timer::start(0).unwrap();
    let mut y = x.clone();
    for _ in 0..10 {
        y = y.matmul(&x).tanh();
    }
    let first = timer.elapsed_ms().unwrap();
    assert!(first > 0.0, "{first}");
    // Reading again measures up to the new end event.
    assert!(timer.elapsed_ms().unwrap() >= first);
    timer.restart().unwrap();
    assert!(timer.elapsed_ms().unwrap() >= 0.0);
    drop(y);
    gpu.synchronize().unwrap();
}

/// The CUDA libraries this process really loaded (read from `/proc/self/maps` after a kernel
/// and a matrix product), written to `$DEVTYPE_LOADED_LIBS_FILE` for `scripts/gpu-check.sh`'s
/// summary. libcublas loads libcublasLt itself; both must come from one folder, or a cuBLAS of
/// one version runs on a cuBLASLt of another.
#[test]
fn cublas_and_cublaslt_come_from_one_folder() {
    let Some(gpu) = common::gpu() else { return };
    let a = Tensor::<Cuda<0>>::ones([4, 4], gpu);
    assert_eq!(a.matmul(&a).to_vec(), vec![4.0; 16]);
    assert_eq!((a + 1.0f32).sum_all().item(), 32.0);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let libs = ["libcuda", "libnvrtc", "libcublas", "libcublasLt"];
    let mut found = std::collections::BTreeMap::new();
    for line in maps.lines() {
        let Some(at) = line.find('/') else { continue };
        let path = line[at..].trim();
        let file = path.rsplit('/').next().unwrap_or(path);
        for lib in libs {
            let so = format!("{lib}.so");
            if file == so || file.starts_with(&format!("{so}.")) {
                found.entry(lib).or_insert_with(|| path.to_string());
            }
        }
    }
    let report: String = libs
        .iter()
        .map(|l| format!("  {l:<12} {}\n", found.get(l).map_or("(not loaded)", |p| p)))
        .collect();
    print!("{report}");
    if let Some(file) = std::env::var_os("DEVTYPE_LOADED_LIBS_FILE") {
        let _ = std::fs::write(file, &report);
    }
    let folder = |p: &String| std::path::Path::new(p).parent().map(|d| d.to_path_buf());
    match (found.get("libcublas"), found.get("libcublasLt")) {
        (Some(b), Some(lt)) => assert_eq!(
            folder(b),
            folder(lt),
            "libcublas and libcublasLt come from two folders: {b} and {lt}"
        ),
        _ => panic!("a matrix product ran but cuBLAS is not among the loaded files:\n{report}"),
    }
}
