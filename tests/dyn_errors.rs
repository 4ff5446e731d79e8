//! PyTorch's error texts, character for character (`docs/pytorch-reference.md` §3 and §4), through
//! the public API: shapes (matmul family, broadcasting, reshape, dims), dtypes, `.item()`,
//! device strings, and creating on a GPU that is not there.
//!
//! The device-mismatch texts need tensors on a GPU; they are unit tests in
//! `src/dyn_tensor/tests.rs` (which can build tensors that claim to be on `cuda:0`).

use devtype::nn::{CrossEntropyLoss, DynCrossEntropyLoss, DynLinear, Linear, Reduction};
use devtype::prelude::*;
use devtype::Error;

fn cpu() -> DynDevice {
    DynDevice::cpu()
}

fn ones(shape: &[usize]) -> DynTensor {
    DynTensor::ones(shape, cpu()).unwrap()
}

fn err<T>(r: Result<T, Error>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn matmul_shape_errors() {
    assert_eq!(
        err(ones(&[4, 10]).matmul(&ones(&[20, 2]))),
        "mm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    // 3-D @ 2-D is folded to 2-D first.
    assert_eq!(
        err(ones(&[3, 4, 10]).matmul(&ones(&[20, 2]))),
        "mm: mat1 and mat2 shapes cannot be multiplied (12x10 and 20x2)"
    );
    // Vector on the left: unsqueezed to a 1-row matrix.
    assert_eq!(
        err(ones(&[10]).matmul(&ones(&[20, 2]))),
        "mm: mat1 and mat2 shapes cannot be multiplied (1x10 and 20x2)"
    );
    // Matrix @ vector is mv.
    assert_eq!(
        err(ones(&[4, 10]).matmul(&ones(&[20]))),
        "size mismatch, got input (4), mat (4x10), vec (20)"
    );
    assert_eq!(
        err(ones(&[3, 4, 10]).matmul(&ones(&[20]))),
        "size mismatch, got input (12), mat (12x10), vec (20)"
    );
    // Vector @ vector is dot.
    assert_eq!(
        err(ones(&[10]).matmul(&ones(&[20]))),
        "inconsistent tensor size, expected tensor [10] and src [20] to have the same number of elements, but got 10 and 20 elements respectively"
    );
    // Batched: bmm's text, after the batch dims broadcast.
    assert_eq!(
        err(ones(&[3, 4, 10]).matmul(&ones(&[3, 20, 2]))),
        "Expected size for first two dimensions of batch2 tensor to be: [3, 10] but got: [3, 20]."
    );
    assert_eq!(
        err(ones(&[3, 4, 10]).matmul(&ones(&[1, 20, 2]))),
        "Expected size for first two dimensions of batch2 tensor to be: [3, 10] but got: [3, 20]."
    );
    assert_eq!(
        err(ones(&[2, 1, 4, 10]).matmul(&ones(&[3, 20, 2]))),
        "Expected size for first two dimensions of batch2 tensor to be: [6, 10] but got: [6, 20]."
    );
    // Batch dims that do not broadcast are reported first.
    assert_eq!(
        err(ones(&[2, 4, 10]).matmul(&ones(&[3, 20, 2]))),
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    );
    assert_eq!(
        err(ones(&[]).matmul(&ones(&[2]))),
        "both arguments to matmul need to be at least 1D, but they are 0D and 1D"
    );
    // The typed front says the same.
    let a = Tensor::<Cpu>::ones([4, 10], Cpu);
    let b = Tensor::<Cpu>::ones([20, 2], Cpu);
    assert_eq!(
        err(a.try_matmul(&b)),
        "mm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    let p = std::panic::catch_unwind(|| a.matmul(&b)).expect_err("matmul panics");
    assert_eq!(
        p.downcast_ref::<String>().map(String::as_str),
        Some("mm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)")
    );
}

#[test]
fn linear_shape_errors_say_addmm_with_a_bias_and_mm_without() {
    let model = Linear::<Cpu>::new(20, 2, Cpu);
    let x = Tensor::<Cpu>::ones([4, 10], Cpu);
    assert_eq!(
        err(model.try_forward(&x)),
        "addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    let p = std::panic::catch_unwind(|| model.forward(&x)).expect_err("forward panics");
    assert_eq!(
        p.downcast_ref::<String>().map(String::as_str),
        Some("addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)")
    );
    // A batch of sequences is folded: 3x4 rows.
    let x3 = Tensor::<Cpu>::ones([3, 4, 10], Cpu);
    assert_eq!(
        err(model.try_forward(&x3)),
        "addmm: mat1 and mat2 shapes cannot be multiplied (12x10 and 20x2)"
    );
    // F.linear without a bias runs matmul, so mm.
    let no_bias = Linear::from_parameters(model.weight().detach(), None);
    assert_eq!(
        err(no_bias.try_forward(&x)),
        "mm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    let dyn_model = DynLinear::new(20, 2, cpu()).unwrap();
    assert_eq!(
        err(dyn_model.forward(&ones(&[4, 10]))),
        "addmm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    assert_eq!(
        err(ones(&[4, 10]).linear(&dyn_model.weight, None)),
        "mm: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x2)"
    );
    // dtype: nn.Linear(f32) on f64 input.
    let x64 = DynTensor::full([4, 20], 1.0, DType::F64, cpu()).unwrap();
    assert_eq!(
        err(dyn_model.forward(&x64)),
        "mat1 and mat2 must have the same dtype, but got Double and Float"
    );
}

#[test]
fn broadcast_errors_name_both_sizes_and_the_dimension() {
    let cases: [(&[usize], &[usize], &str); 4] = [
        (&[3], &[4], "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
        (&[2, 3], &[4], "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
        (&[5, 3], &[2, 1, 4], "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 2"),
        (&[2, 3, 4], &[5, 4], "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"),
    ];
    for (a, b, text) in cases {
        for op in [
            DynTensor::add,
            DynTensor::sub,
            DynTensor::mul,
            DynTensor::div,
            DynTensor::maximum,
            DynTensor::eq,
            DynTensor::lt,
        ] {
            assert_eq!(err(op(&ones(a), &ones(b))), text, "{a:?} vs {b:?}");
        }
        let ta = Tensor::<Cpu>::ones(a, Cpu);
        let tb = Tensor::<Cpu>::ones(b, Cpu);
        assert_eq!(err(ta.try_add(&tb)), text);
        let p = std::panic::catch_unwind(|| &ta + &tb).expect_err("+ panics");
        assert_eq!(p.downcast_ref::<String>().map(String::as_str), Some(text));
        let p = std::panic::catch_unwind(|| &ones(a) + &ones(b)).expect_err("dyn + panics");
        assert_eq!(p.downcast_ref::<String>().map(String::as_str), Some(text));
    }
    let cond = DynTensor::full([3], 1.0, DType::Bool, cpu()).unwrap();
    assert_eq!(
        err(cond.where_cond(&ones(&[4]), &ones(&[4]))),
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
    );
}

#[test]
fn dim_out_of_range() {
    let t = ones(&[2, 3]);
    let text = |d: isize| {
        format!("Dimension out of range (expected to be in range of [-2, 1], but got {d})")
    };
    for d in [2isize, -3, 100, isize::MIN] {
        assert_eq!(err(t.sum_dim(d)), text(d));
        assert_eq!(err(t.mean_dim(d)), text(d));
        assert_eq!(err(t.max(d)), text(d));
        assert_eq!(err(t.min(d)), text(d));
        assert_eq!(err(t.argmax(d)), text(d));
        assert_eq!(err(t.argmin(d)), text(d));
        assert_eq!(err(t.softmax(d)), text(d));
        assert_eq!(err(t.log_softmax(d)), text(d));
        assert_eq!(err(t.transpose(0, d)), text(d));
        assert_eq!(err(t.squeeze(d)), text(d));
        assert_eq!(err(t.narrow(d, 0, 1)), text(d));
        assert_eq!(err(t.sum_dims(&[0, d], true)), text(d));
        assert_eq!(err(DynTensor::cat(&[&t, &t], d)), text(d));
        let idx = DynTensor::from_vec(vec![0i64], [1], cpu()).unwrap();
        assert_eq!(err(t.index_select(d, &idx)), text(d));
    }
    assert_eq!(
        err(t.unsqueeze(3)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(DynTensor::stack(&[&t, &t], -4)),
        "Dimension out of range (expected to be in range of [-3, 2], but got -4)"
    );
    // A 0-dim tensor counts as one dimension.
    let s = ones(&[]);
    assert_eq!(
        err(s.sum_dim(1)),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    assert_eq!(
        err(s.softmax(-2)),
        "Dimension out of range (expected to be in range of [-1, 0], but got -2)"
    );
    assert!(s.sum_dim(0).is_ok() && s.sum_dim(-1).is_ok() && s.softmax(0).is_ok());
    assert_eq!(
        err(t.sum_dims(&[1, -1], false)),
        "dim 1 appears multiple times in the list of dims"
    );
}

#[test]
fn reshape_and_view_errors() {
    let t = ones(&[2, 3]);
    assert_eq!(
        err(t.reshape(&[5])),
        "shape '[5]' is invalid for input of size 6"
    );
    assert_eq!(
        err(t.reshape(&[4, 2])),
        "shape '[4, 2]' is invalid for input of size 6"
    );
    assert_eq!(
        err(t.view(&[-1, 4])),
        "shape '[-1, 4]' is invalid for input of size 6"
    );
    assert_eq!(
        err(t.transpose(0, 1).unwrap().view(&[6])),
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
    assert_eq!(
        t.transpose(0, 1)
            .unwrap()
            .reshape(&[6])
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![1.0; 6]
    );
}

#[test]
fn dtype_errors() {
    let f32s = ones(&[2, 2]);
    let f64s = DynTensor::full([2, 2], 1.0, DType::F64, cpu()).unwrap();
    let i64s = DynTensor::full([2, 2], 1.0, DType::I64, cpu()).unwrap();
    let bools = DynTensor::full([2, 2], 1.0, DType::Bool, cpu()).unwrap();
    // Element-wise ops and comparisons promote, as `torch.result_type` (tests/promotion.rs);
    // in place, a wider category is refused with PyTorch's text.
    assert_eq!(f32s.add(&f64s).unwrap().dtype(), DType::F64);
    assert_eq!(f64s.mul(&f32s).unwrap().dtype(), DType::F64);
    assert_eq!(f32s.lt(&i64s).unwrap().dtype(), DType::Bool);
    assert_eq!(
        err(i64s.clone().add_(&f32s)),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        err(f32s.matmul(&f64s)),
        "expected m1 and m2 to have the same dtype, but got: float != double"
    );
    assert_eq!(
        err(i64s.mean_dim(0)),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"
    );
    assert_eq!(
        err(i64s.mean_all()),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"
    );
    // PyTorch's per-op rules beyond `torch.result_type` (tests/dyn_dtype_rules.rs has them
    // all): integer products stay integer on the CPU, float ops of integers give float32,
    // negating a bool tensor is refused with PyTorch's text.
    assert_eq!(i64s.matmul(&i64s).unwrap().to_vec::<i64>().unwrap(), [2; 4]);
    assert_eq!(i64s.exp().unwrap().dtype(), DType::F32);
    assert_eq!(i64s.div(&i64s).unwrap().dtype(), DType::F32);
    assert_eq!(
        err(bools.neg()),
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
    );
    assert_eq!(
        err(f32s.to_vec::<i64>()),
        "expected scalar type Long but found Float"
    );
    assert_eq!(
        err(f32s.item::<f64>()),
        "a Tensor with 4 elements cannot be converted to Scalar"
    );
    assert_eq!(
        err(ones(&[1]).item::<f64>()),
        "expected scalar type Double but found Float"
    );
    let cond = f32s.gt(&f32s).unwrap();
    // `where` promotes its branches, as PyTorch's.
    assert_eq!(cond.where_cond(&f32s, &f64s).unwrap().dtype(), DType::F64);
    assert_eq!(
        err(f32s.where_cond(&f32s, &f32s)),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Float"
    );
    // `cat` promotes its inputs, as PyTorch's (`at::native::result_type(tensors)`).
    assert_eq!(
        DynTensor::cat(&[&f32s, &f64s], 0).unwrap().dtype(),
        DType::F64
    );
    let idx = DynTensor::from_vec(vec![0.0f32], [1], cpu()).unwrap();
    assert_eq!(
        err(f32s.gather(0, &ones(&[1, 1]))),
        "gather(): Expected dtype int64 for index"
    );
    assert!(f32s.index_select(0, &idx).is_err());
    // CrossEntropyLoss with a weight of another dtype (docs/pytorch-reference.md §5).
    let logits = ones(&[3, 2]);
    let targets = DynTensor::from_vec(vec![0i64, 1, 1], [3], cpu()).unwrap();
    let weight = DynTensor::full([2], 1.0, DType::F64, cpu()).unwrap();
    assert_eq!(
        err(logits.cross_entropy_with(&targets, Some(&weight), Reduction::Mean, -100)),
        "expected scalar type Float but found Double"
    );
    let loss = DynCrossEntropyLoss::with_weight(weight);
    assert_eq!(
        err(loss.forward(&logits, &targets)),
        "expected scalar type Float but found Double"
    );
    assert_eq!(
        err(logits.cross_entropy_with(&logits, None, Reduction::Mean, -100)),
        "expected scalar type Long but found Float"
    );
}

#[test]
fn item_on_two_elements() {
    assert_eq!(
        err(ones(&[2]).item::<f32>()),
        "a Tensor with 2 elements cannot be converted to Scalar"
    );
    assert_eq!(ones(&[1, 1]).item::<f32>().unwrap(), 1.0);
    assert_eq!(ones(&[]).item::<f32>().unwrap(), 1.0);
}

#[test]
fn cross_entropy_errors() {
    let logits = ones(&[3, 4]);
    let t = |v: Vec<i64>| {
        let n = v.len();
        DynTensor::from_vec(v, [n], cpu()).unwrap()
    };
    assert_eq!(
        err(logits.cross_entropy_with(&t(vec![0, 4, 1]), None, Reduction::Mean, -100)),
        "Target 4 is out of bounds."
    );
    assert_eq!(
        err(logits.cross_entropy_with(&t(vec![0, -1, 1]), None, Reduction::Mean, -100)),
        "Target -1 is out of bounds."
    );
    assert!(
        logits
            .cross_entropy_with(&t(vec![0, -1, 1]), None, Reduction::Mean, -1)
            .is_ok(),
        "ignored targets are not checked"
    );
    assert_eq!(
        err(logits.cross_entropy_with(&t(vec![0, 1]), None, Reduction::Mean, -100)),
        "Expected input batch_size (3) to match target batch_size (2)."
    );
    let w = ones(&[3]);
    assert_eq!(
        err(logits.cross_entropy_with(&t(vec![0, 1, 2]), Some(&w), Reduction::Mean, -100)),
        "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]"
    );
    let typed = CrossEntropyLoss::<Cpu>::new();
    let targets = Tensor::<Cpu, i64>::from_vec(vec![9, 0, 0], [3], Cpu);
    assert_eq!(
        err(typed.try_forward(&Tensor::<Cpu>::ones([3, 4], Cpu), &targets)),
        "Target 9 is out of bounds."
    );
}

#[test]
fn device_strings_parse_like_torch_device() {
    for (s, shown) in [
        ("cpu", "cpu"),
        ("cuda", "cuda"),
        ("cuda:0", "cuda:0"),
        ("cuda:1", "cuda:1"),
        ("cuda:12", "cuda:12"),
        ("cpu:0", "cpu:0"),
    ] {
        assert_eq!(s.parse::<DynDevice>().unwrap().to_string(), shown);
    }
    for bad in [
        "cuda:x", "cuda:", "cuda:-1", "cuda: 0", "cuda:01", "cuda:0:1", "  cuda", "cuda:+1",
        "cuda ", ":0", "cu-da",
    ] {
        assert_eq!(
            err(bad.parse::<DynDevice>()),
            format!("Invalid device string: '{bad}'"),
            "{bad:?}"
        );
    }
    assert_eq!(
        err("".parse::<DynDevice>()),
        "Device string must not be empty"
    );
    let expected_one_of = "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: ";
    assert_eq!(
        err("gpu".parse::<DynDevice>()),
        format!("{expected_one_of}gpu")
    );
    assert_eq!(
        err("CUDA:0".parse::<DynDevice>()),
        format!("{expected_one_of}CUDA")
    );
    assert_eq!(
        err("Cpu".parse::<DynDevice>()),
        format!("{expected_one_of}Cpu")
    );
    assert_eq!(
        err("cuda:1000000000000".parse::<DynDevice>()),
        "Could not parse device index '1000000000000' in device string 'cuda:1000000000000'"
    );
    assert!(matches!(
        "mps".parse::<DynDevice>(),
        Err(Error::UnsupportedDeviceType(_))
    ));
    assert!(matches!(
        DynDevice::try_from("meta:0"),
        Err(Error::UnsupportedDeviceType(_))
    ));
    // `cuda` and `cuda:0` differ as devices; tensors print the resolved `cuda:0`.
    let cuda: DynDevice = "cuda".parse().unwrap();
    assert_ne!(cuda, "cuda:0".parse().unwrap());
    assert_eq!(cuda.resolved().to_string(), "cuda:0");
    assert_eq!(cuda.cuda_index(), Some(0));
    assert_eq!(cuda.index(), None);
    assert_eq!(
        "cpu:0".parse::<DynDevice>().unwrap().resolved(),
        DynDevice::cpu()
    );
    assert_eq!(DynDevice::from(Cpu), DynDevice::cpu());
    assert_eq!(DynDevice::cuda(3).to_string(), "cuda:3");
    assert_eq!(Cpu.to_string(), "cpu");
}

const NO_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

/// Creating on a GPU: on a machine without one, PyTorch's driver message (or, with a driver but
/// no such device, `invalid device ordinal`); on a GPU machine the tensor is there.
#[test]
fn creating_on_a_gpu_that_is_or_is_not_there() {
    let gpus = devtype::cuda::device_count();
    let host = ones(&[2, 3]);
    for index in [0usize, 1, 7] {
        let dev = DynDevice::cuda(index);
        let attempts: Vec<(&str, Result<DynTensor, Error>)> = vec![
            ("zeros", DynTensor::zeros([2, 3], dev)),
            ("ones", DynTensor::ones([2, 3], dev)),
            ("full", DynTensor::full([2], 1.0, DType::F64, dev)),
            ("rand", DynTensor::rand([2], dev)),
            ("randn", DynTensor::randn([2], dev)),
            ("arange", DynTensor::arange(4, dev)),
            ("from_vec", DynTensor::from_vec(vec![1.0f32, 2.0], [2], dev)),
            ("to", host.to(dev)),
        ];
        for (what, r) in attempts {
            if index < gpus {
                let t =
                    r.unwrap_or_else(|e| panic!("{what} on cuda:{index} with {gpus} GPU(s): {e}"));
                assert_eq!(t.device(), dev, "{what}");
            } else {
                let e = r.err().unwrap_or_else(|| {
                    panic!("{what} on cuda:{index} with {gpus} GPU(s) succeeded")
                });
                match e {
                    Error::NoDriver => assert_eq!(e.to_string(), NO_DRIVER),
                    Error::InvalidDeviceOrdinal { .. } => {
                        assert!(e.to_string().contains("invalid device ordinal"), "{e}")
                    }
                    other => panic!("{what} on cuda:{index}: unexpected error {other}"),
                }
            }
        }
    }
    // "cuda" without an index means the current device, cuda:0.
    let r = DynTensor::zeros([1], "cuda".parse().unwrap());
    assert_eq!(r.is_ok(), gpus > 0);
    if let Ok(t) = r {
        assert_eq!(t.device().to_string(), "cuda:0");
    }
    // A module moved to a missing GPU stays where it was.
    let mut model = DynLinear::new(3, 2, cpu()).unwrap();
    if gpus == 0 {
        assert!(model.to(DynDevice::cuda(0)).is_err());
        assert_eq!(model.device(), cpu());
    }
    // Typed: opening fails cleanly, never panics.
    match Cuda::<0>::open() {
        Ok(gpu) => assert!(gpus > 0 && gpu.to_string() == "cuda:0"),
        Err(e) => {
            assert_eq!(gpus, 0);
            assert!(
                matches!(e, Error::NoDriver | Error::InvalidDeviceOrdinal { .. }),
                "{e}"
            );
        }
    }
}

/// This machine's case, spelled out: no driver, PyTorch's exact sentence.
#[test]
fn without_a_driver_the_message_is_pytorchs() {
    if devtype::cuda::is_available() {
        println!("skipped: a GPU is available here");
        return;
    }
    match DynTensor::zeros([2], DynDevice::cuda(0)) {
        Err(Error::NoDriver) => {}
        Err(Error::InvalidDeviceOrdinal { .. }) => {
            println!("skipped: a CUDA driver is installed but sees no GPU");
            return;
        }
        other => panic!("unexpected: {:?}", other.map(|t| t.shape().to_vec())),
    }
    assert_eq!(err(DynTensor::zeros([2], DynDevice::cuda(0))), NO_DRIVER);
    assert_eq!(err(ones(&[2]).to(DynDevice::cuda(0))), NO_DRIVER);
    assert_eq!(err(DynDevice::cuda(0).open()), NO_DRIVER);
    assert_eq!(err(Cuda::<0>::open()), NO_DRIVER);
    assert_eq!(err(Cuda::<1>::open()), NO_DRIVER);
    assert_eq!(devtype::cuda::device_count(), 0);
}
