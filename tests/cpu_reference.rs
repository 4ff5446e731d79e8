//! An independent f64 reference for the CPU tests: a row-major tensor (`Ref`) whose ops are
//! plain loops over multi-indices, a small PRNG, and tolerance checks.
//!
//! The other `cpu_*` test files include this file as a module (`#[path = "cpu_reference.rs"]`);
//! run on its own, it checks the reference against results worked out by hand, so a bug in the
//! reference cannot hide a bug in devtype.
#![allow(dead_code)]

use devtype::{Cpu, Element, Tensor};

#[path = "common/mod.rs"]
mod common;

#[allow(unused_imports)] // not every file that includes the reference reads DynTensors
pub use common::{values_f64, Rng};

/// Row-major strides.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The multi-index of row-major position `i`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = i % shape[d];
            i /= shape[d];
        }
    }
    idx
}

/// Broadcast shape by NumPy's rules, or `None`.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out.push(if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        });
    }
    Some(out)
}

/// Calls `f(idx)` for every multi-index of `shape` in row-major order.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    let n: usize = shape.iter().product();
    let mut idx = vec![0; shape.len()];
    for _ in 0..n {
        f(&idx);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn dot(idx: &[usize], strides: &[usize]) -> usize {
    idx.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// A tensor of f64 values in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Ref {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Ref {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Ref {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "reference shape"
        );
        Ref {
            shape: shape.to_vec(),
            data,
        }
    }

    pub fn random(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Ref {
        let n = shape.iter().product();
        Ref::new(shape, rng.values(n, lo, hi))
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// The values rounded to `E` (what a `Tensor<_, E>` made from them holds).
    pub fn rounded<E: Element>(&self) -> Ref {
        self.map(|v| E::from_f64(v).to_f64())
    }

    pub fn get(&self, idx: &[usize]) -> f64 {
        self.data[dot(idx, &strides(&self.shape))]
    }

    pub fn map(&self, mut f: impl FnMut(f64) -> f64) -> Ref {
        Ref::new(&self.shape, self.data.iter().map(|&v| f(v)).collect())
    }

    /// Strides that read `self` at the indices of a broadcast result of rank `rank`: size-1
    /// and missing leading dims get stride 0.
    fn broadcast_strides(&self, rank: usize) -> Vec<usize> {
        let st = strides(&self.shape);
        let lead = rank - self.shape.len();
        (0..rank)
            .map(|d| {
                if d < lead || self.shape[d - lead] == 1 {
                    0
                } else {
                    st[d - lead]
                }
            })
            .collect()
    }

    /// A new tensor of `shape` whose element at `idx` is `self.data[dot(idx, src_strides) + offset]`.
    fn gather_by(&self, shape: &[usize], src_strides: &[usize], offset: usize) -> Ref {
        let mut data = Vec::with_capacity(shape.iter().product());
        for_each_index(shape, |idx| {
            data.push(self.data[offset + dot(idx, src_strides)])
        });
        Ref::new(shape, data)
    }

    /// `f(a, b)` element-wise with broadcasting.
    pub fn zip(&self, other: &Ref, mut f: impl FnMut(f64, f64) -> f64) -> Ref {
        let shape =
            broadcast_shape(&self.shape, &other.shape).expect("reference: shapes broadcast");
        let (sa, sb) = (
            self.broadcast_strides(shape.len()),
            other.broadcast_strides(shape.len()),
        );
        let mut data = Vec::with_capacity(shape.iter().product());
        for_each_index(&shape, |idx| {
            data.push(f(self.data[dot(idx, &sa)], other.data[dot(idx, &sb)]))
        });
        Ref::new(&shape, data)
    }

    /// `cond ? a : b` with broadcasting of all three (cond non-zero is true).
    pub fn where_cond(cond: &Ref, a: &Ref, b: &Ref) -> Ref {
        let shape =
            broadcast_shape(&broadcast_shape(&cond.shape, &a.shape).unwrap(), &b.shape).unwrap();
        let r = shape.len();
        let (sc, sa, sb) = (
            cond.broadcast_strides(r),
            a.broadcast_strides(r),
            b.broadcast_strides(r),
        );
        let mut data = Vec::new();
        for_each_index(&shape, |idx| {
            data.push(if cond.data[dot(idx, &sc)] != 0.0 {
                a.data[dot(idx, &sa)]
            } else {
                b.data[dot(idx, &sb)]
            })
        });
        Ref::new(&shape, data)
    }

    pub fn expand(&self, shape: &[usize]) -> Ref {
        self.gather_by(shape, &self.broadcast_strides(shape.len()), 0)
    }

    pub fn permute(&self, order: &[usize]) -> Ref {
        let st = strides(&self.shape);
        let shape: Vec<usize> = order.iter().map(|&d| self.shape[d]).collect();
        let src: Vec<usize> = order.iter().map(|&d| st[d]).collect();
        self.gather_by(&shape, &src, 0)
    }

    pub fn transpose(&self, d0: usize, d1: usize) -> Ref {
        let mut order: Vec<usize> = (0..self.shape.len()).collect();
        order.swap(d0, d1);
        self.permute(&order)
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Ref {
        let st = strides(&self.shape);
        let mut shape = self.shape.clone();
        shape[dim] = len;
        let offset = if len == 0 { 0 } else { start * st[dim] };
        self.gather_by(&shape, &st, offset)
    }

    pub fn reshape(&self, shape: &[usize]) -> Ref {
        Ref::new(shape, self.data.clone())
    }

    /// Folds `dims` (all when empty) with `f` over the values of each output, in index order.
    pub fn reduce(&self, dims: &[usize], keepdim: bool, f: impl Fn(&[f64]) -> f64) -> Ref {
        let rank = self.shape.len();
        let reduced = |d: usize| dims.is_empty() || dims.contains(&d);
        let kept_shape: Vec<usize> = (0..rank)
            .map(|d| if reduced(d) { 1 } else { self.shape[d] })
            .collect();
        let kept_strides: Vec<usize> = strides(&kept_shape)
            .into_iter()
            .enumerate()
            .map(|(d, s)| if reduced(d) { 0 } else { s })
            .collect();
        let outputs: usize = kept_shape.iter().product();
        let mut groups: Vec<Vec<f64>> = vec![Vec::new(); outputs];
        let mut i = 0;
        for_each_index(&self.shape, |idx| {
            groups[dot(idx, &kept_strides)].push(self.data[i]);
            i += 1;
        });
        let out_shape: Vec<usize> = (0..rank)
            .filter(|&d| keepdim || !reduced(d))
            .map(|d| kept_shape[d])
            .collect();
        Ref::new(&out_shape, groups.iter().map(|g| f(g)).collect())
    }

    /// `torch.matmul` semantics: vectors promoted and their dims removed again, batch dims
    /// broadcast.
    pub fn matmul(&self, other: &Ref) -> Ref {
        let a = if self.shape.len() == 1 {
            self.reshape(&[1, self.shape[0]])
        } else {
            self.clone()
        };
        let b = if other.shape.len() == 1 {
            other.reshape(&[other.shape[0], 1])
        } else {
            other.clone()
        };
        let (ra, rb) = (a.shape.len(), b.shape.len());
        let (m, k) = (a.shape[ra - 2], a.shape[ra - 1]);
        let (k2, n) = (b.shape[rb - 2], b.shape[rb - 1]);
        assert_eq!(k, k2, "reference matmul inner sizes");
        let batch =
            broadcast_shape(&a.shape[..ra - 2], &b.shape[..rb - 2]).expect("batch dims broadcast");
        let nb = batch.len();
        // Strides over [batch..., row, col] for each operand, broadcast batch dims at 0.
        let full_strides = |t: &Ref| -> Vec<usize> {
            let batch_only = Ref {
                shape: t.shape[..t.shape.len() - 2].to_vec(),
                data: Vec::new(),
            };
            let mut st = batch_only.broadcast_strides(nb);
            let own = strides(&t.shape);
            // The batch-only strides count matrices; scale them to elements.
            let per_matrix = t.shape[t.shape.len() - 2] * t.shape[t.shape.len() - 1];
            for s in st.iter_mut() {
                *s *= per_matrix;
            }
            st.extend(own[t.shape.len() - 2..].iter().copied());
            st
        };
        let (sa, sb) = (full_strides(&a), full_strides(&b));
        let mut full = batch.clone();
        full.extend([m, n]);
        let mut data = Vec::with_capacity(full.iter().product());
        let mut ia = vec![0; nb + 2];
        let mut ib = vec![0; nb + 2];
        for_each_index(&full, |idx| {
            ia[..nb].copy_from_slice(&idx[..nb]);
            ib[..nb].copy_from_slice(&idx[..nb]);
            ia[nb] = idx[nb];
            ib[nb + 1] = idx[nb + 1];
            let mut acc = 0.0;
            for p in 0..k {
                ia[nb + 1] = p;
                ib[nb] = p;
                acc += a.data[dot(&ia, &sa)] * b.data[dot(&ib, &sb)];
            }
            data.push(acc);
        });
        let mut out_shape = batch;
        if self.shape.len() > 1 {
            out_shape.push(m);
        }
        if other.shape.len() > 1 {
            out_shape.push(n);
        }
        Ref::new(&out_shape, data)
    }

    /// Sum of `|a_ip * b_pj|` for each output: the scale of matmul's rounding error.
    pub fn matmul_abs(&self, other: &Ref) -> Ref {
        self.map(f64::abs).matmul(&other.map(f64::abs))
    }

    /// Softmax (or log-softmax) over `dim`, computed from the definition row by row.
    pub fn softmax(&self, dim: usize, log: bool) -> Ref {
        let st = strides(&self.shape);
        let mut outer = self.shape.clone();
        outer[dim] = 1;
        let mut data = vec![0.0; self.numel()];
        for_each_index(&outer, |idx| {
            let base = dot(idx, &st);
            let row: Vec<f64> = (0..self.shape[dim])
                .map(|j| self.data[base + j * st[dim]])
                .collect();
            let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
            for (j, x) in row.iter().enumerate() {
                data[base + j * st[dim]] = if log { x - lse } else { (x - lse).exp() };
            }
        });
        Ref::new(&self.shape, data)
    }

    pub fn cat(list: &[&Ref], dim: usize) -> Ref {
        let mut shape = list[0].shape.clone();
        shape[dim] = list.iter().map(|r| r.shape[dim]).sum();
        let mut data = Vec::with_capacity(shape.iter().product());
        let mut idx2 = vec![0; shape.len()];
        for_each_index(&shape, |idx| {
            idx2.copy_from_slice(idx);
            let mut k = 0;
            while idx2[dim] >= list[k].shape[dim] {
                idx2[dim] -= list[k].shape[dim];
                k += 1;
            }
            data.push(list[k].get(&idx2));
        });
        Ref::new(&shape, data)
    }

    pub fn stack(list: &[&Ref], dim: usize) -> Ref {
        let unsqueezed: Vec<Ref> = list
            .iter()
            .map(|r| {
                let mut s = r.shape.clone();
                s.insert(dim, 1);
                r.reshape(&s)
            })
            .collect();
        Ref::cat(&unsqueezed.iter().collect::<Vec<_>>(), dim)
    }

    pub fn index_select(&self, dim: usize, index: &[usize]) -> Ref {
        let st = strides(&self.shape);
        let mut shape = self.shape.clone();
        shape[dim] = index.len();
        let mut data = Vec::with_capacity(shape.iter().product());
        for_each_index(&shape, |idx| {
            let off = dot(idx, &st) - idx[dim] * st[dim] + index[idx[dim]] * st[dim];
            data.push(self.data[off]);
        });
        Ref::new(&shape, data)
    }

    /// `out[i..] = self[i.. with index[i..] at dim]` (index holds non-negative integers).
    pub fn gather(&self, dim: usize, index: &Ref) -> Ref {
        let st = strides(&self.shape);
        let mut data = Vec::with_capacity(index.numel());
        let mut i = 0;
        for_each_index(&index.shape, |idx| {
            let off = dot(idx, &st) - idx[dim] * st[dim] + index.data[i] as usize * st[dim];
            data.push(self.data[off]);
            i += 1;
        });
        Ref::new(&index.shape, data)
    }
}

/// A CPU tensor of `E` holding the reference's values.
pub fn tensor<E: Element>(r: &Ref) -> Tensor<Cpu, E> {
    Tensor::from_vec(
        r.data.iter().map(|&v| E::from_f64(v)).collect(),
        &r.shape,
        Cpu,
    )
}

/// A tensor's values as a reference (shape and row-major values).
pub fn to_ref<E: Element>(t: &Tensor<Cpu, E>) -> Ref {
    Ref::new(
        t.shape(),
        t.to_vec().into_iter().map(|v| v.to_f64()).collect(),
    )
}

/// Element type of a test: how closely a result must match the f64 reference.
pub trait Precision: Element {
    /// Tolerance of one correctly rounded op, a few units in the last place (relative).
    const ELEMENTWISE: f64;
    /// Tolerance of long sums (reductions, matmul), relative to the sum of the magnitudes of
    /// the terms: cancellation makes an error relative to the result itself meaningless.
    const ACCUMULATED: f64;
}

impl Precision for f32 {
    // f32 has 24-bit mantissas (6e-8); libm's expf/tanhf are within 1-2 ulp and sigmoid
    // composes three ops: 4e-6 leaves margin without hiding a wrong formula.
    const ELEMENTWISE: f64 = 4e-6;
    // A sum of up to ~1e5 terms in f32 has a random-walk error near sqrt(n) * 6e-8 < 2e-5.
    const ACCUMULATED: f64 = 1e-4;
}

impl Precision for f64 {
    const ELEMENTWISE: f64 = 1e-13;
    const ACCUMULATED: f64 = 1e-11;
}

fn same(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
}

/// Element-wise comparison: `|got - want| <= tol * max(|want|, floor)`; NaN matches NaN,
/// infinities must match exactly. `what` names the case in the failure message.
#[track_caller]
pub fn assert_close(got: &Ref, want: &Ref, tol: f64, floor: f64, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    for (i, (&g, &w)) in got.data.iter().zip(&want.data).enumerate() {
        let ok = same(g, w) || (w.is_finite() && (g - w).abs() <= tol * w.abs().max(floor));
        assert!(
            ok,
            "{what}: element {i} {:?}: got {g}, want {w} (tol {tol})",
            unravel(i, &got.shape)
        );
    }
}

/// Comparison for accumulated results: `|got - want| <= tol * scale` per element, where `scale`
/// is the sum of the magnitudes of the terms (at least `f64::MIN_POSITIVE`).
#[track_caller]
pub fn assert_close_scaled(got: &Ref, want: &Ref, scale: &Ref, tol: f64, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    for (i, ((&g, &w), &s)) in got.data.iter().zip(&want.data).zip(&scale.data).enumerate() {
        let ok = same(g, w) || (g - w).abs() <= tol * s.max(1e-300);
        assert!(
            ok,
            "{what}: element {i} {:?}: got {g}, want {w} (scale {s}, tol {tol})",
            unravel(i, &got.shape)
        );
    }
}

/// Exact comparison (views, copies, selections move values without arithmetic).
#[track_caller]
pub fn assert_exact(got: &Ref, want: &Ref, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    for (i, (&g, &w)) in got.data.iter().zip(&want.data).enumerate() {
        assert!(
            same(g, w),
            "{what}: element {i} {:?}: got {g}, want {w}",
            unravel(i, &got.shape)
        );
    }
}

// The reference itself, against results worked out by hand.
#[cfg(test)]
mod self_check {
    use super::*;

    #[test]
    fn reference_indexing() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(unravel(23, &[2, 3, 4]), vec![1, 2, 3]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
        assert_eq!(broadcast_shape(&[4, 1, 3], &[2, 1]), Some(vec![4, 2, 3]));
        assert_eq!(broadcast_shape(&[3], &[4]), None);
        assert_eq!(broadcast_shape(&[], &[2]), Some(vec![2]));
    }

    #[test]
    fn reference_ops() {
        let a = Ref::new(&[2, 3], vec![1., 2., 3., 4., 5., 6.]);
        assert_eq!(
            a.transpose(0, 1),
            Ref::new(&[3, 2], vec![1., 4., 2., 5., 3., 6.])
        );
        assert_eq!(a.narrow(1, 1, 2), Ref::new(&[2, 2], vec![2., 3., 5., 6.]));
        let row = Ref::new(&[3], vec![10., 20., 30.]);
        assert_eq!(
            a.zip(&row, |x, y| x + y),
            Ref::new(&[2, 3], vec![11., 22., 33., 14., 25., 36.])
        );
        let col = Ref::new(&[2, 1], vec![1., 2.]);
        assert_eq!(
            col.zip(&row, |x, y| x * y),
            Ref::new(&[2, 3], vec![10., 20., 30., 20., 40., 60.])
        );
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        assert_eq!(a.reduce(&[0], false, sum), Ref::new(&[3], vec![5., 7., 9.]));
        assert_eq!(a.reduce(&[1], true, sum), Ref::new(&[2, 1], vec![6., 15.]));
        assert_eq!(a.reduce(&[], false, sum), Ref::new(&[], vec![21.]));
        let b = Ref::new(&[3, 2], vec![1., 0., 0., 1., 1., 1.]);
        assert_eq!(a.matmul(&b), Ref::new(&[2, 2], vec![4., 5., 10., 11.]));
        assert_eq!(
            a.matmul(&Ref::new(&[3], vec![1., 1., 1.])),
            Ref::new(&[2], vec![6., 15.])
        );
        assert_eq!(
            Ref::new(&[2], vec![1., 2.]).matmul(&Ref::new(&[2], vec![3., 4.])),
            Ref::new(&[], vec![11.])
        );
        let batched =
            Ref::new(&[2, 1, 2], vec![1., 2., 3., 4.]).matmul(&Ref::new(&[2, 1], vec![1., 1.]));
        assert_eq!(batched, Ref::new(&[2, 1, 1], vec![3., 7.]));
        assert_eq!(a.permute(&[1, 0]), a.transpose(0, 1));
        assert_eq!(Ref::cat(&[&a, &a.narrow(0, 0, 1)], 0).shape, vec![3, 3]);
        assert_eq!(
            Ref::stack(&[&row, &row], 1),
            Ref::new(&[3, 2], vec![10., 10., 20., 20., 30., 30.])
        );
        assert_eq!(
            a.index_select(1, &[2, 0]),
            Ref::new(&[2, 2], vec![3., 1., 6., 4.])
        );
        let idx = Ref::new(&[2, 1], vec![2., 0.]);
        assert_eq!(a.gather(1, &idx), Ref::new(&[2, 1], vec![3., 4.]));
        let s = Ref::new(&[2], vec![0., 0.]).softmax(0, false);
        assert_eq!(s, Ref::new(&[2], vec![0.5, 0.5]));
        let c = Ref::new(&[3], vec![1., 0., 1.]);
        assert_eq!(
            Ref::where_cond(&c, &row, &Ref::new(&[], vec![-1.])),
            Ref::new(&[3], vec![10., -1., 30.])
        );
        assert_eq!(
            Ref::new(&[1, 3], vec![1., 2., 3.]).expand(&[2, 3]).data,
            vec![1., 2., 3., 1., 2., 3.]
        );
    }
}
