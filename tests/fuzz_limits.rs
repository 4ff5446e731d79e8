//! A property test at the limits: random shapes whose sizes mix zeros, small sizes and sizes
//! near `usize::MAX` (as expanded views, so making them allocates nothing), run through every
//! op family on both fronts. The only allowed outcomes are `Ok` with the right shape (and, for
//! small results, the same values on both fronts) or an `Err` of the size/memory/shape kinds.
//! A panic fails the test; an abort or a segfault would kill it.
//!
//! Sizes are drawn so that every element count is 0, at most a few thousand, or at least
//! 2^40 (or overflowing): a result that large can never be allocated here, so each op either
//! finishes on small data or fails at once. Ops that would *read* a huge view into a small
//! result (a full reduction, a product over a huge inner size) are only run on small inputs:
//! they are correct there too, just slow.

mod common;

use common::Rng;
use devtype::prelude::*;
use devtype::Error;
use std::panic::{catch_unwind, AssertUnwindSafe};

const SMALL: [usize; 5] = [0, 1, 2, 3, 5];
const HUGE: [usize; 6] = [1 << 40, 1 << 50, 1 << 59, 1 << 62, 1 << 63, usize::MAX];
/// Results with at most this many elements are compared across the fronts.
const COMPARE_UP_TO: usize = 4096;

fn dim(rng: &mut Rng) -> usize {
    if rng.chance(0.25) {
        rng.pick(&HUGE)
    } else {
        rng.pick(&SMALL)
    }
}

fn shape(rng: &mut Rng) -> Vec<usize> {
    let rank = rng.below(4);
    (0..rank).map(|_| dim(rng)).collect()
}

/// `None` when the element count overflows.
fn numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &s| a.checked_mul(s))
}

fn small(shape: &[usize]) -> bool {
    numel(shape).is_some_and(|n| n <= COMPARE_UP_TO)
}

/// A tensor of `shape`: random values when small, else an expanded view of a 1-element
/// tensor (no memory behind the sizes).
fn tensor(rng: &mut Rng, shape: &[usize]) -> Tensor<Cpu> {
    if small(shape) {
        let n = numel(shape).unwrap();
        let values: Vec<f32> = rng.values(n, -2.0, 2.0).iter().map(|&v| v as f32).collect();
        match Tensor::try_from_vec(values, shape, Cpu) {
            Ok(t) => return t,
            // Empty, but with strides that could not exist: refused at creation.
            Err(e) => {
                assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
                return Tensor::from_vec(vec![0.5f32], [1], Cpu);
            }
        }
    }
    let one = Tensor::from_vec(
        vec![rng.uniform(-2.0, 2.0) as f32],
        vec![1; shape.len()],
        Cpu,
    );
    match one.try_expand(&signed(shape)) {
        Ok(t) => t,
        // A shape too large to exist even as a view: stand in with a 1-element tensor.
        Err(e) => {
            assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
            Tensor::from_vec(vec![0.5f32], [1], Cpu)
        }
    }
}

/// The broadcast of two shapes, independently of the library (`None`: they do not broadcast).
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= rank {
            s[i + s.len() - rank]
        } else {
            1
        }
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// Errors an op at the limits may give: sizes, memory, shapes, dims.
fn allowed(e: &Error) -> bool {
    matches!(
        e,
        Error::SizeOverflow { .. }
            | Error::CpuOutOfMemory { .. }
            | Error::BroadcastMismatch { .. }
            | Error::MatmulShape { .. }
            | Error::BatchMatmulShape { .. }
            | Error::NotAMatrix { .. }
            | Error::DimOutOfRange { .. }
            | Error::ReshapeNumel { .. }
            | Error::ViewNotPossible
            | Error::TooManyDims { .. }
            | Error::IndexOutOfBounds { .. }
            | Error::IndexOutOfRange { .. }
            | Error::Shape(_)
    )
}

/// Runs `op` on both fronts; a panic fails, an `Ok` is checked by `check`.
fn both<T>(
    name: &str,
    typed: impl FnOnce() -> devtype::Result<Tensor<Cpu, T>>,
    dynamic: impl FnOnce() -> devtype::Result<DynTensor>,
    expected_shape: Option<Vec<usize>>,
) where
    T: devtype::Element,
{
    let t = catch_unwind(AssertUnwindSafe(typed))
        .unwrap_or_else(|_| panic!("{name}: the typed front panicked"));
    let d = catch_unwind(AssertUnwindSafe(dynamic))
        .unwrap_or_else(|_| panic!("{name}: the dynamic front panicked"));
    match (&t, &d) {
        (Ok(t), Ok(d)) => {
            assert_eq!(t.shape(), d.shape(), "{name}: fronts disagree on the shape");
            if let Some(s) = &expected_shape {
                assert_eq!(t.shape(), &s[..], "{name}: wrong shape");
            }
            if t.numel() <= COMPARE_UP_TO {
                let (tv, dv) = (t.to_vec(), d.to_vec::<T>().unwrap());
                // Equal, or both NaN (the only values unequal to themselves).
                let nan = |x: &T| x.partial_cmp(x).is_none();
                let same = tv
                    .iter()
                    .zip(&dv)
                    .all(|(a, b)| a == b || (nan(a) && nan(b)));
                assert!(same, "{name}: fronts disagree on the values");
            }
        }
        (Err(a), Err(b)) => {
            assert!(allowed(a), "{name}: unexpected error kind: {a}");
            assert_eq!(a, b, "{name}: fronts disagree on the error");
        }
        (t, d) => panic!(
            "{name}: one front failed: typed {:?}, dynamic {:?}",
            t.as_ref().err(),
            d.as_ref().err()
        ),
    }
}

#[test]
fn every_op_family_at_the_limits_ends_in_ok_or_a_clear_err() {
    let mut rng = Rng::new("fuzz_limits");
    for _ in 0..2000 {
        let (sa, sb) = (shape(&mut rng), shape(&mut rng));
        let (a, b) = (tensor(&mut rng, &sa), tensor(&mut rng, &sb));
        let (da, db) = (a.to_dyn(), b.to_dyn());
        let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
        let out = broadcast(&sa, &sb);

        both("add", || a.try_add(&b), || da.add(&db), out.clone());
        both("mul", || a.try_mul(&b), || da.mul(&db), out.clone());
        both(
            "maximum",
            || a.try_maximum(&b),
            || da.maximum(&db),
            out.clone(),
        );
        both("lt", || a.try_lt(&b), || da.lt(&db), out.clone());
        both("relu", || a.try_relu(), || da.relu(), Some(sa.clone()));
        both("exp", || a.try_exp(), || da.exp(), Some(sa.clone()));
        both(
            "add_scalar",
            || a.try_add_scalar(1.5),
            || da.add_scalar(1.5),
            Some(sa.clone()),
        );
        both(
            "to_dtype",
            || a.try_to_dtype::<f64>(),
            || da.to_dtype(DType::F64),
            Some(sa.clone()),
        );
        both(
            "contiguous",
            || a.try_contiguous(),
            || da.contiguous(),
            Some(sa.clone()),
        );
        both(
            "cat",
            || Tensor::try_cat((&a, &b), 0),
            || DynTensor::cat(&[&da, &db], 0),
            None,
        );
        both(
            "stack",
            || Tensor::try_stack((&a, &a), 0),
            || DynTensor::stack(&[&da, &da], 0),
            Some([vec![2], sa.clone()].concat()),
        );
        match a.try_gt_scalar(0.0) {
            Ok(cond) => both(
                "where",
                || cond.try_where_cond(&a, &b),
                || cond.to_dyn().where_cond(&da, &db),
                broadcast(&sa, &sb).and_then(|s| broadcast(&sa, &s)),
            ),
            Err(e) => assert!(matches!(e, Error::CpuOutOfMemory { .. }), "{e}"),
        }
        let flat: Vec<isize> = vec![-1];
        both(
            "reshape",
            || a.try_reshape(&flat),
            || da.reshape(&flat),
            None,
        );
        both(
            "unsqueeze+expand",
            || {
                a.try_unsqueeze(0)?
                    .try_expand(&signed(&[[1usize << 61].as_slice(), &sa].concat()))
            },
            || {
                da.unsqueeze(0)?
                    .expand(&signed(&[[1usize << 61].as_slice(), &sa].concat()))
            },
            None,
        );
        if !sa.is_empty() {
            both(
                "transpose",
                || a.try_transpose(0, -1),
                || da.transpose(0, -1),
                None,
            );
            both(
                "narrow",
                || a.try_narrow(0, 0, sa[0].min(1)),
                || da.narrow(0, 0, sa[0].min(1)),
                None,
            );
            both(
                "softmax",
                || a.try_softmax(-1),
                || da.softmax(-1),
                Some(sa.clone()),
            );
            let index = Tensor::from_vec(vec![0i64, 0], [2], Cpu);
            both(
                "index_select",
                || a.try_index_select(0, &index),
                || da.index_select(0, &index.to_dyn()),
                None,
            );
            // gather with an index of `a`'s own shape (all zeros, an expanded view).
            let zeros = Tensor::<Cpu, i64>::zeros(vec![1; sa.len()], Cpu);
            if let Ok(gi) = zeros.try_expand(&signed(&sa)) {
                both(
                    "gather",
                    || a.try_gather(-1, &gi),
                    || da.gather(-1, &gi.to_dyn()),
                    Some(sa.clone()),
                );
            }
        }
        // Products: run when the inner size is small or the result too large to exist.
        if !sa.is_empty() && !sb.is_empty() {
            let k_small = sa.last().is_some_and(|&k| k <= COMPARE_UP_TO);
            if k_small {
                both("matmul", || a.try_matmul(&b), || da.matmul(&db), None);
                let w = b.reshape(&[-1, 1]);
                if w.shape()[0] > 0 {
                    both(
                        "linear",
                        || a.try_linear(w.t(), None),
                        || da.linear(&w.t().to_dyn(), None),
                        None,
                    );
                }
            }
        }
        // Reductions read every element: small inputs only.
        if small(&sa) {
            both("sum", || a.try_sum_all(), || da.sum_all(), Some(vec![]));
            if !sa.is_empty() && sa[0] > 0 {
                both(
                    "max",
                    || a.try_max(0).map(|r| r.values),
                    || da.max(0).map(|r| r.values),
                    None,
                );
                both("argmax", || a.try_argmax(0), || da.argmax(0), None);
            }
        }
        // Printing reads only the summarised elements, whatever the size.
        let printed = catch_unwind(AssertUnwindSafe(|| (a.to_string(), da.to_string())))
            .unwrap_or_else(|_| panic!("printing {sa:?} panicked"));
        assert_eq!(printed.0, printed.1);
        assert!(printed.0.len() < 4096, "printing {sa:?} was not summarised");
    }
}

/// Sizes as `expand` takes them (PyTorch's int64 sizes): past `isize::MAX` they saturate, which
/// is still far past the largest tensor.
fn signed(shape: &[usize]) -> Vec<isize> {
    shape
        .iter()
        .map(|&s| s.min(isize::MAX as usize) as isize)
        .collect()
}
