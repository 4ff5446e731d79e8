//! Checkpoints of unusual models: two parameters under one name (an error naming it, from
//! `save` and `load`, never a panic), files of another floating-point type (converted, as
//! PyTorch's `load_state_dict` converts with `param.copy_`), all or nothing, and tied weights
//! (saved once, shared again on load).

use devtype::nn::{load_tensors, Linear, Module};
use devtype::prelude::*;
use devtype::Float;
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "devtype-ckpt-{name}-{}.safetensors",
        std::process::id()
    ))
}

/// A model whose two parameters are both named `w` (a hand-written `Module`).
struct SameName<D: Device> {
    a: Tensor<D>,
    b: Tensor<D>,
}

impl<D: Device> Module<D> for SameName<D> {
    type On<D2: Device> = SameName<D2>;

    fn try_to<D2: Device>(&self, dev: D2) -> devtype::Result<SameName<D2>>
    where
        D: devtype::CopyTo<D2>,
    {
        Ok(SameName {
            a: <Tensor<D> as Module<D>>::try_to(&self.a, dev)?,
            b: <Tensor<D> as Module<D>>::try_to(&self.b, dev)?,
        })
    }

    fn visit_parameters(&self, _prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D>)) {
        f("w", &self.a);
        f("w", &self.b);
    }

    fn visit_parameters_mut(&mut self, _prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D>)) {
        f("w", &mut self.a);
        f("w", &mut self.b);
    }
}

fn same_name() -> SameName<Cpu> {
    let p = |v: f32| Tensor::parameter(Tensor::<Cpu>::full([2], v, Cpu));
    SameName {
        a: p(1.0),
        b: p(2.0),
    }
}

#[test]
fn saving_two_parameters_under_one_name_is_an_error_naming_it() {
    let path = temp("same-name-save");
    let r = std::panic::catch_unwind(|| devtype::nn::save(&same_name(), &path));
    let err = match r {
        Err(_) => panic!("save panicked"),
        Ok(r) => r.unwrap_err().to_string(),
    };
    assert!(err.contains("\"w\""), "{err}");
    assert!(!path.exists(), "a file was written");
}

/// A model with one parameter, named `w`.
struct One(Tensor<Cpu>);

impl Module<Cpu> for One {
    type On<D2: Device> = Tensor<D2>;

    fn try_to<D2: Device>(&self, dev: D2) -> devtype::Result<Tensor<D2>> {
        <Tensor<Cpu> as Module<Cpu>>::try_to(&self.0, dev)
    }

    fn visit_parameters(&self, _: &str, f: &mut dyn FnMut(&str, &Tensor<Cpu>)) {
        f("w", &self.0);
    }

    fn visit_parameters_mut(&mut self, _: &str, f: &mut dyn FnMut(&str, &mut Tensor<Cpu>)) {
        f("w", &mut self.0);
    }
}

#[test]
fn loading_into_two_parameters_under_one_name_is_an_error_naming_it() {
    let path = temp("same-name-load");
    let one = One(Tensor::parameter(Tensor::<Cpu>::full([2], 5.0, Cpu)));
    devtype::nn::save(&one, &path).unwrap();
    let mut model = same_name();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        devtype::nn::load(&mut model, &path)
    }));
    let err = match r {
        Err(_) => panic!("load panicked"),
        Ok(r) => r.unwrap_err().to_string(),
    };
    assert!(err.contains("\"w\""), "{err}");
    assert_eq!(model.a.to_vec(), [1.0, 1.0]);
    assert_eq!(model.b.to_vec(), [2.0, 2.0]);
    std::fs::remove_file(&path).ok();
}

/// Values exactly representable in every float type (so the source holds them exactly),
/// plus ones that round in the narrower types.
fn source_values() -> Vec<f64> {
    vec![
        0.5,
        -1.25,
        3.0,
        1.0 / 3.0,
        1e-3,
        65504.0,
        70000.0,
        1e-8,
        -std::f64::consts::E,
        123456.789,
        0.0,
        -0.0,
    ]
}

/// `v` rounded to the nearest value of `dtype` (round half to even, as PyTorch's casts), from
/// the `half` crate and Rust's `as`: the reference for a converted load.
fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F64 => v,
        DType::F32 => v as f32 as f64,
        DType::F16 => f16::from_f64(v).to_f64(),
        DType::BF16 => bf16::from_f64(v).to_f64(),
        _ => unreachable!(),
    }
}

fn model_of<E: Float>(values: &[f64]) -> Linear<Cpu, E> {
    let w: Vec<E> = values.iter().map(|&v| E::from_f64(v)).collect();
    let n = w.len();
    Linear::from_parameters(
        Tensor::<Cpu, E>::from_vec(w, [n / 2, 2], Cpu),
        Some(Tensor::<Cpu, E>::from_vec(
            vec![E::from_f64(0.75); n / 2],
            [n / 2],
            Cpu,
        )),
    )
}

fn as_f64<E: Float>(t: &Tensor<Cpu, E>) -> Vec<f64> {
    t.to_vec().into_iter().map(|v| v.to_f64()).collect()
}

/// Saves a model of `S` holding `source_values()` (rounded to `S`), loads it into a model of
/// `T`, and checks every value against rounding to `S` then to `T`.
fn convert<S: Float, T: Float>() {
    let path = temp(&format!("convert-{:?}-{:?}", S::DTYPE, T::DTYPE));
    let source = model_of::<S>(&source_values());
    source.save(&path).unwrap();
    let mut target = model_of::<T>(&vec![9.0; source_values().len()]);
    target
        .load(&path)
        .unwrap_or_else(|e| panic!("{:?} into {:?}: {e}", S::DTYPE, T::DTYPE));
    let want: Vec<f64> = source_values()
        .iter()
        .map(|&v| round_to(T::DTYPE, round_to(S::DTYPE, v)))
        .collect();
    let got = as_f64(target.weight());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{:?} into {:?}, value {i}: got {g}, want {w}",
            S::DTYPE,
            T::DTYPE
        );
    }
    assert_eq!(as_f64(target.bias().unwrap()), vec![0.75; want.len() / 2]);
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_checkpoint_of_another_float_type_is_converted_as_pytorch_does() {
    // Every ordered pair of float types (the same type included).
    fn into_all<S: Float>() {
        convert::<S, f32>();
        convert::<S, f64>();
        convert::<S, f16>();
        convert::<S, bf16>();
    }
    into_all::<f32>();
    into_all::<f64>();
    into_all::<f16>();
    into_all::<bf16>();
}

#[test]
fn a_converted_load_is_all_or_nothing() {
    // An f64 file whose weight converts but whose bias has another shape: nothing changes.
    let path = temp("convert-partial");
    let source = Linear::<Cpu, f64>::from_parameters(
        Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], [2, 2], Cpu),
        Some(Tensor::from_vec(vec![1.0, 2.0, 3.0], [3], Cpu)),
    );
    source.save(&path).unwrap();
    let mut target = model_of::<f32>(&[9.0; 4]);
    let err = target.load(&path).unwrap_err().to_string();
    assert!(err.contains("bias"), "{err}");
    assert_eq!(target.weight().to_vec(), vec![9.0; 4]);
    // A non-float tensor in the file (an i64 step count) is refused by name, nothing loaded.
    let header = r#"{"weight":{"dtype":"F64","shape":[2,2],"data_offsets":[0,32]},"bias":{"dtype":"I64","shape":[2],"data_offsets":[32,48]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    for v in [1.0f64, 2.0, 3.0, 4.0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    for v in [1i64, 2] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, bytes).unwrap();
    let err = target.load(&path).unwrap_err().to_string();
    assert!(err.contains("bias") && err.contains("I64"), "{err}");
    assert_eq!(target.weight().to_vec(), vec![9.0; 4]);
    std::fs::remove_file(&path).ok();
}

/// Two layers whose weights are one parameter.
struct Tied<D: Device> {
    a: Linear<D>,
    b: Linear<D>,
}
devtype::module!(Tied<D> { a, b });

fn tied() -> Tied<Cpu> {
    let a = Linear::new(3, 3, Cpu);
    let mut b = Linear::new(3, 3, Cpu);
    b.set_weight(a.weight());
    Tied { a, b }
}

#[test]
fn a_tied_weight_is_saved_once_and_shared_again_on_load() {
    let path = temp("tied");
    let model = tied();
    model.save(&path).unwrap();
    let names: Vec<String> = load_tensors::<Cpu, f32>(&path, Cpu)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    // Sorted by name; b.weight is a.weight.
    assert_eq!(names, ["a.bias", "a.weight", "b.bias"]);
    let mut copy = tied();
    copy.load(&path).unwrap();
    assert_eq!(copy.a.weight().to_vec(), model.a.weight().to_vec());
    assert_eq!(copy.b.weight().to_vec(), model.a.weight().to_vec());
    assert_eq!(
        copy.b.bias().unwrap().to_vec(),
        model.b.bias().unwrap().to_vec()
    );
    // Still one parameter: one gradient for both uses.
    let x = Tensor::<Cpu>::ones([2, 3], Cpu);
    copy.b.forward(copy.a.forward(&x)).sum_all().backward();
    assert!(copy.b.weight().grad().is_some());
    assert_eq!(
        copy.a.weight().grad().unwrap().to_vec(),
        copy.b.weight().grad().unwrap().to_vec()
    );
    // A file that also holds the alias (an untied model with the same names) loads too.
    let untied = Tied {
        a: Linear::new(3, 3, Cpu),
        b: Linear::new(3, 3, Cpu),
    };
    untied.save(&path).unwrap();
    copy.load(&path).unwrap();
    assert_eq!(copy.a.weight().to_vec(), untied.a.weight().to_vec());
    assert_eq!(copy.b.weight().to_vec(), untied.a.weight().to_vec());
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_dynamic_model_lists_a_shared_weight_once() {
    use devtype::nn::{DynLinear, DynModule, DynSequential};
    let dev = DynDevice::cpu();
    let a = DynLinear::new(3, 3, dev).unwrap();
    let mut b = DynLinear::new(3, 3, dev).unwrap();
    b.weight = a.weight.clone();
    let model = DynSequential::new().append(a).append(b);
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "1.bias"]);
}

#[test]
fn a_linear_layer_whose_weight_is_not_a_matrix_is_an_error_not_a_panic() {
    // from_parameters and set_weight take any tensor; try_forward must report the shape.
    let x = Tensor::<Cpu>::ones([2, 3], Cpu);
    for weight in [
        Tensor::<Cpu>::ones([3], Cpu),
        Tensor::<Cpu>::ones([], Cpu),
        Tensor::<Cpu>::ones([2, 3, 1], Cpu),
    ] {
        let shape = weight.shape().to_vec();
        let layer = Linear::from_parameters(weight, None);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| layer.try_forward(&x)));
        match r {
            Err(_) => panic!("try_forward panicked for a weight of shape {shape:?}"),
            Ok(r) => assert!(r.is_err(), "weight {shape:?} accepted"),
        }
    }
}
