//! Thousands of random `DynTensor` op sequences: no method of the dynamic API may panic,
//! whatever the shapes (0 sizes, large-ish dims, up to rank 5), element types, dims (also out of
//! range), device strings and indices. Every result is also checked for a consistent layout
//! (its values can be read back), and shape-only ops for keeping the values in order.
//!
//! Operators (`+`, `-`, ...) panic by design and are not called here.
//!
//! The seed comes from `DEVTYPE_TEST_SEED` or the clock and is printed; a failure lists each
//! panicking op with the recipe of its inputs, so it can be replayed.
#![allow(clippy::type_complexity)] // tables of (name, op, reference) read best spelled out

use devtype::nn::{DynCrossEntropyLoss, DynLinear, Reduction};
use devtype::{Cpu, DType, DynDevice, DynTensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod common;

use common::{values_f64, Rng};

/// The table's ops of one tensor operand (checked against it below), fuzzed as `a.op(&b)`.
const BINARY_OPS: [(
    &str,
    fn(&DynTensor, &DynTensor) -> devtype::Result<DynTensor>,
); 14] = [
    ("add", DynTensor::add),
    ("sub", DynTensor::sub),
    ("mul", DynTensor::mul),
    ("div", DynTensor::div),
    ("maximum", DynTensor::maximum),
    ("minimum", DynTensor::minimum),
    ("pow", DynTensor::pow),
    ("add_relu", DynTensor::add_relu),
    ("eq", DynTensor::eq),
    ("ne", DynTensor::ne),
    ("lt", DynTensor::lt),
    ("le", DynTensor::le),
    ("gt", DynTensor::gt),
    ("ge", DynTensor::ge),
];

#[test]
fn the_binary_ops_fuzzed_are_the_tables() {
    let listed: std::collections::BTreeSet<&str> =
        BINARY_OPS.iter().map(|(name, _)| *name).collect();
    let table: std::collections::BTreeSet<&str> = devtype::op_table()
        .filter(|op| op.args == ["operand"])
        .map(|op| op.name)
        .collect();
    assert_eq!(
        listed, table,
        "the fuzzed ops (left) against the table's (right)"
    );
}

/// A live tensor and how it was made.
#[derive(Clone)]
struct Entry {
    t: DynTensor,
    recipe: String,
}

fn short(recipe: &str) -> String {
    if recipe.len() > 160 {
        format!("…{}", &recipe[recipe.len() - 150..])
    } else {
        recipe.to_string()
    }
}

/// Largest tensor the pool creates (small under Miri, which is slow).
const MAX_NUMEL: usize = if cfg!(miri) { 64 } else { 3000 };

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let rank = rng.below(6);
    let mut shape: Vec<usize> = (0..rank)
        .map(|_| match rng.below(100) {
            0..=4 => 0,
            5..=24 => 1,
            25..=84 => 2 + rng.below(6),
            _ => 8 + rng.below(33),
        })
        .collect();
    if rank > 0 && rng.chance(0.05) {
        // One large-ish dimension, the others 1.
        shape.iter_mut().for_each(|s| *s = 1);
        let at = rng.below(rank);
        shape[at] = 100 + rng.below(900);
    }
    while shape.iter().product::<usize>() > MAX_NUMEL {
        let at = rng.below(rank);
        shape[at] /= 2;
    }
    shape
}

fn random_value(rng: &mut Rng) -> f64 {
    if rng.chance(0.03) {
        rng.pick(&[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e30,
            -1e-30,
        ])
    } else {
        (rng.unit() - 0.5) * 6.0
    }
}

fn random_dtype(rng: &mut Rng) -> DType {
    match rng.below(23) {
        0..=7 => DType::F32,
        8..=12 => DType::F64,
        13..=16 => DType::I64,
        17..=19 => DType::Bool,
        20 => DType::F16,
        _ => DType::BF16,
    }
}

fn make(values: &[f64], shape: &[usize], dtype: DType) -> DynTensor {
    let cpu = DynDevice::cpu();
    match dtype {
        DType::F32 => DynTensor::from_vec(
            values.iter().map(|&v| v as f32).collect::<Vec<_>>(),
            shape,
            cpu,
        ),
        DType::F64 => DynTensor::from_vec(values.to_vec(), shape, cpu),
        DType::I64 => DynTensor::from_vec(
            values.iter().map(|&v| (v * 3.0) as i64).collect::<Vec<_>>(),
            shape,
            cpu,
        ),
        DType::Bool => DynTensor::from_vec(
            values.iter().map(|&v| v > 0.0).collect::<Vec<_>>(),
            shape,
            cpu,
        ),
        DType::F16 | DType::BF16 => DynTensor::from_vec(
            values.iter().map(|&v| v as f32).collect::<Vec<_>>(),
            shape,
            cpu,
        )
        .and_then(|t| t.to_dtype(dtype)),
    }
    .expect("from_vec with a matching length")
}

fn fresh(rng: &mut Rng) -> Entry {
    let shape = random_shape(rng);
    let dtype = random_dtype(rng);
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|_| random_value(rng)).collect();
    Entry {
        t: make(&values, &shape, dtype),
        recipe: format!("from_vec::<{dtype:?}>({shape:?})"),
    }
}

fn index_tensor(rng: &mut Rng, size: usize) -> (DynTensor, String) {
    let rank = rng.pick(&[0usize, 1, 1, 1, 2]);
    let shape: Vec<usize> = (0..rank).map(|_| rng.below(6)).collect();
    let n: usize = shape.iter().product();
    let hi = size as i64 + 1;
    let values: Vec<i64> = (0..n)
        .map(|_| {
            if rng.chance(0.9) {
                rng.int(0, (size as i64 - 1).max(0))
            } else {
                rng.int(-hi - 1, hi)
            }
        })
        .collect();
    if rng.chance(0.05) {
        let v: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        return (
            DynTensor::from_vec(v, &shape, DynDevice::cpu()).unwrap(),
            format!("f32 index {shape:?}"),
        );
    }
    let recipe = format!("index{shape:?}={values:?}");
    (
        DynTensor::from_vec(values, &shape, DynDevice::cpu()).unwrap(),
        recipe,
    )
}

/// A dim in `[-rank - 2, rank + 1]`, sometimes absurd.
fn random_dim(rng: &mut Rng, rank: usize) -> isize {
    if rng.chance(0.02) {
        return rng.pick(&[isize::MIN, isize::MAX, -1000, 1000]);
    }
    let r = rank as i64 + 2;
    rng.int(-r, r - 1) as isize
}

fn same_values(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// A result must be readable: its values come back with the right count and dtype.
fn check_consistent(t: &DynTensor) {
    assert_eq!(t.dim(), t.shape().len());
    assert_eq!(t.numel(), t.shape().iter().product::<usize>());
    assert_eq!(values_f64(t).len(), t.numel());
    assert!(t.dim() <= devtype::MAX_DIMS);
}

/// Broadcast shape, computed here independently (None when the shapes do not broadcast).
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
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
            match (da, db) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

const DEVICE_STRINGS: &[&str] = &[
    "cpu",
    "cpu",
    "cpu:0",
    "cuda",
    "cuda:0",
    "cuda:1",
    "cuda:x",
    "",
    "gpu",
    "mps",
    "cuda:01",
    "CUDA:0",
    "cuda:-1",
    "cuda:99999999999",
    "cuda:0:1",
    " cpu",
];

thread_local! {
    /// The op being run, for the report when it panics.
    static NOTE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn note(s: &str) {
    NOTE.with(|n| *n.borrow_mut() = s.to_string());
}

fn noted() -> String {
    NOTE.with(|n| n.borrow().clone())
}

thread_local! {
    /// Results that were tensors and results that were errors, for the summary.
    static COUNTS: std::cell::RefCell<(usize, usize)> = const { std::cell::RefCell::new((0, 0)) };
}

thread_local! {
    /// Where the last panic on this thread happened (`file:line`).
    static PANIC_AT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f` with `recipe` noted, then hands the result to `keep`.
fn attempt(
    keep: &mut impl FnMut(devtype::Result<DynTensor>, String),
    recipe: String,
    f: impl FnOnce() -> devtype::Result<DynTensor>,
) {
    note(&recipe);
    let r = f();
    keep(r, recipe);
}

/// One random op on the pool; returns what it produced, if anything (errors are fine).
fn step(rng: &mut Rng, pool: &[Entry]) -> Vec<Entry> {
    let a = &pool[rng.below(pool.len())];
    let b = &pool[rng.below(pool.len())];
    let rank = a.t.dim();
    let mut out = Vec::new();
    let mut keep = |r: devtype::Result<DynTensor>, recipe: String| {
        COUNTS.with(|c| {
            let mut c = c.borrow_mut();
            if r.is_ok() {
                c.0 += 1
            } else {
                c.1 += 1
            }
        });
        if let Ok(t) = r {
            note(&format!(
                "reading back the {:?}{:?} result of {recipe}",
                t.dtype(),
                t.shape()
            ));
            check_consistent(&t);
            out.push(Entry { t, recipe });
        }
    };
    let op = rng.below(40);
    match op {
        0 => {
            // Binary arithmetic with a random or broadcast-compatible partner.
            let other = if rng.chance(0.5) {
                let mut shape = a.t.shape().to_vec();
                for s in shape.iter_mut() {
                    if rng.chance(0.3) {
                        *s = 1;
                    }
                }
                let drop = rng.below(shape.len() + 1);
                let shape = shape[drop..].to_vec();
                let dtype = if rng.chance(0.9) {
                    a.t.dtype()
                } else {
                    random_dtype(rng)
                };
                let n: usize = shape.iter().product();
                let values: Vec<f64> = (0..n).map(|_| random_value(rng)).collect();
                // On `a`'s device: a partner on another one is a device error (the device
                // mistakes have tests of their own), not a broadcasting case.
                let device = a.t.device();
                let t = make(&values, &shape, dtype);
                Entry {
                    t: if device.is_cpu() {
                        t
                    } else {
                        t.to(device).unwrap()
                    },
                    recipe: format!("from_vec::<{dtype:?}>({shape:?}).to({device})"),
                }
            } else {
                b.clone()
            };
            if let Some(s) = broadcast(a.t.shape(), other.t.shape()) {
                if s.iter().product::<usize>() > 200_000 {
                    return out;
                }
            }
            let ops = BINARY_OPS;
            let (name, f) = rng.pick(&ops);
            note(&format!(
                "({}).{name}({})",
                short(&a.recipe),
                short(&other.recipe)
            ));
            let r = f(&a.t, &other.t);
            let same_dtype = a.t.dtype() == other.t.dtype();
            let cpu_scalar = |t: &DynTensor| t.device().is_cpu() && t.shape().is_empty();
            let crosses =
                a.t.device() != other.t.device() && !cpu_scalar(&a.t) && !cpu_scalar(&other.t);
            // Across devices, a device error, unless one side is a 0-dim CPU tensor: that one
            // joins as a scalar, and the op is checked as on one device.
            match (&r, broadcast(a.t.shape(), other.t.shape())) {
                (Ok(_), _) if crosses => panic!("{name} across devices succeeded"),
                (Ok(t), Some(s)) => assert_eq!(t.shape(), &s[..], "{name} result shape"),
                (Ok(_), None) => panic!(
                    "{name} broadcast {:?} with {:?}",
                    a.t.shape(),
                    other.t.shape()
                ),
                (Err(e), Some(_)) if crosses => assert!(
                    e.is_device_mismatch(),
                    "{name} across devices failed with another error: {e}"
                ),
                (Err(e), Some(_)) if same_dtype && a.t.dtype().is_float() => {
                    panic!("{name} failed on broadcastable shapes: {e}")
                }
                _ => {}
            }
            keep(
                r,
                format!("({}).{name}({})", short(&a.recipe), short(&other.recipe)),
            );
        }
        1 => {
            let s = random_value(rng);
            let ops: [(&str, fn(&DynTensor, f64) -> devtype::Result<DynTensor>); 7] = [
                ("add_scalar", DynTensor::add_scalar),
                ("sub_scalar", DynTensor::sub_scalar),
                ("mul_scalar", DynTensor::mul_scalar),
                ("div_scalar", DynTensor::div_scalar),
                ("clamp_min", DynTensor::clamp_min),
                ("clamp_max", DynTensor::clamp_max),
                ("pow_scalar", DynTensor::pow_scalar),
            ];
            let (name, f) = rng.pick(&ops);
            note(&format!("({}).{name}({s})", short(&a.recipe)));
            let r = f(&a.t, s);
            if let Ok(t) = &r {
                assert_eq!(t.shape(), a.t.shape());
            }
            keep(r, format!("({}).{name}({s})", short(&a.recipe)));
        }
        2 => {
            let ops: [(&str, fn(&DynTensor) -> devtype::Result<DynTensor>); 10] = [
                ("neg", DynTensor::neg),
                ("relu", DynTensor::relu),
                ("abs", DynTensor::abs),
                ("square", DynTensor::square),
                ("exp", DynTensor::exp),
                ("log", DynTensor::log),
                ("sqrt", DynTensor::sqrt),
                ("tanh", DynTensor::tanh),
                ("sigmoid", DynTensor::sigmoid),
                ("reciprocal", DynTensor::reciprocal),
            ];
            let (name, f) = rng.pick(&ops);
            note(&format!("({}).{name}()", short(&a.recipe)));
            let r = f(&a.t);
            if let Ok(t) = &r {
                assert_eq!(t.shape(), a.t.shape());
            }
            keep(r, format!("({}).{name}()", short(&a.recipe)));
        }
        3 => {
            if a.t.numel() * b.t.numel() > 400_000 {
                return out;
            }
            attempt(
                &mut keep,
                format!("({}).matmul({})", short(&a.recipe), short(&b.recipe)),
                || a.t.matmul(&b.t),
            );
        }
        4 => {
            // matmul with a partner whose inner size fits (mostly).
            let k = a.t.shape().last().copied().unwrap_or(1);
            let k = if rng.chance(0.85) { k } else { rng.below(5) };
            let n = rng.below(9);
            let lead: Vec<usize> = (0..rng.below(3))
                .map(|_| rng.pick(&[1usize, 2, 3]))
                .collect();
            let mut shape = lead;
            if rng.chance(0.8) {
                shape.push(k);
                shape.push(n);
            } else {
                shape = vec![k];
            }
            if shape.iter().product::<usize>() > MAX_NUMEL {
                return out;
            }
            let dtype = if rng.chance(0.9) {
                a.t.dtype()
            } else {
                random_dtype(rng)
            };
            let values: Vec<f64> = (0..shape.iter().product())
                .map(|_| random_value(rng))
                .collect();
            let w = make(&values, &shape, dtype);
            attempt(
                &mut keep,
                format!("({}).matmul(<{dtype:?}{shape:?}>)", short(&a.recipe)),
                || a.t.matmul(&w),
            );
        }
        5 => {
            // linear
            let k = a.t.shape().last().copied().unwrap_or(1);
            let k = if rng.chance(0.85) { k } else { rng.below(5) };
            let out_f = rng.below(7);
            let wshape = if rng.chance(0.95) {
                vec![out_f, k]
            } else {
                random_shape(rng)
            };
            let dtype = if rng.chance(0.9) {
                a.t.dtype()
            } else {
                random_dtype(rng)
            };
            let wn: usize = wshape.iter().product();
            if wn > MAX_NUMEL || a.t.numel() / k.max(1) * out_f > 200_000 {
                return out;
            }
            let w = make(
                &(0..wn).map(|_| random_value(rng)).collect::<Vec<_>>(),
                &wshape,
                dtype,
            );
            let bias = if rng.chance(0.6) {
                let bshape = if rng.chance(0.9) {
                    vec![out_f]
                } else {
                    random_shape(rng)
                };
                let bn: usize = bshape.iter().product();
                Some(make(
                    &(0..bn).map(|_| random_value(rng)).collect::<Vec<_>>(),
                    &bshape,
                    dtype,
                ))
            } else {
                None
            };
            let bias_shape = bias.as_ref().map(|t| t.shape().to_vec());
            attempt(
                &mut keep,
                format!(
                    "({}).linear(<{dtype:?}{wshape:?}>, {bias_shape:?})",
                    short(&a.recipe)
                ),
                || a.t.linear(&w, bias.as_ref()),
            );
        }
        6 => {
            let dim = random_dim(rng, rank);
            let ops: [(&str, fn(&DynTensor, isize) -> devtype::Result<DynTensor>); 8] = [
                ("sum", DynTensor::sum_dim),
                ("mean", DynTensor::mean_dim),
                ("max", |t, d| t.max(d).map(|r| r.values)),
                ("min", |t, d| t.min(d).map(|r| r.values)),
                ("argmax", DynTensor::argmax),
                ("argmin", DynTensor::argmin),
                ("softmax", DynTensor::softmax),
                ("log_softmax", DynTensor::log_softmax),
            ];
            let (name, f) = rng.pick(&ops);
            attempt(
                &mut keep,
                format!("({}).{name}({dim})", short(&a.recipe)),
                || f(&a.t, dim),
            );
        }
        7 => {
            let n = rng.below(4);
            let dims: Vec<isize> = (0..n).map(|_| random_dim(rng, rank)).collect();
            let keepdim = rng.chance(0.5);
            note(&format!(
                "({}).sum/mean_dims({dims:?}, {keepdim})",
                short(&a.recipe)
            ));
            let r = if rng.chance(0.5) {
                a.t.sum_dims(&dims, keepdim)
            } else {
                a.t.mean_dims(&dims, keepdim)
            };
            keep(
                r,
                format!(
                    "({}).sum_or_mean_dims({dims:?}, {keepdim})",
                    short(&a.recipe)
                ),
            );
            attempt(
                &mut keep,
                format!("({}).sum_all()", short(&a.recipe)),
                || a.t.sum_all(),
            );
            attempt(
                &mut keep,
                format!("({}).mean_all()", short(&a.recipe)),
                || a.t.mean_all(),
            );
        }
        8 => {
            // reshape / view with a random target (often valid).
            let numel = a.t.numel() as isize;
            let shape: Vec<isize> = match rng.below(5) {
                0 => vec![-1],
                1 => vec![numel],
                2 => {
                    let s =
                        a.t.shape()
                            .iter()
                            .rev()
                            .map(|&x| x as isize)
                            .collect::<Vec<_>>();
                    s
                }
                3 => {
                    let mut s: Vec<isize> = a.t.shape().iter().map(|&x| x as isize).collect();
                    if !s.is_empty() {
                        let at = rng.below(s.len());
                        s[at] = -1;
                    }
                    s.insert(rng.below(s.len() + 1), 1);
                    s
                }
                _ => (0..rng.below(5))
                    .map(|_| {
                        rng.pick(&[-1isize, -2, 0, 1, 2, 3, 4, 6, numel, isize::MAX, isize::MIN])
                    })
                    .collect(),
            };
            let before = values_f64(&a.t);
            let use_view = rng.chance(0.5);
            note(&format!("({}).view/reshape({shape:?})", short(&a.recipe)));
            let r = if use_view {
                a.t.view(&shape)
            } else {
                a.t.reshape(&shape)
            };
            if let Ok(t) = &r {
                assert!(
                    same_values(&values_f64(t), &before),
                    "reshape/view changed the order"
                );
            }
            keep(
                r,
                format!(
                    "({}).{}({shape:?})",
                    short(&a.recipe),
                    if use_view { "view" } else { "reshape" }
                ),
            );
        }
        9 => {
            let (d0, d1) = (random_dim(rng, rank), random_dim(rng, rank));
            note(&format!("({}).transpose({d0}, {d1})", short(&a.recipe)));
            let r = a.t.transpose(d0, d1);
            if let Ok(t) = &r {
                // Transposing back gives the same values.
                let back = t.transpose(d0, d1).unwrap();
                assert!(
                    same_values(&values_f64(&back), &values_f64(&a.t)),
                    "transpose twice"
                );
            }
            keep(r, format!("({}).transpose({d0}, {d1})", short(&a.recipe)));
        }
        10 => {
            let order: Vec<isize> = if rng.chance(0.7) {
                let mut o: Vec<isize> = (0..rank as isize).collect();
                for i in (1..o.len()).rev() {
                    let j = rng.below(i + 1);
                    o.swap(i, j);
                }
                if rng.chance(0.3) {
                    for d in o.iter_mut() {
                        if rng.chance(0.5) {
                            *d -= rank as isize;
                        }
                    }
                }
                o
            } else {
                (0..rng.below(7)).map(|_| random_dim(rng, rank)).collect()
            };
            attempt(
                &mut keep,
                format!("({}).permute({order:?})", short(&a.recipe)),
                || a.t.permute(&order),
            );
        }
        11 => {
            let d = random_dim(rng, rank + 1);
            let before = values_f64(&a.t);
            note(&format!("({}).unsqueeze({d})", short(&a.recipe)));
            let r = a.t.unsqueeze(d);
            if let Ok(t) = &r {
                assert!(same_values(&values_f64(t), &before));
                assert_eq!(t.dim(), rank + 1);
            }
            keep(r, format!("({}).unsqueeze({d})", short(&a.recipe)));
        }
        12 => {
            let d = random_dim(rng, rank);
            let before = values_f64(&a.t);
            note(&format!("({}).squeeze({d})", short(&a.recipe)));
            let r = a.t.squeeze(d);
            if let Ok(t) = &r {
                assert!(same_values(&values_f64(t), &before));
            }
            keep(r, format!("({}).squeeze({d})", short(&a.recipe)));
        }
        13 => {
            let (s, e) = (random_dim(rng, rank), random_dim(rng, rank));
            let before = values_f64(&a.t);
            note(&format!("({}).flatten({s}, {e})", short(&a.recipe)));
            let r = a.t.flatten(s, e);
            if let Ok(t) = &r {
                assert!(same_values(&values_f64(t), &before));
            }
            keep(r, format!("({}).flatten({s}, {e})", short(&a.recipe)));
        }
        14 => {
            let d = random_dim(rng, rank);
            let size =
                a.t.shape()
                    .get(rng.below(rank.max(1)))
                    .copied()
                    .unwrap_or(1);
            let start = if rng.chance(0.05) {
                usize::MAX
            } else {
                rng.below(size + 2)
            };
            let len = if rng.chance(0.05) {
                usize::MAX
            } else {
                rng.below(size + 2)
            };
            attempt(
                &mut keep,
                format!("({}).narrow({d}, {start}, {len})", short(&a.recipe)),
                || a.t.narrow(d, start, len),
            );
        }
        15 => {
            let before = values_f64(&a.t);
            note(&format!("({}).contiguous()", short(&a.recipe)));
            let r = a.t.contiguous();
            if let Ok(t) = &r {
                assert!(same_values(&values_f64(t), &before));
            }
            keep(r, format!("({}).contiguous()", short(&a.recipe)));
        }
        16 => {
            // cat / stack with 0..4 tensors, mostly compatible.
            let n = rng.below(5);
            let mut list: Vec<DynTensor> = Vec::new();
            let mut recipes = Vec::new();
            for _ in 0..n {
                if rng.chance(0.6) {
                    let mut shape = a.t.shape().to_vec();
                    let d = if shape.is_empty() {
                        0
                    } else {
                        rng.below(shape.len())
                    };
                    if !shape.is_empty() && rng.chance(0.5) {
                        shape[d] = rng.below(4);
                    }
                    let nn: usize = shape.iter().product();
                    let dtype = if rng.chance(0.9) {
                        a.t.dtype()
                    } else {
                        random_dtype(rng)
                    };
                    list.push(make(
                        &(0..nn).map(|_| random_value(rng)).collect::<Vec<_>>(),
                        &shape,
                        dtype,
                    ));
                    recipes.push(format!("<{dtype:?}{shape:?}>"));
                } else {
                    let e = &pool[rng.below(pool.len())];
                    list.push(e.t.clone());
                    recipes.push(short(&e.recipe));
                }
            }
            let refs: Vec<&DynTensor> = list.iter().collect();
            let dim = random_dim(rng, rank + 1);
            let total: usize = list.iter().map(|t| t.numel()).sum();
            if total > 100_000 {
                return out;
            }
            attempt(
                &mut keep,
                format!("cat([{}], {dim})", recipes.join(", ")),
                || DynTensor::cat(&refs, dim),
            );
            attempt(
                &mut keep,
                format!("stack([{}], {dim})", recipes.join(", ")),
                || DynTensor::stack(&refs, dim),
            );
        }
        17 => {
            let d = random_dim(rng, rank);
            let size = if rank == 0 {
                1
            } else {
                a.t.shape()[rng.below(rank)]
            };
            let (idx, recipe) = index_tensor(rng, size);
            attempt(
                &mut keep,
                format!("({}).index_select({d}, {recipe})", short(&a.recipe)),
                || a.t.index_select(d, &idx),
            );
        }
        18 => {
            // gather with an index of the same rank (mostly).
            let d = random_dim(rng, rank);
            let shape: Vec<usize> = if rng.chance(0.8) {
                a.t.shape().iter().map(|&s| rng.below(s + 2)).collect()
            } else {
                random_shape(rng)
            };
            let n: usize = shape.iter().product();
            let size = if rank == 0 {
                1
            } else {
                a.t.shape()[d.rem_euclid(rank as isize) as usize]
            };
            let values: Vec<i64> = (0..n)
                .map(|_| {
                    if rng.chance(0.9) {
                        rng.int(0, size as i64 - 1)
                    } else {
                        rng.int(-3, size as i64 + 2)
                    }
                })
                .collect();
            let idx = DynTensor::from_vec(values.clone(), &shape, DynDevice::cpu()).unwrap();
            attempt(
                &mut keep,
                format!(
                    "({}).gather({d}, index{shape:?}={values:?})",
                    short(&a.recipe)
                ),
                || a.t.gather(d, &idx),
            );
        }
        19 => {
            // where_cond with a bool condition (mostly) of a broadcastable shape.
            let cond = if rng.chance(0.8) {
                let mut shape = a.t.shape().to_vec();
                for s in shape.iter_mut() {
                    if rng.chance(0.3) {
                        *s = 1;
                    }
                }
                make(
                    &(0..shape.iter().product())
                        .map(|_| random_value(rng))
                        .collect::<Vec<_>>(),
                    &shape,
                    DType::Bool,
                )
            } else {
                b.t.clone()
            };
            if let Some(s) =
                broadcast(cond.shape(), a.t.shape()).and_then(|s| broadcast(&s, b.t.shape()))
            {
                if s.iter().product::<usize>() > 200_000 {
                    return out;
                }
            }
            attempt(
                &mut keep,
                format!(
                    "<cond>.where_cond({}, {})",
                    short(&a.recipe),
                    short(&b.recipe)
                ),
                || cond.where_cond(&a.t, &b.t),
            );
            attempt(
                &mut keep,
                format!("<cond>.where_cond({0}, {0})", short(&a.recipe)),
                || cond.where_cond(&a.t, &a.t),
            );
        }
        20 => {
            // cross_entropy
            let (n, c) = (rng.below(6), rng.below(6));
            let logits = if rng.chance(0.8) {
                let shape = if rng.chance(0.85) {
                    vec![n, c]
                } else {
                    vec![c]
                };
                let dtype = if rng.chance(0.9) {
                    DType::F32
                } else {
                    random_dtype(rng)
                };
                make(
                    &(0..shape.iter().product())
                        .map(|_| random_value(rng))
                        .collect::<Vec<_>>(),
                    &shape,
                    dtype,
                )
            } else {
                a.t.clone()
            };
            let tshape = match rng.below(5) {
                0 => vec![],
                1 => vec![rng.below(6)],
                _ => vec![logits.shape().first().copied().unwrap_or(1)],
            };
            let ignore = rng.pick(&[-100i64, 0, 1, -1, i64::MIN]);
            let tv: Vec<i64> = (0..tshape.iter().product())
                .map(|_| {
                    if rng.chance(0.85) {
                        rng.int(0, c as i64 - 1)
                    } else {
                        rng.pick(&[ignore, -1, c as i64, i64::MAX])
                    }
                })
                .collect();
            let targets = if rng.chance(0.95) {
                DynTensor::from_vec(tv.clone(), &tshape, DynDevice::cpu()).unwrap()
            } else {
                DynTensor::from_vec(
                    tv.iter().map(|&v| v as f32).collect::<Vec<_>>(),
                    &tshape,
                    DynDevice::cpu(),
                )
                .unwrap()
            };
            let weight = if rng.chance(0.4) {
                let wshape = if rng.chance(0.9) {
                    vec![logits.shape().last().copied().unwrap_or(1)]
                } else {
                    random_shape(rng)
                };
                Some(make(
                    &(0..wshape.iter().product())
                        .map(|_| rng.unit() * 2.0)
                        .collect::<Vec<_>>(),
                    &wshape,
                    logits.dtype(),
                ))
            } else {
                None
            };
            let reduction = rng.pick(&[Reduction::Mean, Reduction::Sum, Reduction::None]);
            note(&format!("<{:?}{:?}>.cross_entropy_with(targets{tshape:?}={tv:?}, weight {:?}, {reduction:?}, {ignore})", logits.dtype(), logits.shape(), weight.as_ref().map(|w| w.shape().to_vec())));
            let r = logits.cross_entropy_with(&targets, weight.as_ref(), reduction, ignore);
            keep(r, format!(
                    "<{:?}{:?}>.cross_entropy_with(targets{tshape:?}={tv:?}, weight {:?}, {reduction:?}, {ignore})",
                    logits.dtype(),
                    logits.shape(),
                    weight.as_ref().map(|w| w.shape().to_vec())
                ));
            note("DynCrossEntropyLoss forward/to");
            let mut loss = DynCrossEntropyLoss {
                weight,
                reduction,
                ignore_index: ignore,
            };
            let _ = loss.forward(&logits, &targets);
            let _ = loss.to(DynDevice::cpu());
        }
        21 => {
            // Device strings, creation and moves.
            let s = rng.pick(DEVICE_STRINGS);
            match s.parse::<DynDevice>() {
                // Probing for a GPU dlopens the driver, which Miri cannot run.
                Ok(dev) if cfg!(miri) && dev.is_cuda() => {}
                Ok(dev) => {
                    let shape = random_shape(rng);
                    note(&format!("({}).to({s:?})", short(&a.recipe)));
                    let r = a.t.to(dev);
                    if let Ok(t) = &r {
                        assert!(same_values(&values_f64(t), &values_f64(&a.t)));
                    }
                    keep(r, format!("({}).to({s:?})", short(&a.recipe)));
                    attempt(&mut keep, format!("zeros({shape:?}, {s:?})"), || {
                        DynTensor::zeros(&shape, dev)
                    });
                    attempt(&mut keep, format!("ones({shape:?}, {s:?})"), || {
                        DynTensor::ones(&shape, dev)
                    });
                    attempt(&mut keep, format!("rand({shape:?}, {s:?})"), || {
                        DynTensor::rand(&shape, dev)
                    });
                    attempt(&mut keep, format!("randn({shape:?}, {s:?})"), || {
                        DynTensor::randn(&shape, dev)
                    });
                    let dtype = random_dtype(rng);
                    let v = random_value(rng);
                    attempt(
                        &mut keep,
                        format!("full({shape:?}, {v}, {dtype:?}, {s:?})"),
                        || DynTensor::full(&shape, v, dtype, dev),
                    );
                    attempt(&mut keep, format!("arange(.., {s:?})"), || {
                        DynTensor::arange(rng.below(50), dev)
                    });
                    let len = shape.iter().product::<usize>() + rng.pick(&[0usize, 0, 1]);
                    attempt(
                        &mut keep,
                        format!("from_vec(len {len}, {shape:?}, {s:?})"),
                        || DynTensor::from_vec(vec![1.5f32; len], &shape, dev),
                    );
                    note(&format!(
                        "synchronize/DynLinear on {s:?} with input {}",
                        short(&a.recipe)
                    ));
                    let _ = dev.synchronize();
                    if let Ok(mut m) = DynLinear::new(rng.below(4), rng.below(4), dev) {
                        let _ = m.forward(&a.t);
                        let _ = m.to(DynDevice::cpu());
                        let _ = m.to(dev);
                    }
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
        22 => {
            let dtype = random_dtype(rng);
            note(&format!("({}).to_dtype({dtype:?})", short(&a.recipe)));
            let r = a.t.to_dtype(dtype);
            if let Ok(t) = &r {
                assert_eq!(t.dtype(), dtype);
                assert_eq!(t.shape(), a.t.shape());
            }
            keep(r, format!("({}).to_dtype({dtype:?})", short(&a.recipe)));
        }
        23 => {
            // Host reads with any element type; Display; typed bridges.
            note(&format!("reads/Display/bridges of {}", short(&a.recipe)));
            let _ = a.t.to_vec::<f32>();
            let _ = a.t.to_vec::<f64>();
            let _ = a.t.to_vec::<i64>();
            let _ = a.t.to_vec::<bool>();
            let _ = a.t.item::<f32>();
            let _ = a.t.item::<i64>();
            let shown = a.t.to_string();
            assert!(
                shown.starts_with("tensor(") && shown.ends_with(')'),
                "{shown}"
            );
            let _ = format!("{:?}", a.t);
            let _ = a.t.clone().try_into_typed::<Cpu>();
            let _ = a.t.clone().try_into_tensor::<Cpu, i64>();
            let _ = a.t.clone().try_into_typed::<devtype::Cuda<0>>();
            let _ = DynTensor::zeros_like(&a.t);
            let _ = DynTensor::ones_like(&a.t);
        }
        24 => {
            // Absurd sizes must be errors, not panics (nothing is allocated for them).
            let huge = rng.pick(&[usize::MAX, usize::MAX / 2, 1usize << 62, 1 << 40]);
            let shape = [huge, huge, 3];
            let cpu = DynDevice::cpu();
            let h = huge.min(isize::MAX as usize) as isize;
            let which = rng.below(10);
            note(&format!(
                "absurd sizes ({huge}), case {which}, with {}",
                short(&a.recipe)
            ));
            let r = match which {
                0 => DynTensor::zeros(shape, cpu),
                1 => DynTensor::rand(shape, cpu),
                2 => DynTensor::randn(shape, cpu),
                3 => DynTensor::full(shape, 1.0, DType::I64, cpu),
                4 => DynTensor::from_vec(vec![0f32; 3], shape, cpu),
                5 => a.t.reshape(&[h, h]),
                6 => a.t.view(&[h, -1, h]),
                7 => a.t.reshape(&[-1, h, h]),
                8 => DynTensor::zeros([1usize; 9], cpu),
                _ => a.t.reshape(&[1; 9]),
            };
            assert!(r.is_err(), "absurd case {which} succeeded");
        }
        _ => {
            // Chains of views then an op: exercises strided kernels.
            let mut t = a.t.clone();
            let mut recipe = short(&a.recipe);
            note(&format!("view chain on {recipe}"));
            for _ in 0..rng.below(4) + 1 {
                let r = t.dim();
                let next = match rng.below(4) {
                    0 if r >= 2 => t.transpose(0, r as isize - 1),
                    1 if r >= 1 => {
                        let d = rng.below(r);
                        let size = t.shape()[d];
                        let start = rng.below(size + 1);
                        let len = rng.below(size - start + 1);
                        t.narrow(d as isize, start, len)
                    }
                    2 => t.unsqueeze(0),
                    _ => t.permute(&(0..r as isize).rev().collect::<Vec<_>>()),
                };
                if let Ok(n) = next {
                    t = n;
                    recipe = format!("{recipe}.view_op");
                }
            }
            check_consistent(&t);
            note(&format!("({recipe}).op"));
            let r = match rng.below(6) {
                0 => t.add(&t),
                1 => t.exp(),
                2 => t.sum_dim(-1),
                3 => t.softmax(0),
                4 => t.matmul(&t.transpose(0, -1).unwrap_or_else(|_| t.clone())),
                _ => t.contiguous(),
            };
            keep(r, format!("({recipe}).op"));
        }
    }
    out
}

#[test]
fn no_dyn_tensor_method_panics() {
    let seed = common::test_seed();
    println!("seed = {seed} (rerun with DEVTYPE_TEST_SEED={seed})");
    let mut rng = Rng(seed);
    // About a second in a debug build; Miri gets a token run.
    let default_steps = if cfg!(miri) { 60 } else { 50_000 };
    let steps: usize = std::env::var("DEVTYPE_FUZZ_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_steps);
    let mut pool: Vec<Entry> = (0..12).map(|_| fresh(&mut rng)).collect();
    let mut panics: Vec<(String, String, String)> = Vec::new();
    // Record where each panic happens instead of printing it; restored at the end.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let mut at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if at.starts_with("/rustc/") {
            // Inside the standard library: name the first frame of this crate instead.
            let trace = std::backtrace::Backtrace::force_capture().to_string();
            let frames: Vec<&str> = trace
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("at ./"))
                .collect();
            // The first frame of the library, else the first test frame after this hook's own.
            let frame = frames
                .iter()
                .find(|l| l.starts_with("at ./src/"))
                .or_else(|| {
                    frames
                        .iter()
                        .filter(|l| l.starts_with("at ./tests/"))
                        .nth(1)
                });
            if let Some(frame) = frame {
                at = format!("{} (via {at})", frame.trim_start_matches("at ./"));
            }
        }
        PANIC_AT.with(|p| *p.borrow_mut() = at);
    }));
    let start = std::time::Instant::now();
    for i in 0..steps {
        if rng.chance(0.1) {
            let at = rng.below(pool.len());
            pool[at] = fresh(&mut rng);
        }
        let mut local = Rng(rng.next_u64());
        let snapshot = pool.clone();
        let result = catch_unwind(AssertUnwindSafe(|| step(&mut local, &snapshot)));
        match result {
            Ok(made) => {
                for e in made {
                    // Keep the pool small, also in empty tensors' sizes.
                    if e.t.numel() <= MAX_NUMEL
                        && e.t.dim() <= 6
                        && e.t.shape().iter().all(|&s| s <= 5000)
                    {
                        let at = rng.below(pool.len());
                        pool[at] = e;
                    }
                }
            }
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let at = PANIC_AT.with(|p| p.borrow().clone());
                panics.push((at, format!("step {i}: {msg}"), noted()));
            }
        }
    }
    std::panic::set_hook(default_hook);
    let (oks, errs) = COUNTS.with(|c| *c.borrow());
    println!(
        "{steps} steps in {:.2?}: {oks} tensors, {errs} errors",
        start.elapsed()
    );
    if !panics.is_empty() {
        // One line per panic site, with its first reproducer.
        let mut sites: Vec<(String, usize, String, String)> = Vec::new();
        for (at, msg, op) in &panics {
            match sites.iter_mut().find(|s| &s.0 == at) {
                Some(site) => site.1 += 1,
                None => sites.push((at.clone(), 1, msg.clone(), op.clone())),
            }
        }
        let mut report = format!(
            "{} of {steps} steps panicked at {} sites (seed {seed}):\n",
            panics.len(),
            sites.len()
        );
        for (at, count, msg, op) in &sites {
            report.push_str(&format!("- {at} ({count}x): {msg}\n    in: {op}\n"));
        }
        panic!("{report}");
    }
}
