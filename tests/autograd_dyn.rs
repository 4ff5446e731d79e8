//! The dynamic front: `DynTensor` ops checked against finite differences (`gradcheck_dyn`), and
//! its errors.

use devtype::autograd::gradcheck_dyn;
use devtype::nn::Reduction;
use devtype::prelude::*;

fn randn(shape: &[usize], seed: u64) -> DynTensor {
    devtype::manual_seed(seed);
    DynTensor::randn(shape, DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
}

fn check(f: impl Fn(&[DynTensor]) -> devtype::Result<DynTensor>, inputs: &[&DynTensor]) {
    let inputs: Vec<DynTensor> = inputs.iter().map(|t| (*t).clone()).collect();
    if let Err(e) = gradcheck_dyn(f, &inputs) {
        panic!("{e}");
    }
}

#[test]
fn element_wise_broadcasting_and_unary() {
    let (a, b) = (randn(&[2, 3], 1), randn(&[3], 2));
    let p = randn(&[2, 3], 3).abs().unwrap().add_scalar(0.5).unwrap();
    check(|v| v[0].add(&v[1]), &[&a, &b]);
    check(|v| v[0].sub(&v[1]), &[&a, &b]);
    check(|v| v[0].mul(&v[1]), &[&a, &b]);
    check(|v| v[0].div(&v[1]), &[&a, &p]);
    check(|v| v[0].maximum(&v[1]), &[&a, &b]);
    check(|v| v[0].add_relu(&v[1]), &[&a, &b]);
    check(|v| v[0].mul_scalar(3.0)?.add_scalar(1.0), &[&a]);
    check(|v| v[0].tanh(), &[&a]);
    check(|v| v[0].sigmoid(), &[&a]);
    check(|v| v[0].relu(), &[&a]);
    check(|v| v[0].log(), &[&p]);
    check(|v| v[0].sqrt(), &[&p]);
    // Operators panic-free on good input.
    check(|v| Ok(&(&v[0] * &v[1]) - &v[0]), &[&a, &b]);
}

#[test]
fn matmul_linear_reductions_and_shapes() {
    let (x, w, bias) = (randn(&[4, 3], 4), randn(&[5, 3], 5), randn(&[5], 6));
    check(|v| v[0].matmul(&v[1].transpose(0, 1)?), &[&x, &w]);
    check(|v| v[0].linear(&v[1], Some(&v[2])), &[&x, &w, &bias]);
    check(|v| v[0].sum_dims(&[0], true), &[&x]);
    check(|v| v[0].mean_all(), &[&x]);
    check(|v| v[0].max(1).map(|r| r.values), &[&x]);
    check(
        |v| v[0].reshape(&[3, 4])?.permute(&[1, 0])?.narrow(0, 1, 2),
        &[&x],
    );
    check(
        |v| DynTensor::cat(&[&v[0], &v[1]], 0),
        &[&x, &randn(&[2, 3], 7)],
    );
    check(
        |v| DynTensor::stack(&[&v[0], &v[1]], 2),
        &[&x, &randn(&[4, 3], 8)],
    );
    check(|v| v[0].log_softmax(1), &[&x]);
    check(|v| v[0].softmax(0)?.mul(&v[1]), &[&x, &randn(&[4, 3], 9)]);
}

#[test]
fn indexing_and_cross_entropy() {
    let x = randn(&[4, 3], 10);
    let idx = DynTensor::from_vec(vec![2i64, 0, 1, 1], [4, 1], DynDevice::cpu()).unwrap();
    check(|v| v[0].gather(1, &idx), &[&x]);
    let rows = DynTensor::from_vec(vec![3i64, 3, 0], [3], DynDevice::cpu()).unwrap();
    check(|v| v[0].index_select(0, &rows), &[&x]);
    let t = DynTensor::from_vec(vec![2i64, 0, 1, 1], [4], DynDevice::cpu()).unwrap();
    let w = DynTensor::from_vec(vec![0.5f64, 2.0, 1.5], [3], DynDevice::cpu()).unwrap();
    check(
        |v| v[0].cross_entropy_with(&t, Some(&w), Reduction::Mean, -100),
        &[&x],
    );
    check(
        |v| v[0].cross_entropy_with(&t, None, Reduction::None, 0),
        &[&x],
    );
}

#[test]
fn errors_are_values() {
    let x = DynTensor::parameter(DynTensor::ones([2], DynDevice::cpu()).unwrap()).unwrap();
    let y = x.mul_scalar(2.0).unwrap();
    assert_eq!(
        y.backward().unwrap_err().to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    let s = y.sum_all().unwrap();
    s.backward().unwrap();
    assert!(s
        .backward()
        .unwrap_err()
        .to_string()
        .starts_with("Trying to backward through the graph a second time"));
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
    let ints = DynTensor::from_vec(vec![1i64, 2], [2], DynDevice::cpu()).unwrap();
    assert!(DynTensor::parameter(ints).is_err());
    let bad = x
        .add(&DynTensor::ones([3], DynDevice::cpu()).unwrap())
        .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    );
}
