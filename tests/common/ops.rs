//! The op table (`devtype::op_table()`, made from the declarations) as the tests read it:
//! one dynamic-front case per op, shared by the suites that run every op (`half_ops`,
//! `cuda_ops`, `cuda_half`, `reference`), and the check that a suite's list of ops is the
//! table's, so a newly declared op fails each suite that does not run it, by name, until it is
//! added here (or to the suite's own list) or its declaration says why not
//! (`untested(suite: "why")`).
//!
//! Included with `#[path = "common/ops.rs"] mod ops;`.
#![allow(dead_code)]

use devtype::nn::Reduction;
use devtype::{DType, DynDevice, DynTensor, IndexItem, OpInfo, Result};
use std::collections::BTreeSet;

/// The spacing of `dtype`'s values at 1: the suites' tolerances are a few of these.
pub fn table_eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        DType::F32 => f32::EPSILON as f64,
        DType::F16 => 9.765625e-4,
        _ => 7.8125e-3,
    }
}

/// The suites that read the table; an `untested(..)` naming another is a mistake.
pub const SUITES: &[&str] = &[
    "parity",
    "gradcheck",
    "reference",
    "half_ops",
    "cuda_ops",
    "cuda_half",
];

/// Checks that `covered` (the names of the ops suite `suite` runs) is every op of the table
/// but those `skip` excludes (returning the suite's reason, such as "no gradient") and those
/// whose declaration says `untested(suite: ..)`; prints each skipped op with its reason.
#[track_caller]
pub fn assert_covers<'a>(
    suite: &str,
    covered: impl IntoIterator<Item = &'a str>,
    skip: impl Fn(&OpInfo) -> Option<&'static str>,
) {
    assert!(SUITES.contains(&suite), "unknown suite {suite}");
    let covered: BTreeSet<&str> = covered.into_iter().collect();
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    for op in devtype::op_table() {
        for (s, _) in op.untested {
            assert!(
                SUITES.contains(s),
                "{}: untested({s}: ..) names no test suite (the suites: {SUITES:?})",
                op.name
            );
        }
        match op.untested_in(suite).or_else(|| skip(op)) {
            Some(why) => {
                println!("{suite}: skips {}: {why}", op.name);
                if covered.contains(op.name) {
                    stale.push(op.name);
                }
            }
            None if !covered.contains(op.name) => missing.push(op.name),
            None => {}
        }
    }
    let known: BTreeSet<&str> = devtype::op_table().map(|op| op.name).collect();
    let unknown: Vec<_> = covered.difference(&known).collect();
    assert!(
        missing.is_empty(),
        "{suite}: ops in the op table that this suite does not run: {missing:?} (add a case, \
         or say why in the declaration: `untested({suite}: \"..\")`)"
    );
    assert!(
        stale.is_empty(),
        "{suite}: runs {stale:?}, which the table says it skips"
    );
    assert!(
        unknown.is_empty(),
        "{suite}: runs {unknown:?}, which are not in the op table"
    );
}

/// The inputs of one run of the cases: floating-point tensors of one dtype, index and mask
/// tensors, all on one device.
pub struct Inputs {
    pub device: DynDevice,
    pub dtype: DType,
    /// `[3, 4]`.
    pub a: DynTensor,
    /// `[3, 4]`.
    pub b: DynTensor,
    /// `[3, 4]`, in [0.5, 1.5).
    pub pos: DynTensor,
    /// `[4, 5]`.
    pub m: DynTensor,
    /// `[2, 3, 4]`.
    pub bat1: DynTensor,
    /// `[2, 4, 5]`.
    pub bat2: DynTensor,
    /// `[5, 4]`.
    pub w: DynTensor,
    /// `[5]`.
    pub bias: DynTensor,
    /// `i64` `[4]` in 0..3.
    pub idx: DynTensor,
    /// `i64` `[3, 4]` in 0..3.
    pub gidx: DynTensor,
    /// `i64` `[3]` in 0..4.
    pub targets: DynTensor,
    /// `bool` `[3, 4]`.
    pub mask: DynTensor,
}

/// The values of one draw, converted to any dtype and device with [`Draw::inputs`], so that
/// two runs see the same values.
pub struct Draw {
    floats: Vec<(Vec<f32>, Vec<usize>)>,
}

/// A small deterministic generator (the values need not be good, only varied).
fn uniform(state: &mut u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (*state >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

impl Draw {
    /// Fresh values from `seed`.
    pub fn new(seed: u64) -> Draw {
        let mut s = seed ^ 0x9E37_79B9_7F4A_7C15;
        let shapes: [(&[usize], f32, f32); 8] = [
            (&[3, 4], -2.0, 2.0),
            (&[3, 4], -2.0, 2.0),
            (&[3, 4], 0.5, 1.5),
            (&[4, 5], -2.0, 2.0),
            (&[2, 3, 4], -2.0, 2.0),
            (&[2, 4, 5], -2.0, 2.0),
            (&[5, 4], -2.0, 2.0),
            (&[5], -2.0, 2.0),
        ];
        Draw {
            floats: shapes
                .iter()
                .map(|(shape, lo, hi)| {
                    let n = shape.iter().product();
                    (uniform(&mut s, n, *lo, *hi), shape.to_vec())
                })
                .collect(),
        }
    }

    /// The drawn values in `dtype` on `device` (each rounded once from its `f32` value).
    pub fn inputs(&self, dtype: DType, device: DynDevice) -> Inputs {
        self.rounded_inputs(dtype, dtype, device)
    }

    /// The drawn values rounded to `round`, then converted to `dtype` (exactly, when `dtype`
    /// is the wider type), on `device`.
    pub fn rounded_inputs(&self, round: DType, dtype: DType, device: DynDevice) -> Inputs {
        let f = |k: usize| {
            let (v, shape) = &self.floats[k];
            DynTensor::from_vec(v.clone(), shape.clone(), DynDevice::cpu())
                .and_then(|t| t.to_dtype(round))
                .and_then(|t| t.to_dtype(dtype))
                .and_then(|t| t.to(device))
                .unwrap()
        };
        let long = |v: Vec<i64>, shape: &[usize]| {
            DynTensor::from_vec(v, shape.to_vec(), DynDevice::cpu())
                .and_then(|t| t.to(device))
                .unwrap()
        };
        let mask = DynTensor::from_vec(
            self.floats[1]
                .0
                .iter()
                .map(|&v| v > 0.0)
                .collect::<Vec<bool>>(),
            vec![3, 4],
            DynDevice::cpu(),
        )
        .and_then(|t| t.to(device))
        .unwrap();
        Inputs {
            device,
            dtype,
            a: f(0),
            b: f(1),
            pos: f(2),
            m: f(3),
            bat1: f(4),
            bat2: f(5),
            w: f(6),
            bias: f(7),
            idx: long(vec![2, 0, 1, 2], &[4]),
            gidx: long(vec![0, 2, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2], &[3, 4]),
            targets: long(vec![1, 0, 3], &[3]),
            mask,
        }
    }
}

/// One op's run: its result tensors (a `(values, indices)` pair gives both).
pub type Case = fn(&Inputs) -> Result<Vec<DynTensor>>;

fn one(t: Result<DynTensor>) -> Result<Vec<DynTensor>> {
    t.map(|t| vec![t])
}

fn pair(p: Result<devtype::ValuesIndices<DynTensor, DynTensor>>) -> Result<Vec<DynTensor>> {
    p.map(|p| vec![p.values, p.indices])
}

/// One case per op of the table, by name, on the dynamic front.
pub fn cases() -> Vec<(&'static str, Case)> {
    vec![
        // Unary.
        ("neg", |i| one(i.a.neg())),
        ("relu", |i| one(i.a.relu())),
        ("abs", |i| one(i.a.abs())),
        ("square", |i| one(i.a.square())),
        ("exp", |i| one(i.a.exp())),
        ("log", |i| one(i.pos.log())),
        ("sqrt", |i| one(i.pos.sqrt())),
        ("tanh", |i| one(i.a.tanh())),
        ("sigmoid", |i| one(i.a.sigmoid())),
        ("reciprocal", |i| one(i.pos.reciprocal())),
        ("erf", |i| one(i.a.erf())),
        // Binary, with a broadcast row.
        ("add", |i| one(i.a.add(&i.b))),
        ("sub", |i| one(i.a.sub(&i.b.narrow(0, 1, 1)?))),
        ("mul", |i| one(i.a.mul(&i.b))),
        ("div", |i| one(i.a.div(&i.pos))),
        ("maximum", |i| one(i.a.maximum(&i.b))),
        ("minimum", |i| one(i.a.minimum(&i.b))),
        ("pow", |i| one(i.pos.pow(&i.b))),
        ("add_relu", |i| one(i.a.add_relu(&i.b))),
        // With scalars.
        ("add_scalar", |i| one(i.a.add_scalar(1.5))),
        ("sub_scalar", |i| one(i.a.sub_scalar(1.5))),
        ("mul_scalar", |i| one(i.a.mul_scalar(-2.0))),
        ("div_scalar", |i| one(i.a.div_scalar(4.0))),
        ("pow_scalar", |i| one(i.pos.pow_scalar(1.5))),
        ("clamp_min", |i| one(i.a.clamp_min(-0.2))),
        ("clamp_max", |i| one(i.a.clamp_max(0.3))),
        ("clamp", |i| one(i.a.clamp(-0.2, 0.3))),
        // Comparisons.
        ("eq", |i| one(i.a.eq(&i.a.relu()?))),
        ("ne", |i| one(i.a.ne(&i.a.relu()?))),
        ("lt", |i| one(i.a.lt(&i.b))),
        ("le", |i| one(i.a.le(&i.b))),
        ("gt", |i| one(i.a.gt(&i.b))),
        ("ge", |i| one(i.a.ge(&i.b))),
        ("eq_scalar", |i| one(i.idx.eq_scalar(2))),
        ("ne_scalar", |i| one(i.idx.ne_scalar(2))),
        ("lt_scalar", |i| one(i.a.lt_scalar(0.1))),
        ("le_scalar", |i| one(i.a.le_scalar(0.1))),
        ("gt_scalar", |i| one(i.a.gt_scalar(0.1))),
        ("ge_scalar", |i| one(i.a.ge_scalar(0.1))),
        // Reductions.
        ("sum_dims", |i| one(i.bat1.sum_dims(&[0, 2], true))),
        ("sum_dim", |i| one(i.a.sum_dim(1))),
        ("sum", |i| one(i.a.sum())),
        ("sum_all", |i| one(i.bat1.sum_all())),
        ("mean_dims", |i| one(i.bat1.mean_dims(&[1], true))),
        ("mean_dim", |i| one(i.a.mean_dim(0))),
        ("mean", |i| one(i.a.mean())),
        ("mean_all", |i| one(i.bat1.mean_all())),
        ("max", |i| pair(i.a.max(1))),
        ("max_keepdim", |i| pair(i.a.max_keepdim(0))),
        ("max_all", |i| one(i.a.max_all())),
        ("min", |i| pair(i.a.min(1))),
        ("min_keepdim", |i| pair(i.a.min_keepdim(1))),
        ("min_all", |i| one(i.a.min_all())),
        ("argmax", |i| one(i.a.argmax(1))),
        ("argmin", |i| one(i.a.argmin(0))),
        ("argmax_all", |i| one(i.a.argmax_all())),
        ("argmin_all", |i| one(i.a.argmin_all())),
        // Along a dim.
        ("cumsum", |i| one(i.a.cumsum(1))),
        ("sort", |i| pair(i.a.sort(1, false))),
        ("argsort", |i| one(i.a.argsort(0, true))),
        ("topk", |i| pair(i.a.topk(2, 1, true, true))),
        ("masked_fill", |i| one(i.a.masked_fill(&i.mask, 0.25))),
        ("index", |i| {
            one(i
                .bat1
                .index(&[IndexItem::Select(-1), IndexItem::Slice(Some(1), None)]))
        }),
        // Shapes.
        ("reshape", |i| one(i.a.t()?.reshape(&[2, -1]))),
        ("view", |i| one(i.a.view(&[4, 3]))),
        ("transpose", |i| one(i.bat1.transpose(0, 2))),
        ("t", |i| one(i.a.t())),
        ("permute", |i| one(i.bat1.permute(&[2, 0, 1]))),
        ("unsqueeze", |i| one(i.a.unsqueeze(1))),
        ("squeeze", |i| one(i.a.unsqueeze(0)?.squeeze(0))),
        ("flatten", |i| one(i.bat1.flatten(0, 1))),
        ("narrow", |i| one(i.a.narrow(1, 1, 2))),
        ("expand", |i| one(i.bias.expand(&[2, 5]))),
        ("contiguous", |i| one(i.a.t()?.contiguous())),
        ("slice_scatter", |i| {
            one(i.a.slice_scatter(&i.b.narrow(1, 0, 2)?, 1, 1, 3))
        }),
        ("select_scatter", |i| {
            one(i.a.select_scatter(&i.b.narrow(0, 0, 1)?.squeeze(0)?, 0, -1))
        }),
        // Products, softmax, indexing.
        ("matmul", |i| one(i.a.matmul(&i.m))),
        ("bmm", |i| one(i.bat1.bmm(&i.bat2))),
        ("linear", |i| one(i.a.linear(&i.w, Some(&i.bias)))),
        ("softmax", |i| one(i.a.softmax(1))),
        ("log_softmax", |i| one(i.a.log_softmax(0))),
        ("gather", |i| one(i.a.gather(0, &i.gidx))),
        ("index_select", |i| one(i.a.index_select(1, &i.idx))),
        // Convolutions and pooling: `bat1` as one image of 2 channels, `bat2` as an unbatched
        // one of 2 channels.
        ("conv2d", |i| {
            let x = i.bat1.reshape(&[1, 2, 3, 4])?;
            let w = i.m.narrow(1, 0, 2)?.reshape(&[2, 1, 2, 2])?;
            let b = i.bias.narrow(0, 0, 2)?;
            one(x.conv2d(&w, Some(&b), (1, 2), (1, 1), (1, 1), 2))
        }),
        ("conv1d", |i| {
            let w = i.m.narrow(1, 0, 3)?.reshape(&[2, 3, 2])?;
            one(i.bat1.conv1d(&w, None, 1, 1, 2, 1))
        }),
        ("max_pool2d", |i| {
            one(i.bat2.max_pool2d((2, 3), (1, 2), (1, 1), (1, 1), false))
        }),
        ("max_pool2d_with_indices", |i| {
            pair(
                i.bat1
                    .max_pool2d_with_indices((2, 2), (1, 1), (1, 0), (1, 2), true),
            )
        }),
        ("avg_pool2d", |i| {
            one(i.bat2.avg_pool2d((3, 2), (2, 1), (1, 0), true, false))
        }),
        ("adaptive_avg_pool2d", |i| {
            one(i.bat2.adaptive_avg_pool2d((3, 2)))
        }),
        // Losses.
        ("cross_entropy", |i| one(i.a.cross_entropy(&i.targets))),
        ("cross_entropy_with", |i| {
            let weight = i.pos.narrow(0, 0, 1)?.reshape(&[4])?;
            one(i
                .a
                .cross_entropy_with(&i.targets, Some(&weight), Reduction::Sum, 0))
        }),
        ("l1_loss", |i| one(i.a.l1_loss(&i.b, Reduction::Mean))),
        ("smooth_l1_loss", |i| {
            one(i.a.smooth_l1_loss(&i.b, Reduction::None, 0.5))
        }),
        ("huber_loss", |i| {
            one(i.a.huber_loss(&i.b, Reduction::Sum, 0.7))
        }),
        ("binary_cross_entropy_with_logits", |i| {
            let target = i.pos.mul_scalar(0.5)?;
            one(i.a.binary_cross_entropy_with_logits(
                &target,
                Some(&i.b),
                Some(&i.pos),
                Reduction::None,
            ))
        }),
        ("nll_loss", |i| {
            let weight = i.pos.narrow(0, 0, 1)?.reshape(&[4])?;
            one(i
                .a
                .log_softmax(1)?
                .nll_loss(&i.targets, Some(&weight), Reduction::Mean, 0))
        }),
        // Written by hand.
        ("cat", |i| {
            one(DynTensor::cat(&[&i.a, &i.b.narrow(0, 0, 2)?], 0))
        }),
        ("stack", |i| one(DynTensor::stack(&[&i.a, &i.b], 1))),
        ("to", |i| one(i.a.t()?.to(i.device))),
        ("to_dtype", |i| one(i.a.to_dtype(DType::F64))),
        ("where_cond", |i| one(i.mask.where_cond(&i.a, &i.b))),
    ]
}

/// A binary op of the dynamic front.
pub type BinaryFn = fn(&DynTensor, &DynTensor) -> Result<DynTensor>;

/// The element-wise binary ops of the table (one `operand`, a result of the input's type) but
/// `pow`, which the GPU suites test on their own with an ulp tolerance (a transcendental
/// function); these round exactly as the CPU does. Checked against the table by
/// [`assert_families`].
pub const BINARY: [(&str, BinaryFn); 7] = [
    ("add", DynTensor::add),
    ("sub", DynTensor::sub),
    ("mul", DynTensor::mul),
    ("div", DynTensor::div),
    ("maximum", DynTensor::maximum),
    ("minimum", DynTensor::minimum),
    ("add_relu", DynTensor::add_relu),
];

/// The element-wise comparisons of the table (one `operand`, a `bool` result).
pub const COMPARE: [(&str, BinaryFn); 6] = [
    ("eq", DynTensor::eq),
    ("ne", DynTensor::ne),
    ("lt", DynTensor::lt),
    ("le", DynTensor::le),
    ("gt", DynTensor::gt),
    ("ge", DynTensor::ge),
];

/// Checks that [`BINARY`] and [`COMPARE`] are the table's families, so a new element-wise op
/// joins the family tests (broadcasting, views, scalars on either side) or fails by name.
#[track_caller]
pub fn assert_families() {
    let family = |result: &str, but: &[&str]| -> BTreeSet<&'static str> {
        devtype::op_table()
            .filter(|op| op.args == ["operand"] && op.result == result)
            .map(|op| op.name)
            .filter(|name| !but.contains(name))
            .collect()
    };
    let binary: BTreeSet<&str> = BINARY.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        binary,
        family("Same", &["pow"]),
        "the element-wise binary ops of the table (left: the GPU suites' BINARY list)"
    );
    let compare: BTreeSet<&str> = COMPARE.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        compare,
        family("Bool", &[]),
        "the element-wise comparisons of the table (left: the GPU suites' COMPARE list)"
    );
}

/// `t`'s values as `f64`, read back to the host.
pub fn values(t: &DynTensor) -> Vec<f64> {
    t.to(DynDevice::cpu())
        .and_then(|t| t.to_dtype(DType::F64))
        .and_then(|t| t.to_vec::<f64>())
        .unwrap()
}

/// Runs every case (but those `skip` names) on `got` and on `want` (two [`Inputs`] of the same
/// [`Draw`]) and checks that each result of `got` is within `tol(want's value)` of `want`'s:
/// shapes equal, `bool` and index results equal.
#[track_caller]
pub fn run_cases(
    suite: &str,
    got: &Inputs,
    want: &Inputs,
    skip: impl Fn(&OpInfo) -> Option<&'static str>,
    tol: impl Fn(&str, f64) -> f64,
) {
    let table: Vec<&OpInfo> = devtype::op_table().collect();
    let cases = cases();
    // The suite's own reasons, and the element types the op's declaration takes.
    let skip = |op: &OpInfo| {
        skip(op).or_else(|| {
            (!op.dtypes.takes(got.dtype) || !op.dtypes.takes(want.dtype))
                .then_some("its declaration does not take this element type")
        })
    };
    assert_covers(suite, cases.iter().map(|(name, _)| *name), skip);
    for (name, case) in cases {
        let op = table.iter().find(|op| op.name == name).unwrap();
        if op.untested_in(suite).or_else(|| skip(op)).is_some() {
            continue;
        }
        let what = format!(
            "{name} ({:?} on {} vs {:?} on {})",
            got.dtype, got.device, want.dtype, want.device
        );
        let g = case(got).unwrap_or_else(|e| panic!("{what}: {e}"));
        let w = case(want).unwrap_or_else(|e| panic!("{what}, the reference: {e}"));
        assert_eq!(g.len(), w.len(), "{what}");
        for (g, w) in g.iter().zip(&w) {
            assert_eq!(g.shape(), w.shape(), "{what}: shapes");
            let exact = !g.dtype().is_float();
            for (k, (x, y)) in values(g).into_iter().zip(values(w)).enumerate() {
                let bound = if exact { 0.0 } else { tol(name, y) };
                assert!(
                    (x - y).abs() <= bound || (x.is_nan() && y.is_nan()),
                    "{what}[{k}]: {x} vs {y} (within {bound})"
                );
            }
        }
    }
}
