//! The ops added with one declaration for both fronts, against f64 math on fresh random
//! inputs (the parity test shows the fronts agree; this shows they are right).

use devtype::prelude::*;

fn randn(shape: &[usize]) -> (Tensor<Cpu, f64>, Vec<f64>) {
    let t = Tensor::<Cpu>::randn(shape, Cpu).to_dtype::<f64>();
    let v = t.to_vec();
    (t, v)
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "[{k}]: {g} vs {w}"
        );
    }
}

#[test]
fn clamp_and_scalar_arithmetic() {
    let (a, x) = randn(&[5, 7]);
    close(
        &a.clamp(-0.3, 0.4).to_vec(),
        &x.iter().map(|v| v.clamp(-0.3, 0.4)).collect::<Vec<_>>(),
    );
    close(
        &a.clamp_max(0.1).to_vec(),
        &x.iter().map(|v| v.min(0.1)).collect::<Vec<_>>(),
    );
    close(
        &a.sub_scalar(1.25).to_vec(),
        &x.iter().map(|v| v - 1.25).collect::<Vec<_>>(),
    );
    close(
        &a.div_scalar(-4.0).to_vec(),
        &x.iter().map(|v| v / -4.0).collect::<Vec<_>>(),
    );
    let d = a.to_dyn();
    close(
        &d.clamp(-0.3, 0.4).unwrap().to_vec::<f64>().unwrap(),
        &a.clamp(-0.3, 0.4).to_vec(),
    );
}

#[test]
fn tensor_power() {
    let (b, y) = randn(&[4, 3]);
    let base = Tensor::<Cpu>::rand([4, 3], Cpu).to_dtype::<f64>() + 0.5;
    let xb = base.to_vec();
    let want: Vec<f64> = xb.iter().zip(&y).map(|(p, q)| p.powf(*q)).collect();
    close(&base.pow(&b).to_vec(), &want);
}

#[test]
fn transpose_of_a_matrix_and_of_a_vector() {
    let (a, x) = randn(&[3, 5]);
    let t = a.t();
    assert_eq!(t.shape(), &[5, 3]);
    let want: Vec<f64> = (0..5)
        .flat_map(|j| (0..3).map(move |i| (i, j)))
        .map(|(i, j)| x[i * 5 + j])
        .collect();
    close(&t.to_vec(), &want);
    let (v, xv) = randn(&[4]);
    assert_eq!(v.t().to_vec(), xv);
    let err = randn(&[2, 2, 2]).0.try_t().unwrap_err();
    assert_eq!(
        err.to_string(),
        "t() expects a tensor with <= 2 dimensions, but self is 3D"
    );
}

#[test]
fn extremes_over_everything_and_with_the_dim_kept() {
    let (a, x) = randn(&[4, 6]);
    let (mut best, mut at) = (f64::NEG_INFINITY, 0);
    for (k, &v) in x.iter().enumerate() {
        if v > best {
            (best, at) = (v, k);
        }
    }
    assert_eq!(a.max_all().item(), best);
    assert_eq!(a.argmax_all().item(), at as i64);
    assert_eq!(a.argmax_all().shape(), &[] as &[usize]);
    assert_eq!(
        a.to_dyn().argmax_all().unwrap().item::<i64>().unwrap(),
        at as i64
    );
    let (mut low, mut low_at) = (f64::INFINITY, 0);
    for (k, &v) in x.iter().enumerate() {
        if v < low {
            (low, low_at) = (v, k);
        }
    }
    assert_eq!(a.argmin_all().item(), low_at as i64);
    let kept = a.max_keepdim(1).values;
    assert_eq!(kept.shape(), &[4, 1]);
    let rows: Vec<f64> = x
        .chunks(6)
        .map(|r| r.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
        .collect();
    close(&kept.to_vec(), &rows);
    let cols = a.min_keepdim(0).values;
    assert_eq!(cols.shape(), &[1, 6]);
    let want: Vec<f64> = (0..6)
        .map(|j| (0..4).map(|i| x[i * 6 + j]).fold(f64::INFINITY, f64::min))
        .collect();
    close(&cols.to_vec(), &want);
}

#[test]
fn batched_matrix_product() {
    let (a, x) = randn(&[3, 2, 4]);
    let (b, y) = randn(&[3, 4, 5]);
    let got = a.bmm(&b);
    assert_eq!(got.shape(), &[3, 2, 5]);
    let mut want = vec![0.0; 3 * 2 * 5];
    for n in 0..3 {
        for i in 0..2 {
            for j in 0..5 {
                want[n * 10 + i * 5 + j] = (0..4)
                    .map(|k| x[n * 8 + i * 4 + k] * y[n * 20 + k * 5 + j])
                    .sum();
            }
        }
    }
    close(&got.to_vec(), &want);
    // PyTorch's checks: 3-D operands, one batch size, matching inner dims; no broadcasting.
    let e = a.try_bmm(&randn(&[1, 4, 5]).0).unwrap_err().to_string();
    assert_eq!(
        e,
        "Expected size for first two dimensions of batch2 tensor to be: [3, 4] but got: [1, 4]."
    );
    let e = randn(&[2, 4]).0.try_bmm(&b).unwrap_err().to_string();
    assert_eq!(e, "batch1 must be a 3D tensor");
    let d = a.to_dyn().bmm(&b.to_dyn()).unwrap();
    close(&d.to_vec::<f64>().unwrap(), &want);
}

#[test]
fn expand_takes_reshapes_sizes_with_minus_one_keeping_a_size() {
    let (a, x) = randn(&[3, 1]);
    let e = a.expand(&[2, -1, 4]);
    assert_eq!(e.shape(), &[2, 3, 4]);
    let want: Vec<f64> = (0..2)
        .flat_map(|_| x.iter().flat_map(|&v| [v; 4]))
        .collect();
    assert_eq!(e.to_vec(), want);
    assert_eq!(a.to_dyn().expand(&[-1, 5]).unwrap().shape(), &[3, 5]);
    let err = a.try_expand(&[-1, 3, 4]).unwrap_err().to_string();
    assert_eq!(
        err,
        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"
    );
    assert!(a.try_expand(&[4]).is_err());
    assert!(a.try_expand(&[3, -2]).is_err());
}
