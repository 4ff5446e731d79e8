//! Soundness: bad optimizer state, bad hyper-parameters, malformed checkpoints, device
//! indices out of range, loss/backward texts, and gradients of reductions at NaN and ties.
//! Every case here used to crash, corrupt or silently give a wrong answer.

use devtype::nn::Linear;
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;
use devtype::Error;
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "devtype-soundness-{}-{name}.safetensors",
        std::process::id()
    ))
}

/// Every parameter of `model` gets a gradient of ones.
fn ones_grads(model: &mut Linear<Cpu>) {
    model.visit_parameters_mut("", &mut |_, p| {
        let shape = p.shape().to_vec();
        p.try_set_grad(Some(Tensor::ones(shape.as_slice(), Cpu)))
            .unwrap();
    });
}

fn values(model: &Linear<Cpu>) -> Vec<Vec<f64>> {
    model
        .named_parameters()
        .iter()
        .map(|(_, p)| p.to_vec().into_iter().map(f64::from).collect())
        .collect()
}

// ---- A: optimizer state checked against the model --------------------------------------------

#[test]
fn sgd_state_of_another_model_is_an_error_and_changes_nothing() {
    let mut a = Linear::<Cpu>::new(3, 2, Cpu);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    ones_grads(&mut a);
    opt.try_step(&mut a).unwrap();
    // Same number of weight elements, other shape; bias of another length.
    let mut b = Linear::<Cpu>::new(2, 3, Cpu);
    ones_grads(&mut b);
    let before = values(&b);
    let err = opt.try_step(&mut b).unwrap_err().to_string();
    assert_eq!(values(&b), before, "a failed step must change nothing");
    assert!(
        err.contains("weight") || err.contains("bias"),
        "names the parameter: {err}"
    );
    assert!(
        err.contains("[3, 2]") || err.contains("[3]"),
        "names the expected shape: {err}"
    );
    assert!(
        err.contains("[2, 3]") || err.contains("[2]"),
        "names the found shape: {err}"
    );
}

#[test]
fn sgd_loaded_state_of_another_shape_is_an_error() {
    let path = temp("sgd-state");
    let mut a = Linear::<Cpu>::new(4, 2, Cpu);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    ones_grads(&mut a);
    opt.try_step(&mut a).unwrap();
    opt.save(&path).unwrap();
    let mut resumed = Sgd::<Cpu>::load(&path, 0.1, 0.9, Cpu).unwrap();
    std::fs::remove_file(&path).ok();
    let mut b = Linear::<Cpu>::new(2, 2, Cpu);
    ones_grads(&mut b);
    let before = values(&b);
    let err = resumed.try_step(&mut b).unwrap_err().to_string();
    assert_eq!(values(&b), before);
    assert!(err.contains("weight"), "{err}");
    assert!(err.contains("[2, 2]") && err.contains("[2, 4]"), "{err}");
}

#[test]
fn adam_state_of_another_model_is_an_error_and_changes_nothing() {
    let mut a = Linear::<Cpu>::new(3, 2, Cpu);
    let mut opt = Adam::new(0.01);
    ones_grads(&mut a);
    opt.try_step(&mut a).unwrap();
    let (m_before, _) = opt.moments("weight").unwrap();
    let mut b = Linear::<Cpu>::new(2, 3, Cpu);
    ones_grads(&mut b);
    let before = values(&b);
    let err = opt.try_step(&mut b).unwrap_err().to_string();
    assert_eq!(values(&b), before);
    assert!(err.contains("weight") || err.contains("bias"), "{err}");
    // The state is untouched too: a later step on the right model goes on from step 1.
    let (m_after, _) = opt.moments("weight").unwrap();
    assert_eq!(m_before.to_vec(), m_after.to_vec());
    ones_grads(&mut a);
    opt.try_step(&mut a).unwrap();
}

// ---- B: hyper-parameters ---------------------------------------------------------------------

fn sgd_error(opt: Sgd<Cpu>) -> String {
    let mut m = Linear::<Cpu>::new(2, 2, Cpu);
    ones_grads(&mut m);
    let before = values(&m);
    let mut opt = opt;
    let err = opt.try_step(&mut m).unwrap_err().to_string();
    assert_eq!(values(&m), before);
    err
}

fn adam_error(opt: Adam<Cpu>) -> String {
    let mut m = Linear::<Cpu>::new(2, 2, Cpu);
    ones_grads(&mut m);
    let before = values(&m);
    let mut opt = opt;
    let err = opt.try_step(&mut m).unwrap_err().to_string();
    assert_eq!(values(&m), before);
    err
}

#[test]
fn sgd_hyper_parameters_are_checked_as_torch() {
    assert_eq!(sgd_error(Sgd::new(-0.1)), "Invalid learning rate: -0.1");
    assert_eq!(sgd_error(Sgd::new(f64::NAN)), "Invalid learning rate: nan");
    assert_eq!(
        sgd_error(Sgd::new(0.1).momentum(-0.5)),
        "Invalid momentum value: -0.5"
    );
    assert_eq!(
        sgd_error(Sgd::new(0.1).weight_decay(-1.0)),
        "Invalid weight_decay value: -1.0"
    );
    assert_eq!(
        sgd_error(Sgd::new(0.1).nesterov(true)),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    assert_eq!(
        sgd_error(Sgd::new(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    assert_eq!(
        Sgd::<Cpu>::try_new(-1e-5).unwrap_err().to_string(),
        "Invalid learning rate: -1e-05"
    );
    assert!(Sgd::<Cpu>::try_new(0.0).is_ok());
}

#[test]
fn set_lr_to_a_bad_value_fails_the_next_step() {
    let mut opt = Sgd::new(0.1);
    opt.set_lr(-2.0);
    assert_eq!(sgd_error(opt), "Invalid learning rate: -2.0");
    let mut opt = Adam::new(0.1);
    opt.set_lr(f64::NAN);
    assert_eq!(adam_error(opt), "Invalid learning rate: nan");
}

#[test]
fn adam_hyper_parameters_are_checked_as_torch() {
    assert_eq!(adam_error(Adam::new(-0.1)), "Invalid learning rate: -0.1");
    assert_eq!(
        adam_error(Adam::new(0.1).eps(-1.0)),
        "Invalid epsilon value: -1.0"
    );
    assert_eq!(
        adam_error(Adam::new(0.1).betas(1.0, 0.999)),
        "Invalid beta parameter at index 0: 1.0"
    );
    assert_eq!(
        adam_error(Adam::new(0.1).betas(0.9, -0.5)),
        "Invalid beta parameter at index 1: -0.5"
    );
    assert_eq!(
        adam_error(Adam::new(0.1).weight_decay(-0.01)),
        "Invalid weight_decay value: -0.01"
    );
    assert_eq!(
        Adam::<Cpu>::try_new(f64::NAN).unwrap_err().to_string(),
        "Invalid learning rate: nan"
    );
}

// ---- C: malformed checkpoints ----------------------------------------------------------------

/// A safetensors file written by hand: `header` is the JSON header.
fn crafted(name: &str, header: &str, data: &[u8]) -> PathBuf {
    let path = temp(name);
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn load_err(path: &PathBuf) -> String {
    let r = devtype::nn::load_tensors::<Cpu, f32>(path, Cpu);
    std::fs::remove_file(path).ok();
    match r {
        Ok(t) => panic!("loaded {} tensors from a malformed file", t.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn checkpoint_tensor_with_too_many_dims_is_an_error_naming_file_and_tensor() {
    let path = crafted(
        "many-dims",
        r#"{"deep":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}"#,
        &1.0f32.to_le_bytes(),
    );
    let err = load_err(&path);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("deep"), "{err}");
    assert!(err.contains('9'), "{err}");
}

#[test]
fn checkpoint_tensor_with_an_overflowing_shape_is_an_error_naming_file_and_tensor() {
    let big = 1u64 << 40;
    for (name, shape) in [
        ("huge", format!("[{big},{big}]")),
        ("huge_empty", format!("[0,{big},{big}]")),
    ] {
        let path = crafted(
            name,
            &format!(r#"{{"{name}":{{"dtype":"F32","shape":{shape},"data_offsets":[0,0]}}}}"#),
            &[],
        );
        let err = load_err(&path);
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains(name), "{err}");
    }
}

#[test]
fn checkpoint_tensor_whose_bytes_do_not_match_its_shape_is_an_error() {
    let path = crafted(
        "short",
        r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
        &[0u8; 8],
    );
    let err = load_err(&path);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("\"w\"") || err.contains(" w "), "{err}");
}

#[test]
fn malformed_checkpoint_headers_never_panic() {
    for (i, header) in [
        "{",
        "[]",
        r#"{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
        r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}"#,
        r#"{"w":{"dtype":"F32","shape":[1]}}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let path = crafted(&format!("bad-{i}"), header, &[0u8; 4]);
        let _ = load_err(&path);
    }
    let path = temp("tiny");
    std::fs::write(&path, [1u8, 2]).unwrap();
    let _ = load_err(&path);
}

// ---- D: device indices -----------------------------------------------------------------------

#[test]
fn cuda_index_past_the_range_is_an_error_not_a_wrap() {
    assert_eq!(DynDevice::try_cuda(3).unwrap(), DynDevice::cuda(3));
    for bad in [300usize, 1 << 32, usize::MAX] {
        let err = DynDevice::try_cuda(bad).unwrap_err().to_string();
        assert!(err.contains(&bad.to_string()), "{err}");
    }
    let err = "cuda:300".parse::<DynDevice>().unwrap_err().to_string();
    assert_eq!(
        err,
        "Could not parse device index '300' in device string 'cuda:300'"
    );
    let err = "cuda:4294967295".parse::<DynDevice>().unwrap_err();
    assert!(matches!(err, Error::DeviceIndexParse { .. }), "{err}");
    let top = DynDevice::try_cuda(DynDevice::MAX_CUDA_INDEX).unwrap();
    assert_eq!(
        top.to_string(),
        format!("cuda:{}", DynDevice::MAX_CUDA_INDEX)
    );
    assert_eq!(top.to_string().parse::<DynDevice>().unwrap(), top);
}

#[test]
fn infallible_cuda_past_the_range_panics_with_a_clear_text() {
    let r = std::panic::catch_unwind(|| DynDevice::cuda(usize::MAX).to_string());
    let msg = match r {
        Ok(shown) => panic!("cuda(usize::MAX) gave {shown}"),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    assert!(msg.contains("try_cuda"), "{msg}");
}

// ---- E: loss and backward texts --------------------------------------------------------------

fn ce_err(logits: &[usize], target: &[usize]) -> String {
    let n: usize = logits.iter().product();
    let x = DynTensor::from_vec(vec![0.5f32; n], logits, DynDevice::cpu()).unwrap();
    let m: usize = target.iter().product();
    let t = DynTensor::from_vec(vec![0i64; m], target, DynDevice::cpu()).unwrap();
    x.cross_entropy_with(&t, None, devtype::nn::Reduction::Mean, -100)
        .unwrap_err()
        .to_string()
}

#[test]
fn cross_entropy_shape_errors_say_what_is_wrong() {
    assert_eq!(
        ce_err(&[2, 3], &[3]),
        "Expected input batch_size (2) to match target batch_size (3)."
    );
    assert_eq!(
        ce_err(&[2, 3], &[3, 1]),
        "Expected input batch_size (2) to match target batch_size (3)."
    );
    assert_eq!(
        ce_err(&[2, 3], &[2, 1]),
        "0D or 1D target tensor expected, multi-target not supported"
    );
    assert_eq!(
        ce_err(&[3], &[1]),
        "size mismatch (got input: [3], target: [1])"
    );
    assert_eq!(
        ce_err(&[3], &[1, 1]),
        "0D or 1D target tensor expected, multi-target not supported"
    );
    assert_eq!(ce_err(&[], &[]), "Expected 1 or more dimensions (got 0)");
}

#[test]
fn backward_with_a_gradient_of_another_dtype_reports_the_dtype() {
    let x = DynTensor::parameter(
        DynTensor::from_vec(vec![1.0f32, 2.0], [2], DynDevice::cpu()).unwrap(),
    )
    .unwrap();
    let y = x.mul_scalar(2.0).unwrap();
    let g = DynTensor::from_vec(vec![1.0f64, 1.0], [2], DynDevice::cpu()).unwrap();
    let err = y.backward_with(&g).unwrap_err().to_string();
    assert!(!err.contains("shape"), "{err}");
    assert_eq!(
        err,
        "Mismatch in dtype: grad_output[0] has a dtype of torch.float64 and output[0] has a dtype of torch.float32."
    );
}

// ---- F: gradients of max/min at NaN and ties -------------------------------------------------

fn grad_of(x: &[f64], f: impl Fn(&Tensor<Cpu, f64>) -> Tensor<Cpu, f64>) -> Vec<f64> {
    let v = Tensor::parameter(Tensor::from_vec(x.to_vec(), [x.len()], Cpu));
    f(&v).backward();
    v.grad().unwrap().to_vec()
}

fn same(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!(x == y || (x.is_nan() && y.is_nan()), "{a:?} vs {b:?}");
    }
}

#[test]
fn max_all_and_min_all_route_the_gradient_like_torch() {
    let nan = f64::NAN;
    // torch.tensor([1., nan, 3.], requires_grad=True).max().backward() -> [0, 1, 0]
    same(
        &grad_of(&[1.0, nan, 3.0], |v| v.max_all()),
        &[0.0, 1.0, 0.0],
    );
    same(
        &grad_of(&[1.0, nan, 3.0], |v| v.min_all()),
        &[0.0, 1.0, 0.0],
    );
    // Two NaNs share it.
    same(
        &grad_of(&[nan, 1.0, nan], |v| v.max_all()),
        &[0.5, 0.0, 0.5],
    );
    // Ties share it evenly.
    same(
        &grad_of(&[3.0, 1.0, 3.0], |v| v.max_all()),
        &[0.5, 0.0, 0.5],
    );
    same(
        &grad_of(&[1.0, 1.0, 3.0, 1.0], |v| v.min_all()),
        &[1.0 / 3.0, 1.0 / 3.0, 0.0, 1.0 / 3.0],
    );
}

#[test]
fn max_and_min_over_a_dim_pick_the_nan_and_its_index() {
    let nan = f64::NAN;
    let x = Tensor::<Cpu, f64>::from_vec(vec![1.0, nan, 3.0, 4.0, 2.0, 4.0], [2, 3], Cpu);
    same(&x.max(1).values.to_vec(), &[nan, 4.0]);
    same(&x.min(1).values.to_vec(), &[nan, 2.0]);
    assert_eq!(x.argmax(1).to_vec(), vec![1, 0]);
    assert_eq!(x.argmin(1).to_vec(), vec![1, 1]);
    let v = Tensor::parameter(x.clone());
    v.max(1).values.sum_all().backward();
    same(&v.grad().unwrap().to_vec(), &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
    let v = Tensor::parameter(x);
    v.min(1).values.sum_all().backward();
    same(&v.grad().unwrap().to_vec(), &[0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
}

#[test]
fn maximum_and_minimum_gradients_at_ties_and_nan_follow_torch() {
    let nan = f64::NAN;
    // derivatives.yaml: self: where(self == other, grad / 2, grad).masked_fill_(self < other, 0)
    //                  other: where(self == other, grad / 2, grad).masked_fill_(self > other, 0)
    let a = [1.0, 2.0, nan, 5.0, nan];
    let b = [2.0, 2.0, 1.0, nan, nan];
    for (maximum, ga, gb) in [
        (true, [0.0, 0.5, 1.0, 1.0, 1.0], [1.0, 0.5, 1.0, 1.0, 1.0]),
        (false, [1.0, 0.5, 1.0, 1.0, 1.0], [0.0, 0.5, 1.0, 1.0, 1.0]),
    ] {
        let va = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(a.to_vec(), [5], Cpu));
        let vb = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(b.to_vec(), [5], Cpu));
        let out = if maximum {
            va.maximum(&vb)
        } else {
            va.minimum(&vb)
        };
        out.sum_all().backward();
        same(&va.grad().unwrap().to_vec(), &ga);
        same(&vb.grad().unwrap().to_vec(), &gb);
    }
}
