//! Device-mismatch texts through the real dispatch path, with tensors that claim to be on a GPU
//! (test-only: the check runs before any kernel, so their storage is never touched).
//!
//! A tensor built on the CPU is relabelled `cuda:0` / `cuda:1` by [`on`]. Every op family of
//! `DynTensor` is called with such tensors and its error is compared with PyTorch's text
//! character for character (`docs/pytorch-reference.md` §1). Sizes stay tiny so Miri runs all of it.

use super::check::same_device_elementwise;
use super::DynTensor;
use crate::core::error::Error;
use crate::core::raw::RawTensor;
use crate::device::DynDevice;
use crate::nn::{DynCrossEntropyLoss, DynLinear, Reduction};
use crate::tensor::DType;

const CPU: DynDevice = DynDevice::cpu();
const CUDA0: DynDevice = DynDevice::cuda(0);
const CUDA1: DynDevice = DynDevice::cuda(1);

/// The same storage and layout, claiming to live on `dev`.
fn on(t: &DynTensor, dev: DynDevice) -> DynTensor {
    DynTensor::from_raw(RawTensor {
        storage: t.raw.storage.clone(),
        layout: t.raw.layout,
        dtype: t.raw.dtype,
        device: dev,
    })
}

/// A small f32 tensor of `shape` with distinct values `0.5, 1.5, ...`, on `dev`.
fn f32_on(shape: &[usize], dev: DynDevice) -> DynTensor {
    let n: usize = shape.iter().product();
    let t = DynTensor::from_vec(
        (0..n).map(|i| i as f32 + 0.5).collect::<Vec<_>>(),
        shape,
        CPU,
    )
    .unwrap();
    on(&t, dev)
}

fn i64_on(values: &[i64], shape: &[usize], dev: DynDevice) -> DynTensor {
    on(
        &DynTensor::from_vec(values.to_vec(), shape, CPU).unwrap(),
        dev,
    )
}

fn bool_on(shape: &[usize], dev: DynDevice) -> DynTensor {
    let n: usize = shape.iter().product();
    on(
        &DynTensor::from_vec((0..n).map(|i| i % 2 == 0).collect::<Vec<_>>(), shape, CPU).unwrap(),
        dev,
    )
}

/// PyTorch's TensorIterator text.
fn iter_text(first: &str, second: &str) -> String {
    format!("Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!")
}

/// PyTorch's codegen argument-check text (2.8 and later, as in 2.15).
fn arg_text(common: &str, found: &str, argument: &str, method: &str) -> String {
    format!(
        "Expected all tensors to be on the same device, but got {argument} is on {found}, different from other tensors on {common} (when checking argument in method {method})"
    )
}

#[track_caller]
fn assert_err<T>(result: crate::Result<T>, expected: &str) {
    match result {
        Ok(_) => panic!("expected the error `{expected}`, got a result"),
        Err(e) => {
            assert!(e.is_device_mismatch(), "not a device error: {e}");
            assert_eq!(e.to_string(), expected);
        }
    }
}

/// The op did not fail for its devices (it may still fail for other reasons, never these).
#[track_caller]
fn assert_no_device_error<T>(result: crate::Result<T>) {
    if let Err(e) = result {
        assert!(!e.is_device_mismatch(), "unexpected device error: {e}");
    }
}

type BinaryMethod = fn(&DynTensor, &DynTensor) -> crate::Result<DynTensor>;

fn binary_methods() -> Vec<(&'static str, BinaryMethod)> {
    vec![
        ("add", DynTensor::add as BinaryMethod),
        ("sub", DynTensor::sub),
        ("mul", DynTensor::mul),
        ("div", DynTensor::div),
        ("maximum", DynTensor::maximum),
        ("minimum", DynTensor::minimum),
        ("pow", DynTensor::pow),
    ]
}

fn compare_methods() -> Vec<(&'static str, BinaryMethod)> {
    vec![
        ("eq", DynTensor::eq as BinaryMethod),
        ("ne", DynTensor::ne),
        ("lt", DynTensor::lt),
        ("le", DynTensor::le),
        ("gt", DynTensor::gt),
        ("ge", DynTensor::ge),
    ]
}

#[test]
fn elementwise_names_the_first_non_cpu_device_first_in_either_order() {
    let gpu = f32_on(&[2, 3], CUDA0);
    let host = f32_on(&[2, 3], CPU);
    for (name, op) in binary_methods().into_iter().chain(compare_methods()) {
        let expected = iter_text("cuda:0", "cpu");
        assert_eq!(
            op(&gpu, &host).unwrap_err().to_string(),
            expected,
            "{name}(cuda, cpu)"
        );
        assert_eq!(
            op(&host, &gpu).unwrap_err().to_string(),
            expected,
            "{name}(cpu, cuda)"
        );
    }
}

#[test]
fn elementwise_orders_two_gpus_by_argument() {
    let g0 = f32_on(&[3], CUDA0);
    let g1 = f32_on(&[3], CUDA1);
    for (name, op) in binary_methods().into_iter().chain(compare_methods()) {
        assert_eq!(
            op(&g0, &g1).unwrap_err().to_string(),
            iter_text("cuda:0", "cuda:1"),
            "{name}"
        );
        assert_eq!(
            op(&g1, &g0).unwrap_err().to_string(),
            iter_text("cuda:1", "cuda:0"),
            "{name}"
        );
    }
    // A 0-dim tensor on another GPU is not a CPU scalar: no exemption.
    let s1 = on(&DynTensor::full([], 2.0, DType::F32, CPU).unwrap(), CUDA1);
    assert_err(g0.add(&s1), &iter_text("cuda:0", "cuda:1"));
    assert_err(s1.add(&g0), &iter_text("cuda:1", "cuda:0"));
}

#[test]
fn one_cpu_scalar_may_join_a_gpu_binary_op_on_either_side() {
    let gpu = f32_on(&[2, 3], CUDA0);
    let scalar = DynTensor::full([], 2.0, DType::F32, CPU).unwrap();
    assert_eq!(scalar.dim(), 0);
    for (name, op) in binary_methods().into_iter().chain(compare_methods()) {
        let r = op(&gpu, &scalar);
        assert!(
            r.as_ref().not_a_device_error(),
            "{name}(cuda, cpu scalar): {:?}",
            r.err()
        );
        let r = op(&scalar, &gpu);
        assert!(
            r.as_ref().not_a_device_error(),
            "{name}(cpu scalar, cuda): {:?}",
            r.err()
        );
    }
    // A GPU 0-dim tensor with a CPU 0-dim tensor: the CPU one is the scalar.
    let gpu_scalar = on(&scalar, CUDA0);
    assert_no_device_error(gpu_scalar.add(&scalar));
    assert_no_device_error(scalar.mul(&gpu_scalar));
}

/// `Result::is_ok` that also accepts errors other than device errors.
trait OkOrNotDevice {
    fn not_a_device_error(self) -> bool;
}
impl OkOrNotDevice for Result<&DynTensor, &Error> {
    fn not_a_device_error(self) -> bool {
        match self {
            Ok(_) => true,
            Err(e) => !e.is_device_mismatch(),
        }
    }
}

#[test]
fn cpu_scalar_exemption_gives_the_right_values() {
    // With the exemption the scalar's value is passed to the kernel; check it is used on the
    // right side (our fake GPU tensor's storage is on the host, so the kernel can run).
    let gpu = f32_on(&[3], CUDA0); // 0.5, 1.5, 2.5
    let scalar = DynTensor::full([], 2.0, DType::F32, CPU).unwrap();
    let host = |t: DynTensor| t.to_vec::<f32>().unwrap();
    assert_eq!(host(gpu.sub(&scalar).unwrap()), vec![-1.5, -0.5, 0.5]);
    assert_eq!(host(scalar.sub(&gpu).unwrap()), vec![1.5, 0.5, -0.5]);
    assert_eq!(host(scalar.div(&gpu).unwrap()), vec![4.0, 2.0 / 1.5, 0.8]);
    assert_eq!(host(gpu.div(&scalar).unwrap()), vec![0.25, 0.75, 1.25]);
    let as_bool = |t: DynTensor| t.to_vec::<bool>().unwrap();
    assert_eq!(as_bool(gpu.lt(&scalar).unwrap()), vec![true, true, false]);
    assert_eq!(as_bool(scalar.lt(&gpu).unwrap()), vec![false, false, true]);
    assert_eq!(as_bool(scalar.ge(&gpu).unwrap()), vec![true, true, false]);
    assert_eq!(as_bool(scalar.eq(&on(&scalar, CUDA0)).unwrap()), vec![true]);
}

#[test]
fn a_one_element_cpu_vector_is_not_a_scalar() {
    let gpu = f32_on(&[2, 3], CUDA0);
    let one = f32_on(&[1], CPU);
    for (name, op) in binary_methods().into_iter().chain(compare_methods()) {
        assert_eq!(
            op(&gpu, &one).unwrap_err().to_string(),
            iter_text("cuda:0", "cpu"),
            "{name}"
        );
        assert_eq!(
            op(&one, &gpu).unwrap_err().to_string(),
            iter_text("cuda:0", "cpu"),
            "{name}"
        );
    }
    let one_by_one = f32_on(&[1, 1], CPU);
    assert_err(gpu.add(&one_by_one), &iter_text("cuda:0", "cpu"));
}

#[test]
fn two_cpu_scalars_are_too_many_for_a_gpu_kernel() {
    // No binary method can take two CPU scalars and a GPU tensor at once, so the rule is
    // exercised on the check itself, as a three-input op with the exemption would call it.
    let gpu = f32_on(&[2], CUDA0).raw;
    let s1 = DynTensor::full([], 1.0, DType::F32, CPU).unwrap().raw;
    let s2 = DynTensor::full([], 2.0, DType::F32, CPU).unwrap().raw;
    let err = same_device_elementwise(&[&gpu, &s1, &s2], true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Trying to pass too many CPU scalars to non-CPU kernel!"
    );
    assert!(err.is_device_mismatch());
    let err = same_device_elementwise(&[&s1, &s2, &gpu], true).unwrap_err();
    assert_eq!(err, Error::TooManyCpuScalars);
    assert_eq!(same_device_elementwise(&[&gpu, &s1], true).unwrap(), CUDA0);
    assert_eq!(same_device_elementwise(&[&s1, &gpu], true).unwrap(), CUDA0);
    assert_eq!(same_device_elementwise(&[&s1, &s2], true).unwrap(), CPU);
    // Without the exemption a CPU scalar is an ordinary CPU tensor.
    assert_eq!(
        same_device_elementwise(&[&s1, &gpu], false)
            .unwrap_err()
            .to_string(),
        iter_text("cuda:0", "cpu")
    );
}

#[test]
fn operators_panic_with_the_same_text() {
    let gpu = f32_on(&[2], CUDA0);
    let host = f32_on(&[2], CPU);
    let text = |f: &dyn Fn() -> DynTensor| -> String {
        let payload =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("should panic");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    };
    let expected = iter_text("cuda:0", "cpu");
    assert_eq!(text(&|| &host + &gpu), expected);
    assert_eq!(text(&|| &gpu - &host), expected);
    assert_eq!(text(&|| host.clone() * gpu.clone()), expected);
    assert_eq!(text(&|| gpu.clone() / &host), expected);
}

#[test]
fn where_has_no_cpu_scalar_exemption() {
    let cond = bool_on(&[2, 3], CUDA0);
    let a = f32_on(&[2, 3], CUDA0);
    let b = f32_on(&[2, 3], CUDA0);
    assert_no_device_error(cond.where_cond(&a, &b));
    let host_cond = bool_on(&[2, 3], CPU);
    assert_err(host_cond.where_cond(&a, &b), &iter_text("cuda:0", "cpu"));
    let host_b = f32_on(&[2, 3], CPU);
    assert_err(cond.where_cond(&a, &host_b), &iter_text("cuda:0", "cpu"));
    assert_err(
        host_cond.where_cond(&f32_on(&[2, 3], CPU), &b),
        &iter_text("cuda:0", "cpu"),
    );
    let scalar = DynTensor::full([], 0.0, DType::F32, CPU).unwrap();
    assert_err(cond.where_cond(&a, &scalar), &iter_text("cuda:0", "cpu"));
    assert_err(cond.where_cond(&scalar, &b), &iter_text("cuda:0", "cpu"));
    let b1 = f32_on(&[2, 3], CUDA1);
    assert_err(cond.where_cond(&a, &b1), &iter_text("cuda:0", "cuda:1"));
    assert_err(
        on(&cond, CUDA1).where_cond(&a, &b),
        &iter_text("cuda:1", "cuda:0"),
    );
}

#[test]
fn matmul_names_mat2_in_mm_and_bmm() {
    let a = f32_on(&[2, 3], CUDA0);
    let b = f32_on(&[3, 2], CPU);
    assert_err(
        a.matmul(&b),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
    // The first argument's device comes first, whichever it is.
    assert_err(
        on(&a, CPU).matmul(&on(&b, CUDA0)),
        &arg_text("cpu", "cuda:0", "mat2", "wrapper_CUDA_mm"),
    );
    assert_err(
        a.matmul(&on(&b, CUDA1)),
        &arg_text("cuda:0", "cuda:1", "mat2", "wrapper_CUDA_mm"),
    );
    // Batched products go through bmm.
    let a3 = f32_on(&[2, 2, 3], CUDA0);
    let b3 = f32_on(&[2, 3, 2], CPU);
    assert_err(
        a3.matmul(&b3),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_bmm"),
    );
    assert_err(
        on(&a3, CPU).matmul(&on(&b3, CUDA1)),
        &arg_text("cpu", "cuda:1", "mat2", "wrapper_CUDA_bmm"),
    );
    // No CPU-scalar exemption in the argument check.
    let scalar = DynTensor::full([], 2.0, DType::F32, CPU).unwrap();
    assert_err(
        a.matmul(&scalar),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
}

#[test]
fn the_device_check_comes_before_shape_and_dtype_checks() {
    // 4x10 @ 20x2 cannot be multiplied, but PyTorch reports the devices first.
    let a = f32_on(&[4, 10], CUDA0);
    let b = f32_on(&[20, 2], CPU);
    assert_err(
        a.matmul(&b),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
    assert_err(a.add(&b), &iter_text("cuda:0", "cpu"));
    let b64 = on(
        &DynTensor::full([20, 2], 1.0, DType::F64, CPU).unwrap(),
        CPU,
    );
    assert_err(
        a.matmul(&b64),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
    assert_err(b64.add(&a), &iter_text("cuda:0", "cpu"));
    let weight = f32_on(&[2, 20], CPU);
    assert_err(
        a.linear(&weight, None),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
    let idx = i64_on(&[7], &[1], CPU);
    assert_err(
        a.index_select(0, &idx),
        &arg_text("cuda:0", "cpu", "index", "wrapper_CUDA__index_select"),
    );
}

#[test]
fn linear_with_bias_checks_as_addmm_bias_first_then_mat1() {
    let w_gpu = f32_on(&[2, 3], CUDA0);
    let b_gpu = f32_on(&[2], CUDA0);
    let x_host = f32_on(&[4, 3], CPU);
    // Model on the GPU, batch on the CPU.
    assert_err(
        x_host.linear(&w_gpu, Some(&b_gpu)),
        &arg_text("cuda:0", "cpu", "mat1", "wrapper_CUDA_addmm"),
    );
    // Model on the CPU, batch on the GPU.
    let x_gpu = on(&x_host, CUDA0);
    let (w_host, b_host) = (on(&w_gpu, CPU), on(&b_gpu, CPU));
    assert_err(
        x_gpu.linear(&w_host, Some(&b_host)),
        &arg_text("cpu", "cuda:0", "mat1", "wrapper_CUDA_addmm"),
    );
    // Only the weight left behind.
    assert_err(
        x_gpu.linear(&w_host, Some(&b_gpu)),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_addmm"),
    );
    // Only the bias left behind: the bias is `self`, the common device.
    assert_err(
        x_gpu.linear(&w_gpu, Some(&b_host)),
        &arg_text("cpu", "cuda:0", "mat1", "wrapper_CUDA_addmm"),
    );
    // Two GPUs.
    assert_err(
        on(&x_host, CUDA1).linear(&w_gpu, Some(&b_gpu)),
        &arg_text("cuda:0", "cuda:1", "mat1", "wrapper_CUDA_addmm"),
    );
    assert_no_device_error(x_gpu.linear(&w_gpu, Some(&b_gpu)));
}

#[test]
fn linear_without_bias_checks_as_mm() {
    let w_gpu = f32_on(&[2, 3], CUDA0);
    let x_host = f32_on(&[4, 3], CPU);
    assert_err(
        x_host.linear(&w_gpu, None),
        &arg_text("cpu", "cuda:0", "mat2", "wrapper_CUDA_mm"),
    );
    assert_err(
        on(&x_host, CUDA0).linear(&on(&w_gpu, CPU), None),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_mm"),
    );
}

#[test]
fn cat_and_stack_name_tensors() {
    let g = f32_on(&[2, 3], CUDA0);
    let h = f32_on(&[2, 3], CPU);
    let g1 = f32_on(&[2, 3], CUDA1);
    for (name, op) in [
        (
            "cat",
            DynTensor::cat as fn(&[&DynTensor], isize) -> crate::Result<DynTensor>,
        ),
        ("stack", DynTensor::stack),
    ] {
        let e = |list: &[&DynTensor]| op(list, 0).unwrap_err().to_string();
        assert_eq!(
            e(&[&g, &h]),
            arg_text("cuda:0", "cpu", "tensors", "wrapper_CUDA_cat"),
            "{name}"
        );
        assert_eq!(
            e(&[&h, &g]),
            arg_text("cpu", "cuda:0", "tensors", "wrapper_CUDA_cat"),
            "{name}"
        );
        assert_eq!(
            e(&[&g, &g, &h]),
            arg_text("cuda:0", "cpu", "tensors", "wrapper_CUDA_cat"),
            "{name}"
        );
        assert_eq!(
            e(&[&g, &g1]),
            arg_text("cuda:0", "cuda:1", "tensors", "wrapper_CUDA_cat"),
            "{name}"
        );
        assert_no_device_error(op(&[&g, &g], 0));
    }
}

#[test]
fn index_select_and_gather_name_index() {
    let x = f32_on(&[3, 2], CUDA0);
    let idx = i64_on(&[0, 2], &[2], CPU);
    assert_err(
        x.index_select(0, &idx),
        &arg_text("cuda:0", "cpu", "index", "wrapper_CUDA__index_select"),
    );
    assert_err(
        on(&x, CPU).index_select(0, &on(&idx, CUDA0)),
        &arg_text("cpu", "cuda:0", "index", "wrapper_CUDA__index_select"),
    );
    let gidx = i64_on(&[0, 1, 1, 0, 0, 0], &[3, 2], CPU);
    assert_err(
        x.gather(1, &gidx),
        &arg_text("cuda:0", "cpu", "index", "wrapper_CUDA_gather"),
    );
    assert_err(
        x.gather(1, &on(&gidx, CUDA1)),
        &arg_text("cuda:0", "cuda:1", "index", "wrapper_CUDA_gather"),
    );
    assert_no_device_error(x.gather(1, &on(&gidx, CUDA0)));
    assert_no_device_error(x.index_select(0, &on(&idx, CUDA0)));
}

#[test]
fn cross_entropy_names_target_and_weight() {
    let logits = f32_on(&[2, 3], CUDA0);
    let targets = i64_on(&[0, 2], &[2], CUDA0);
    let weight_host = f32_on(&[3], CPU);
    assert_err(
        logits.cross_entropy_with(&targets, Some(&weight_host), Reduction::Mean, -100),
        &arg_text("cuda:0", "cpu", "weight", "wrapper_CUDA_nll_loss_forward"),
    );
    assert_err(
        logits.cross_entropy_with(&on(&targets, CPU), None, Reduction::Sum, -100),
        &arg_text("cuda:0", "cpu", "target", "wrapper_CUDA_nll_loss_forward"),
    );
    assert_err(
        on(&logits, CPU).cross_entropy_with(
            &on(&targets, CPU),
            Some(&on(&weight_host, CUDA0)),
            Reduction::None,
            -100,
        ),
        &arg_text("cpu", "cuda:0", "weight", "wrapper_CUDA_nll_loss_forward"),
    );
    assert_no_device_error(logits.cross_entropy_with(
        &targets,
        Some(&on(&weight_host, CUDA0)),
        Reduction::Mean,
        -100,
    ));
}

#[test]
fn dyn_modules_check_through_the_same_path() {
    let mut model = DynLinear::new(3, 2, CPU).unwrap();
    let x = f32_on(&[4, 3], CPU);
    assert_no_device_error(model.forward(&x));
    // The model "moved" to the GPU, the batch left on the CPU (PyTorch's most frequent mistake).
    model.weight = DynTensor::parameter(on(&model.weight, CUDA0)).unwrap();
    model.bias = model
        .bias
        .as_ref()
        .map(|b| DynTensor::parameter(on(b, CUDA0)).unwrap());
    assert_err(
        model.forward(&x),
        &arg_text("cuda:0", "cpu", "mat1", "wrapper_CUDA_addmm"),
    );
    assert_no_device_error(model.forward(&on(&x, CUDA0)));
    // The reverse: model on the CPU, batch on the GPU.
    let host_model = DynLinear::new(3, 2, CPU).unwrap();
    assert_err(
        host_model.forward(&on(&x, CUDA0)),
        &arg_text("cpu", "cuda:0", "mat1", "wrapper_CUDA_addmm"),
    );
    // Without bias: mm.
    let no_bias = DynLinear {
        weight: DynTensor::parameter(on(&model.weight, CUDA0)).unwrap(),
        bias: None,
    };
    assert_err(
        no_bias.forward(&x),
        &arg_text("cpu", "cuda:0", "mat2", "wrapper_CUDA_mm"),
    );

    // A loss weight left on the CPU (pytorch/pytorch#122757).
    let loss = DynCrossEntropyLoss::with_weight(f32_on(&[3], CPU));
    let logits = f32_on(&[2, 3], CUDA0);
    let targets = i64_on(&[1, 0], &[2], CUDA0);
    assert_err(
        loss.forward(&logits, &targets),
        &arg_text("cuda:0", "cpu", "weight", "wrapper_CUDA_nll_loss_forward"),
    );
    let unweighted = DynCrossEntropyLoss::default();
    assert_no_device_error(unweighted.forward(&logits, &targets));
    assert_err(
        unweighted.forward(&logits, &on(&targets, CPU)),
        &arg_text("cuda:0", "cpu", "target", "wrapper_CUDA_nll_loss_forward"),
    );
}

#[test]
// Probing for the driver dlopens it, a foreign call Miri cannot run.
#[cfg_attr(miri, ignore)]
fn module_to_a_missing_gpu_fails_cleanly_and_leaves_the_module() {
    if crate::backend::cuda::is_available() {
        return; // Moving works there; covered by the GPU suite.
    }
    let mut model = DynLinear::new(3, 2, CPU).unwrap();
    let before = model.weight.to_vec::<f32>().unwrap();
    let err = model.to(CUDA0).unwrap_err();
    assert!(
        matches!(err, Error::NoDriver | Error::InvalidDeviceOrdinal { .. }),
        "{err}"
    );
    assert_eq!(model.device(), CPU);
    assert_eq!(model.weight.to_vec::<f32>().unwrap(), before);
    let mut loss = DynCrossEntropyLoss::with_weight(f32_on(&[3], CPU));
    assert!(loss.to(CUDA0).is_err());
    assert_eq!(loss.weight.as_ref().unwrap().device(), CPU);
}

#[test]
fn display_names_the_device_as_pytorch_prints_it() {
    let t = on(
        &DynTensor::from_vec(vec![1.0f32, 2.0], [2], CPU).unwrap(),
        CUDA0,
    );
    assert_eq!(t.to_string(), "tensor([1., 2.], device='cuda:0')");
    let s = on(&DynTensor::from_vec(vec![0.5f64], [], CPU).unwrap(), CUDA1);
    assert_eq!(
        s.to_string(),
        "tensor(0.5000, device='cuda:1', dtype=torch.float64)"
    );
    let e = on(
        &DynTensor::from_vec(Vec::<i64>::new(), [0], CPU).unwrap(),
        CUDA0,
    );
    assert_eq!(
        e.to_string(),
        "tensor([], device='cuda:0', dtype=torch.int64)"
    );
    assert_eq!(format!("{t:?}"), t.to_string());
}

#[test]
fn typed_conversion_names_both_devices() {
    let t = f32_on(&[2], CUDA0);
    let err = t.clone().try_into_typed::<crate::Cpu>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot view a tensor on cuda:0 as Tensor<Cpu>, a tensor on cpu: move it first with `.to(...)`"
    );
    let err = f32_on(&[2], CPU)
        .try_into_typed::<crate::Cuda<1>>()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot view a tensor on cpu as Tensor<Cuda<1>>, a tensor on cuda:1: move it first with `.to(...)`"
    );
    assert_eq!(t.device(), CUDA0);
}

#[test]
fn single_tensor_ops_keep_the_claimed_device_out_of_the_check() {
    // Ops with one tensor have nothing to compare; they must not invent a device error.
    let t = f32_on(&[2, 3], CUDA0);
    assert_no_device_error(t.relu());
    assert_no_device_error(t.sum_dim(0));
    assert_no_device_error(t.softmax(1));
    assert_no_device_error(t.transpose(0, 1));
    assert_no_device_error(t.add_scalar(1.0));
    // Views keep the device.
    assert_eq!(t.transpose(0, 1).unwrap().device(), CUDA0);
    assert_eq!(t.reshape(&[3, 2]).unwrap().device(), CUDA0);
    assert_eq!(t.narrow(1, 1, 2).unwrap().device(), CUDA0);
    assert_eq!(t.unsqueeze(0).unwrap().device(), CUDA0);
}

// The tracked front: `DynTensor` runs the same checks before recording anything.

fn var_on(shape: &[usize], dev: DynDevice) -> DynTensor {
    DynTensor::parameter(f32_on(shape, dev)).unwrap()
}

#[test]
fn dyn_var_elementwise_ops_check_like_dyn_tensor() {
    let gpu = var_on(&[2, 3], CUDA0);
    let host = var_on(&[2, 3], CPU);
    let gpu1 = var_on(&[2, 3], CUDA1);
    type VarOp = fn(&DynTensor, &DynTensor) -> crate::Result<DynTensor>;
    let ops: [(&str, VarOp); 7] = [
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("pow", |a, b| a.pow(b)),
    ];
    for (name, op) in ops {
        let cpu_first = op(&host, &gpu).map(|_| ()).unwrap_err().to_string();
        assert_eq!(cpu_first, iter_text("cuda:0", "cpu"), "{name}(cpu, cuda)");
        let gpu_first = op(&gpu, &host).map(|_| ()).unwrap_err().to_string();
        assert_eq!(gpu_first, iter_text("cuda:0", "cpu"), "{name}(cuda, cpu)");
        assert_eq!(
            op(&gpu1, &gpu).map(|_| ()).unwrap_err().to_string(),
            iter_text("cuda:1", "cuda:0"),
            "{name}"
        );
        assert_no_device_error(op(&gpu, &gpu));
    }
    // A plain DynTensor operand is checked the same way.
    assert_err(gpu.add(&f32_on(&[2, 3], CPU)), &iter_text("cuda:0", "cpu"));
    // where: no exemption.
    let cond = bool_on(&[2, 3], CPU);
    assert_err(
        DynTensor::where_cond(&cond, &gpu, &gpu),
        &iter_text("cuda:0", "cpu"),
    );
}

/// PyTorch exempts one CPU 0-dim tensor in binary ops whether or not autograd records them
/// (`cuda_param * torch.tensor(2.)` works), so `DynTensor` must accept it as `DynTensor` does.
#[test]
fn dyn_var_binary_ops_take_one_cpu_scalar() {
    let gpu = var_on(&[2, 3], CUDA0);
    let scalar = DynTensor::full([], 2.0, DType::F32, CPU).unwrap();
    assert_no_device_error(gpu.mul(&scalar));
    assert_no_device_error(gpu.add(&scalar.clone()));
    assert_no_device_error(scalar.sub(&gpu));
}

#[test]
fn dyn_var_argument_checked_ops() {
    let x = var_on(&[4, 3], CPU);
    let w = var_on(&[2, 3], CUDA0);
    let b = var_on(&[2], CUDA0);
    assert_err(
        x.linear(&w, Some(&b)),
        &arg_text("cuda:0", "cpu", "mat1", "wrapper_CUDA_addmm"),
    );
    assert_err(
        x.linear(&w, None),
        &arg_text("cpu", "cuda:0", "mat2", "wrapper_CUDA_mm"),
    );
    let wt = var_on(&[3, 2], CUDA0);
    assert_err(
        x.matmul(&wt),
        &arg_text("cpu", "cuda:0", "mat2", "wrapper_CUDA_mm"),
    );
    assert_err(
        var_on(&[2, 2, 3], CUDA0).matmul(&f32_on(&[2, 3, 2], CPU)),
        &arg_text("cuda:0", "cpu", "mat2", "wrapper_CUDA_bmm"),
    );
    let g = var_on(&[3, 2], CUDA0);
    let idx = i64_on(&[0, 2], &[2], CPU);
    assert_err(
        g.index_select(0, &idx),
        &arg_text("cuda:0", "cpu", "index", "wrapper_CUDA__index_select"),
    );
    let gidx = i64_on(&[0, 1, 1, 0, 0, 0], &[3, 2], CPU);
    assert_err(
        g.gather(1, &gidx),
        &arg_text("cuda:0", "cpu", "index", "wrapper_CUDA_gather"),
    );
    let h = var_on(&[3, 2], CPU);
    assert_err(
        DynTensor::cat(&[&g, &h], 0),
        &arg_text("cuda:0", "cpu", "tensors", "wrapper_CUDA_cat"),
    );
    assert_err(
        DynTensor::stack(&[&h, &g], 0),
        &arg_text("cpu", "cuda:0", "tensors", "wrapper_CUDA_cat"),
    );
    let logits = var_on(&[2, 3], CUDA0);
    let targets = i64_on(&[0, 2], &[2], CUDA0);
    assert_err(
        logits.cross_entropy_with(&targets, Some(&f32_on(&[3], CPU)), Reduction::Mean, -100),
        &arg_text("cuda:0", "cpu", "weight", "wrapper_CUDA_nll_loss_forward"),
    );
    assert_err(
        logits.cross_entropy_with(&on(&targets, CPU), None, Reduction::Mean, -100),
        &arg_text("cuda:0", "cpu", "target", "wrapper_CUDA_nll_loss_forward"),
    );
    assert_no_device_error(logits.cross_entropy_with(&targets, None, Reduction::Mean, -100));
}

/// The 16-bit float kernels on tiny inputs (so Miri runs them): each family against its
/// `f32` result rounded once, on a transposed view (the widened copy keeps the layout).
mod half_kernels {
    use super::*;
    use crate::nn::Reduction;

    fn values(t: &DynTensor) -> Vec<f64> {
        t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
    }

    #[test]
    fn every_family_rounds_the_f32_result_once() {
        let base = DynTensor::from_vec(
            vec![
                0.3f32, -1.7, 2.2, 0.05, -0.6, 1.1, 3.3, -2.9, 0.71, 0.0, -0.4, 1.9,
            ],
            [3, 4],
            CPU,
        )
        .unwrap();
        let targets = DynTensor::from_vec(vec![1i64, 0, 2, 2], [4], CPU).unwrap();
        let idx = DynTensor::from_vec(vec![2i64, 0], [2], CPU).unwrap();
        type Case = (
            &'static str,
            fn(&DynTensor, &DynTensor, &DynTensor) -> crate::Result<DynTensor>,
        );
        let cases: [Case; 14] = [
            ("exp", |x, _, _| x.exp()),
            ("mul", |x, _, _| x.mul(&x.neg()?)),
            ("add_scalar", |x, _, _| x.add_scalar(0.1)),
            ("sum", |x, _, _| x.sum_dim(0)),
            ("mean_all", |x, _, _| x.mean_all()),
            ("max", |x, _, _| x.max(1).map(|r| r.values)),
            ("softmax", |x, _, _| x.softmax(1)),
            ("matmul", |x, _, _| x.matmul(&x.t()?)),
            ("linear", |x, _, _| x.linear(x, None)),
            ("cross_entropy", |x, t, _| {
                x.cross_entropy_with(t, None, Reduction::Sum, 0)
            }),
            ("index_select", |x, _, i| x.index_select(1, i)),
            ("cat", |x, _, _| DynTensor::cat(&[x, x], 0)),
            ("where", |x, _, _| {
                x.gt_scalar(0.0)?.where_cond(x, &x.neg()?)
            }),
            ("grad", |x, t, _| {
                let p = DynTensor::parameter(x.detach())?;
                p.relu()?
                    .cross_entropy_with(t, None, Reduction::Sum, 0)?
                    .backward()?;
                Ok(p.grad().expect("a gradient"))
            }),
        ];
        for half in [DType::F16, DType::BF16] {
            // A [4, 3] transposed view of half values, and the same values in f32.
            let h = base.to_dtype(half).unwrap().t().unwrap();
            let f = h.to_dtype(DType::F32).unwrap();
            for (name, op) in cases {
                let got = op(&h, &targets, &idx).unwrap();
                assert_eq!(got.dtype(), half, "{name}");
                let want = op(&f, &targets, &idx).unwrap().to_dtype(half).unwrap();
                let (g, w) = (values(&got), values(&want));
                // The grad case rounds between ops on the half side: within 2 ulps there.
                let tol = if name == "grad" { 2.0 / 128.0 } else { 0.0 };
                for (k, (a, b)) in g.iter().zip(&w).enumerate() {
                    assert!(
                        (a - b).abs() <= tol * b.abs().max(1.0),
                        "{name} {half:?}[{k}]: {a} vs {b}"
                    );
                }
            }
        }
    }
}
