//! Sizes, allocation, graph depth and scalar exactness: adversarial but legal inputs that
//! must end in `Ok` with the right values or in an `Err` with a clear text, never in a
//! segfault, an abort or a silently wrong result.
//!
//! Before these were fixed, the size cases segfaulted in `gemm` or panicked with "capacity
//! overflow", the allocation cases aborted the process with "memory allocation of N bytes
//! failed", the deep graph overflowed the stack on drop, and the integer scalars went through
//! `f64`.

use devtype::nn::Linear;
use devtype::prelude::*;
use devtype::Error;

const HUGE: usize = 1 << 40;
/// `HUGE` as `expand` takes sizes.
const H: isize = HUGE as isize;

fn overflow_text(sizes: &[usize]) -> String {
    format!("Storage size calculation overflowed with sizes={sizes:?}")
}

fn cpu_oom_text(bytes: u64) -> String {
    format!("DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)")
}

#[test]
fn typed_from_vec_refuses_a_shape_whose_element_count_wraps() {
    // 2^33 * 2^32 wraps to 0 in 64 bits, which an empty Vec "fills".
    let err = Tensor::<Cpu>::try_from_vec(vec![], [1 << 33, 1 << 32], Cpu).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&[1 << 33, 1 << 32]));
    let err =
        DynTensor::from_vec(Vec::<f32>::new(), [1 << 33, 1 << 32], DynDevice::cpu()).unwrap_err();
    assert!(matches!(err, Error::SizeOverflow { .. }), "{err}");
}

#[test]
fn empty_shapes_whose_strides_overflow_are_refused() {
    let shape = [0, 1 << 63, 4];
    let err = Tensor::<Cpu>::try_zeros(shape, Cpu).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&shape));
    assert!(DynTensor::zeros(shape, DynDevice::cpu()).is_err());
    // An empty tensor with sizes that fit is fine.
    assert_eq!(
        Tensor::<Cpu>::try_zeros([0, 1 << 20, 4], Cpu)
            .unwrap()
            .numel(),
        0
    );
}

#[test]
fn expand_beyond_the_address_space_is_an_error() {
    let one = Tensor::<Cpu>::ones([1, 1], Cpu);
    let err = one.try_expand(&[H, H]).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&[HUGE, HUGE]));
    // A large but representable expansion is a view: no memory is touched.
    let big = one.try_expand(&[H, 4]).unwrap();
    assert_eq!(big.shape(), &[HUGE, 4]);
    assert_eq!(big.strides(), &[0, 0]);
}

#[test]
fn broadcasting_two_huge_views_is_an_error() {
    let one = Tensor::<Cpu>::ones([1, 1], Cpu);
    let (a, b) = (one.expand(&[H, 1]), one.expand(&[1, H]));
    let err = a.try_add(&b).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&[HUGE, HUGE]));
    let dyn_err = a.to_dyn().add(&b.to_dyn()).unwrap_err();
    assert_eq!(dyn_err, err);
}

#[test]
fn matmul_and_linear_results_too_large_to_exist_are_errors() {
    let one = Tensor::<Cpu>::ones([1, 1], Cpu);
    let (a, b) = (one.expand(&[H, 1]), one.expand(&[1, H]));
    let err = a.try_matmul(&b).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&[HUGE, HUGE]));
    // Batched: the broadcast batch alone overflows.
    let x = Tensor::<Cpu>::ones([1, 1, 2, 2], Cpu);
    let (p, q) = (x.expand(&[H, 1, 2, 2]), x.expand(&[1, H, 2, 2]));
    assert!(matches!(
        p.try_matmul(&q).unwrap_err(),
        Error::SizeOverflow { .. }
    ));
    // linear: [2^40, 1] rows times 2^40 outputs.
    let w = one.expand(&[H, 1]);
    let err = a.try_linear(&w, None).unwrap_err();
    assert_eq!(err.to_string(), overflow_text(&[HUGE, HUGE]));
}

#[test]
fn cat_along_a_dimension_that_overflows_is_an_error() {
    let x = Tensor::<Cpu>::ones([1, 1], Cpu).expand(&[1 << 59, 1]);
    let err = Tensor::try_cat((&x, &x, &x), 0).unwrap_err();
    assert!(matches!(err, Error::SizeOverflow { .. }), "{err}");
    let max = Tensor::<Cpu>::ones([1], Cpu).expand(&[isize::MAX >> 3]);
    let err = Tensor::try_cat((&max, &max), 0).unwrap_err();
    assert!(matches!(err, Error::SizeOverflow { .. }), "{err}");
    let dyn_err = DynTensor::cat(&[&x.to_dyn(), &x.to_dyn(), &x.to_dyn()], 0).unwrap_err();
    assert!(matches!(dyn_err, Error::SizeOverflow { .. }), "{dyn_err}");
}

#[test]
fn allocations_the_host_cannot_make_are_errors_not_aborts() {
    // 2^59 f32 elements: the shape fits, the 2 EiB of memory do not.
    let shape = [1usize << 30, 1 << 29];
    let err = DynTensor::zeros(shape, DynDevice::cpu()).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 61));
    let err = Tensor::<Cpu>::try_ones(shape, Cpu).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 61));
    let err = Tensor::<Cpu, i64>::try_full(shape, 7, Cpu).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 62));
    assert!(Tensor::<Cpu>::try_randn(shape, Cpu).is_err());
}

/// A `bf16` product whose result is one element but whose inner size is 2^46: the scratch
/// of the native `bf16` kernel (AVX512-BF16 CPUs) or the `f32` copies of the widening path
/// (others) cannot exist (more bytes than the address space), and either way the product is
/// an error, not an abort of the process.
#[test]
fn products_whose_scratch_the_host_cannot_hold_are_errors() {
    let k: isize = 1 << 46;
    let one = Tensor::<Cpu, bf16>::ones([1, 1], Cpu);
    let (a, b) = (one.expand(&[1, k]), one.expand(&[k, 1]));
    let err = a.try_matmul(&b).unwrap_err();
    assert!(matches!(err, Error::CpuOutOfMemory { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate "),
        "{err}"
    );
    let dyn_err = a.to_dyn().matmul(&b.to_dyn()).unwrap_err();
    assert_eq!(dyn_err, err);
}

#[test]
fn op_results_too_large_for_the_host_are_errors() {
    // `x.unsqueeze(1) - x` on 2^20 elements: a 2^40-element (4 TiB) result.
    let x = Tensor::<Cpu>::zeros([1 << 20], Cpu);
    let err = x.unsqueeze(1).try_sub(&x).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 42));
    let dx = x.to_dyn();
    let err = dx.unsqueeze(1).unwrap().sub(&dx).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 42));
    // A contiguous copy, a cast and a comparison of a huge expanded view.
    let view = Tensor::<Cpu>::ones([1, 1], Cpu).expand(&[H, 4]);
    assert_eq!(
        view.try_contiguous().unwrap_err().to_string(),
        cpu_oom_text(1 << 44)
    );
    assert_eq!(
        view.try_to_dtype::<f64>().unwrap_err().to_string(),
        cpu_oom_text(1 << 45)
    );
    assert!(view.try_gt_scalar(0.5).is_err());
    assert!(view.try_to_vec().is_err());
    assert!(view.try_relu().is_err());
}

#[test]
fn a_layer_too_large_for_the_host_is_an_error() {
    let err = Linear::<Cpu>::try_new(1 << 20, 1 << 20, Cpu).unwrap_err();
    assert_eq!(err.to_string(), cpu_oom_text(1 << 42));
}

#[test]
fn the_infallible_twin_panics_with_the_text_it_does_not_abort() {
    let caught = std::panic::catch_unwind(|| Tensor::<Cpu>::zeros([1 << 30, 1 << 29], Cpu));
    let payload = caught.unwrap_err();
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert_eq!(text, cpu_oom_text(1 << 61));
}

#[test]
fn printing_a_huge_view_reads_only_what_it_shows() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], [2, 1], Cpu).expand(&[2, H]);
    assert_eq!(
        x.to_string(),
        "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n        [2., 2., 2.,  ..., 2., 2., 2.]])"
    );
    // Summarised along every long dimension, as PyTorch's get_summarized_data.
    let r = Tensor::<Cpu>::arange(10, Cpu)
        .reshape(&[10, 1])
        .expand(&[10, 1000])
        .contiguous();
    let text = r.to_string();
    assert!(
        text.starts_with("tensor([[0., 0., 0.,  ..., 0., 0., 0.],"),
        "{text}"
    );
    assert!(text.contains("        ...,\n"), "{text}");
    assert!(text.ends_with("[9., 9., 9.,  ..., 9., 9., 9.]])"), "{text}");
}

#[test]
fn a_graph_of_200_000_nodes_drops_and_runs_backward() {
    // Deep enough that any recursion over the nodes (drop, backward; a frame is far more than
    // the 11 bytes a node could have) would overflow a test thread's 2 MiB stack, at a fifth
    // of the time a million nodes took (100 s in a debug build, the suite's longest test).
    const N: usize = 200_000;
    let p = Tensor::parameter(Tensor::from_vec(vec![1.0f32], [], Cpu));
    let mut total = Tensor::<Cpu>::zeros([], Cpu);
    for _ in 0..N {
        total = &total + &p; // the classic `total = total + loss`
    }
    assert_eq!(total.item(), N as f32);
    total.backward();
    assert_eq!(p.grad().unwrap().item(), N as f32);
    drop(total); // N nodes, dropped without recursion

    // An untraversed deep graph (never backpropagated) drops too, on the dynamic front.
    let q = DynTensor::parameter(DynTensor::ones([], DynDevice::cpu()).unwrap()).unwrap();
    let mut acc = q.clone();
    for _ in 0..N {
        acc = acc.mul_scalar(1.0).unwrap();
    }
    drop(acc);
}

#[test]
fn integer_tensors_with_integer_scalars_are_exact() {
    let big = 9_007_199_254_740_993i64; // 2^53 + 1: not an f64
    let x = Tensor::from_vec(vec![0i64, 1], [2], Cpu);
    assert_eq!((&x + big).to_vec(), [big, big + 1]);
    assert_eq!((big - &x).to_vec(), [big, big - 1]);
    assert_eq!(x.try_add_scalar(big).unwrap().to_vec(), [big, big + 1]);
    let m = Tensor::from_vec(vec![i64::MAX - 1, i64::MAX], [2], Cpu);
    assert_eq!(m.eq_scalar(i64::MAX).to_vec(), [false, true]);
    assert_eq!(m.lt_scalar(i64::MAX).to_vec(), [true, false]);
    assert_eq!(
        Tensor::<Cpu, i64>::full([2], i64::MAX, Cpu).to_vec(),
        [i64::MAX; 2]
    );

    let d = DynTensor::from_vec(vec![0i64, 1], [2], DynDevice::cpu()).unwrap();
    assert_eq!(
        d.add_scalar(big).unwrap().to_vec::<i64>().unwrap(),
        [big, big + 1]
    );
    let full = DynTensor::full([1], i64::MIN + 1, DType::I64, DynDevice::cpu()).unwrap();
    assert_eq!(full.to_vec::<i64>().unwrap(), [i64::MIN + 1]);
    // A CPU 0-dim integer joins as an exact scalar too.
    let s = DynTensor::from_vec(vec![big], [], DynDevice::cpu()).unwrap();
    assert_eq!(d.add(&s).unwrap().to_vec::<i64>().unwrap(), [big, big + 1]);
}

#[test]
fn float_tensors_compare_with_the_scalar_in_their_own_precision() {
    // PyTorch casts a wrapped scalar to the tensor's dtype: 0.1f32 == 0.1.
    let x = Tensor::from_vec(vec![0.1f32, 0.2], [2], Cpu);
    assert_eq!(x.eq_scalar(0.1).to_vec(), [true, false]);
}
