//! Both fronts expose every declared op, and give the same values.
//!
//! Every op is declared once (`src/api/`), and the declaration makes `Tensor::try_<op>`,
//! `Tensor::<op>` and `DynTensor::<op>`. This test enumerates the declarations
//! and the ops written by hand (`devtype::op_table()`) and runs each op on both fronts on the
//! same fresh random inputs: an op of the table missing from the cases below fails it, so a new
//! op is tested on both fronts from the day it lands. The ops that were once missing on one front are listed too,
//! so they cannot go missing again. Every case runs in each float element type (f64, f32, f16,
//! bf16): an op that lacks a dtype on one front fails here.

use devtype::nn::Reduction;
use devtype::prelude::*;
use devtype::Float;
use devtype::IndexItem;
use std::collections::BTreeSet;

type Out = (Vec<usize>, Vec<f64>);
type Case = Box<dyn Fn() -> Result<(Out, Out), devtype::Error>>;

/// A typed result as shape and values (a `(values, indices)` pair: the values' shape, then the
/// values followed by the indices).
trait TypedOut {
    fn out(self) -> Out;
}

impl<E: devtype::Element> TypedOut for Tensor<Cpu, E> {
    fn out(self) -> Out {
        (self.shape().to_vec(), self.to_dtype::<f64>().to_vec())
    }
}

impl<E: devtype::Element> TypedOut for devtype::ValuesIndices<Tensor<Cpu, E>, Tensor<Cpu, i64>> {
    fn out(self) -> Out {
        let (shape, mut v) = self.values.out();
        assert_eq!(self.indices.shape(), &shape[..]);
        v.extend(self.indices.out().1);
        (shape, v)
    }
}

fn typed(t: impl TypedOut) -> Out {
    t.out()
}

/// A dynamic result as shape and values, as [`TypedOut`].
trait DynOut {
    fn out(self) -> Out;
}

impl DynOut for DynTensor {
    fn out(self) -> Out {
        let shape = self.shape().to_vec();
        (
            shape,
            self.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(),
        )
    }
}

impl DynOut for devtype::ValuesIndices<DynTensor, DynTensor> {
    fn out(self) -> Out {
        assert_eq!(self.indices.dtype(), DType::I64);
        let (shape, mut v) = self.values.out();
        assert_eq!(self.indices.shape(), &shape[..]);
        v.extend(self.indices.out().1);
        (shape, v)
    }
}

fn dynamic(t: impl DynOut) -> Out {
    t.out()
}

struct Inputs<E: Float> {
    a: Tensor<Cpu, E>,
    b: Tensor<Cpu, E>,
    pos: Tensor<Cpu, E>,
    m: Tensor<Cpu, E>,
    bat1: Tensor<Cpu, E>,
    bat2: Tensor<Cpu, E>,
    w: Tensor<Cpu, E>,
    bias: Tensor<Cpu, E>,
    idx: Tensor<Cpu, i64>,
    gidx: Tensor<Cpu, i64>,
    targets: Tensor<Cpu, i64>,
}

/// Fresh random inputs in `E` (drawn in f32, then converted).
fn inputs<E: Float>() -> Inputs<E> {
    let r = |shape: &[usize]| Tensor::<Cpu>::randn(shape, Cpu).to_dtype::<E>();
    Inputs {
        a: r(&[3, 4]),
        b: r(&[3, 4]),
        pos: (Tensor::<Cpu>::rand([3, 4], Cpu) + 0.5).to_dtype::<E>(),
        m: r(&[4, 5]),
        bat1: r(&[2, 3, 4]),
        bat2: r(&[2, 4, 5]),
        w: r(&[5, 4]),
        bias: r(&[5]),
        idx: Tensor::from_vec(vec![2i64, 0, 1, 2], [4], Cpu),
        gidx: Tensor::from_vec(vec![0i64, 2, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2], [3, 4], Cpu),
        targets: Tensor::from_vec(vec![1i64, 0, 3], [3], Cpu),
    }
}

/// A scalar argument in the inputs' element type (the typed front takes `E`, the dynamic one
/// `f64`, as PyTorch's Python numbers).
fn s<E: Float>(v: f64) -> E {
    E::from_f64(v)
}

/// One case per declared op, in element type `E`: the typed call and the dynamic call on the
/// same inputs.
fn cases<E: Float>() -> Vec<(&'static str, Case)> {
    let mut cases: Vec<(&'static str, Case)> = Vec::new();
    macro_rules! case {
        ($name:literal, |$i:ident| $typed:expr, $dynamic:expr) => {
            cases.push((
                $name,
                Box::new(|| {
                    let $i = inputs::<E>();
                    let t = typed($typed);
                    let d = dynamic($dynamic?);
                    Ok((t, d))
                }),
            ));
        };
    }
    // Unary.
    case!("neg", |i| i.a.neg(), i.a.to_dyn().neg());
    case!("relu", |i| i.a.relu(), i.a.to_dyn().relu());
    case!("abs", |i| i.a.abs(), i.a.to_dyn().abs());
    case!("square", |i| i.a.square(), i.a.to_dyn().square());
    case!("exp", |i| i.a.exp(), i.a.to_dyn().exp());
    case!("log", |i| i.pos.log(), i.pos.to_dyn().log());
    case!("sqrt", |i| i.pos.sqrt(), i.pos.to_dyn().sqrt());
    case!("tanh", |i| i.a.tanh(), i.a.to_dyn().tanh());
    case!("sigmoid", |i| i.a.sigmoid(), i.a.to_dyn().sigmoid());
    case!(
        "reciprocal",
        |i| i.pos.reciprocal(),
        i.pos.to_dyn().reciprocal()
    );
    // Binary with tensors.
    case!("add", |i| i.a.add(&i.b), i.a.to_dyn().add(&i.b.to_dyn()));
    case!("sub", |i| i.a.sub(&i.b), i.a.to_dyn().sub(&i.b.to_dyn()));
    case!("mul", |i| i.a.mul(&i.b), i.a.to_dyn().mul(&i.b.to_dyn()));
    case!(
        "div",
        |i| i.a.div(&i.pos),
        i.a.to_dyn().div(&i.pos.to_dyn())
    );
    case!(
        "maximum",
        |i| i.a.maximum(&i.b),
        i.a.to_dyn().maximum(&i.b.to_dyn())
    );
    case!(
        "minimum",
        |i| i.a.minimum(&i.b),
        i.a.to_dyn().minimum(&i.b.to_dyn())
    );
    case!(
        "pow",
        |i| i.pos.pow(&i.b),
        i.pos.to_dyn().pow(&i.b.to_dyn())
    );
    case!(
        "add_relu",
        |i| i.a.add_relu(&i.b),
        i.a.to_dyn().add_relu(&i.b.to_dyn())
    );
    // Binary with scalars.
    case!(
        "add_scalar",
        |i| i.a.add_scalar(s(1.5)),
        i.a.to_dyn().add_scalar(1.5)
    );
    case!(
        "sub_scalar",
        |i| i.a.sub_scalar(s(1.5)),
        i.a.to_dyn().sub_scalar(1.5)
    );
    case!(
        "mul_scalar",
        |i| i.a.mul_scalar(s(-2.0)),
        i.a.to_dyn().mul_scalar(-2.0)
    );
    case!(
        "div_scalar",
        |i| i.a.div_scalar(s(4.0)),
        i.a.to_dyn().div_scalar(4.0)
    );
    case!(
        "pow_scalar",
        |i| i.pos.pow_scalar(s(1.5)),
        i.pos.to_dyn().pow_scalar(1.5)
    );
    case!(
        "clamp_min",
        |i| i.a.clamp_min(s(-0.2)),
        i.a.to_dyn().clamp_min(-0.2)
    );
    case!(
        "clamp_max",
        |i| i.a.clamp_max(s(0.3)),
        i.a.to_dyn().clamp_max(0.3)
    );
    case!(
        "clamp",
        |i| i.a.clamp(s(-0.2), s(0.3)),
        i.a.to_dyn().clamp(-0.2, 0.3)
    );
    // Comparisons.
    case!(
        "eq",
        |i| i.a.eq(i.a.relu()),
        i.a.to_dyn().eq(&i.a.to_dyn().relu()?)
    );
    case!(
        "ne",
        |i| i.a.ne(i.a.relu()),
        i.a.to_dyn().ne(&i.a.to_dyn().relu()?)
    );
    case!("lt", |i| i.a.lt(&i.b), i.a.to_dyn().lt(&i.b.to_dyn()));
    case!("le", |i| i.a.le(&i.b), i.a.to_dyn().le(&i.b.to_dyn()));
    case!("gt", |i| i.a.gt(&i.b), i.a.to_dyn().gt(&i.b.to_dyn()));
    case!("ge", |i| i.a.ge(&i.b), i.a.to_dyn().ge(&i.b.to_dyn()));
    case!(
        "eq_scalar",
        |i| i.idx.eq_scalar(2),
        i.idx.to_dyn().eq_scalar(2)
    );
    case!(
        "ne_scalar",
        |i| i.idx.ne_scalar(2),
        i.idx.to_dyn().ne_scalar(2)
    );
    case!(
        "lt_scalar",
        |i| i.a.lt_scalar(s(0.1)),
        i.a.to_dyn().lt_scalar(0.1)
    );
    case!(
        "le_scalar",
        |i| i.a.le_scalar(s(0.1)),
        i.a.to_dyn().le_scalar(0.1)
    );
    case!(
        "gt_scalar",
        |i| i.a.gt_scalar(s(0.1)),
        i.a.to_dyn().gt_scalar(0.1)
    );
    case!(
        "ge_scalar",
        |i| i.a.ge_scalar(s(0.1)),
        i.a.to_dyn().ge_scalar(0.1)
    );
    // Reductions.
    case!(
        "sum_dims",
        |i| i.a.sum_dims(&[0], true),
        i.a.to_dyn().sum_dims(&[0], true)
    );
    case!("sum_dim", |i| i.a.sum_dim(1), i.a.to_dyn().sum_dim(1));
    case!("sum", |i| i.a.sum(), i.a.to_dyn().sum());
    case!("sum_all", |i| i.a.sum_all(), i.a.to_dyn().sum_all());
    case!(
        "mean_dims",
        |i| i.a.mean_dims(&[1], true),
        i.a.to_dyn().mean_dims(&[1], true)
    );
    case!("mean_dim", |i| i.a.mean_dim(0), i.a.to_dyn().mean_dim(0));
    case!("mean", |i| i.a.mean(), i.a.to_dyn().mean());
    case!("mean_all", |i| i.a.mean_all(), i.a.to_dyn().mean_all());
    case!("max", |i| i.a.max(1), i.a.to_dyn().max(1));
    case!(
        "max_keepdim",
        |i| i.a.max_keepdim(0),
        i.a.to_dyn().max_keepdim(0)
    );
    case!("max_all", |i| i.a.max_all(), i.a.to_dyn().max_all());
    case!("min", |i| i.a.min(1), i.a.to_dyn().min(1));
    case!(
        "min_keepdim",
        |i| i.a.min_keepdim(1),
        i.a.to_dyn().min_keepdim(1)
    );
    case!("min_all", |i| i.a.min_all(), i.a.to_dyn().min_all());
    case!("argmax", |i| i.a.argmax(1), i.a.to_dyn().argmax(1));
    case!("argmin", |i| i.a.argmin(0), i.a.to_dyn().argmin(0));
    case!(
        "argmax_all",
        |i| i.a.argmax_all(),
        i.a.to_dyn().argmax_all()
    );
    case!(
        "argmin_all",
        |i| i.a.argmin_all(),
        i.a.to_dyn().argmin_all()
    );
    // Along a dim: scans, sorts, masks.
    case!("cumsum", |i| i.a.cumsum(1), i.a.to_dyn().cumsum(1));
    case!("sort", |i| i.a.sort(1, false), i.a.to_dyn().sort(1, false));
    case!(
        "argsort",
        |i| i.a.argsort(0, true),
        i.a.to_dyn().argsort(0, true)
    );
    case!(
        "topk",
        |i| i.a.topk(2, 1, true, true),
        i.a.to_dyn().topk(2, 1, true, true)
    );
    case!(
        "masked_fill",
        |i| i.a.masked_fill(i.a.gt(&i.b), s(0.25)),
        i.a.to_dyn()
            .masked_fill(&i.a.to_dyn().gt(&i.b.to_dyn())?, 0.25)
    );
    case!(
        "index",
        |i| i
            .bat1
            .index(&[IndexItem::Select(-1), IndexItem::Slice(Some(1), None)]),
        i.bat1
            .to_dyn()
            .index(&[IndexItem::Select(-1), IndexItem::Slice(Some(1), None)])
    );
    // Shapes.
    case!(
        "reshape",
        |i| i.a.reshape(&[2, -1]),
        i.a.to_dyn().reshape(&[2, -1])
    );
    case!("view", |i| i.a.view(&[4, 3]), i.a.to_dyn().view(&[4, 3]));
    case!(
        "transpose",
        |i| i.a.transpose(0, 1),
        i.a.to_dyn().transpose(0, 1)
    );
    case!("t", |i| i.a.t(), i.a.to_dyn().t());
    case!(
        "permute",
        |i| i.bat1.permute(&[2, 0, 1]),
        i.bat1.to_dyn().permute(&[2, 0, 1])
    );
    case!("unsqueeze", |i| i.a.unsqueeze(1), i.a.to_dyn().unsqueeze(1));
    case!(
        "squeeze",
        |i| i.a.unsqueeze(0).squeeze(0),
        i.a.to_dyn().unsqueeze(0)?.squeeze(0)
    );
    case!(
        "flatten",
        |i| i.bat1.flatten(0, 1),
        i.bat1.to_dyn().flatten(0, 1)
    );
    case!(
        "narrow",
        |i| i.a.narrow(1, 1, 2),
        i.a.to_dyn().narrow(1, 1, 2)
    );
    case!(
        "slice_scatter",
        |i| i.a.slice_scatter(&i.b.narrow(1, 0, 2), 1, 1, 3),
        i.a.to_dyn()
            .slice_scatter(&i.b.narrow(1, 0, 2).to_dyn(), 1, 1, 3)
    );
    case!(
        "select_scatter",
        |i| i.a.select_scatter(&i.b.narrow(0, 0, 1).squeeze(0), 0, -1),
        i.a.to_dyn()
            .select_scatter(&i.b.narrow(0, 0, 1).squeeze(0).to_dyn(), 0, -1)
    );
    case!(
        "expand",
        |i| i.bias.expand(&[2, 5]),
        i.bias.to_dyn().expand(&[2, 5])
    );
    case!(
        "contiguous",
        |i| i.a.t().contiguous(),
        i.a.to_dyn().t()?.contiguous()
    );
    // Products, softmax, indexing, losses.
    case!(
        "matmul",
        |i| i.a.matmul(&i.m),
        i.a.to_dyn().matmul(&i.m.to_dyn())
    );
    case!(
        "bmm",
        |i| i.bat1.bmm(&i.bat2),
        i.bat1.to_dyn().bmm(&i.bat2.to_dyn())
    );
    case!(
        "linear",
        |i| i.a.linear(&i.w, Some(&i.bias)),
        i.a.to_dyn().linear(&i.w.to_dyn(), Some(&i.bias.to_dyn()))
    );
    case!("softmax", |i| i.a.softmax(1), i.a.to_dyn().softmax(1));
    case!(
        "log_softmax",
        |i| i.a.log_softmax(0),
        i.a.to_dyn().log_softmax(0)
    );
    case!(
        "gather",
        |i| i.a.gather(0, &i.gidx),
        i.a.to_dyn().gather(0, &i.gidx.to_dyn())
    );
    case!(
        "index_select",
        |i| i.a.index_select(1, &i.idx),
        i.a.to_dyn().index_select(1, &i.idx.to_dyn())
    );
    // Convolutions and pooling.
    case!(
        "conv2d",
        |i| i.bat1.reshape(&[1, 2, 3, 4]).conv2d(
            &i.m.narrow(1, 0, 2).reshape(&[2, 1, 2, 2]),
            Some(&i.bias.narrow(0, 0, 2)),
            (1, 2),
            (1, 1),
            (1, 1),
            2
        ),
        i.bat1.to_dyn().reshape(&[1, 2, 3, 4])?.conv2d(
            &i.m.narrow(1, 0, 2).reshape(&[2, 1, 2, 2]).to_dyn(),
            Some(&i.bias.narrow(0, 0, 2).to_dyn()),
            (1, 2),
            (1, 1),
            (1, 1),
            2
        )
    );
    case!(
        "conv1d",
        |i| i
            .bat1
            .conv1d(&i.m.narrow(1, 0, 3).reshape(&[2, 3, 2]), None, 1, 1, 2, 1),
        i.bat1.to_dyn().conv1d(
            &i.m.narrow(1, 0, 3).reshape(&[2, 3, 2]).to_dyn(),
            None,
            1,
            1,
            2,
            1
        )
    );
    case!(
        "max_pool2d",
        |i| i.bat2.max_pool2d((2, 3), (1, 2), (1, 1), (1, 1), false),
        i.bat2
            .to_dyn()
            .max_pool2d((2, 3), (1, 2), (1, 1), (1, 1), false)
    );
    case!(
        "max_pool2d_with_indices",
        |i| i
            .bat1
            .max_pool2d_with_indices((2, 2), (1, 1), (1, 0), (1, 2), true),
        i.bat1
            .to_dyn()
            .max_pool2d_with_indices((2, 2), (1, 1), (1, 0), (1, 2), true)
    );
    case!(
        "avg_pool2d",
        |i| i.bat2.avg_pool2d((3, 2), (2, 1), (1, 0), true, false),
        i.bat2
            .to_dyn()
            .avg_pool2d((3, 2), (2, 1), (1, 0), true, false)
    );
    case!(
        "adaptive_avg_pool2d",
        |i| i.bat2.adaptive_avg_pool2d((3, 2)),
        i.bat2.to_dyn().adaptive_avg_pool2d((3, 2))
    );
    case!(
        "cross_entropy",
        |i| i.a.cross_entropy(&i.targets),
        i.a.to_dyn().cross_entropy(&i.targets.to_dyn())
    );
    case!(
        "cross_entropy_with",
        |i| i.a.cross_entropy_with(&i.targets, None, Reduction::Sum, 0),
        i.a.to_dyn()
            .cross_entropy_with(&i.targets.to_dyn(), None, Reduction::Sum, 0)
    );
    case!(
        "l1_loss",
        |i| i.a.l1_loss(&i.b, Reduction::Mean),
        i.a.to_dyn().l1_loss(&i.b.to_dyn(), Reduction::Mean)
    );
    case!(
        "smooth_l1_loss",
        |i| i.a.smooth_l1_loss(&i.b, Reduction::None, 0.5),
        i.a.to_dyn()
            .smooth_l1_loss(&i.b.to_dyn(), Reduction::None, 0.5)
    );
    case!(
        "huber_loss",
        |i| i.a.huber_loss(&i.b, Reduction::Sum, 0.7),
        i.a.to_dyn().huber_loss(&i.b.to_dyn(), Reduction::Sum, 0.7)
    );
    case!(
        "binary_cross_entropy_with_logits",
        |i| i.a.binary_cross_entropy_with_logits(
            &i.pos.mul_scalar(s(0.5)),
            Some(&i.b),
            Some(&i.pos),
            Reduction::None
        ),
        i.a.to_dyn().binary_cross_entropy_with_logits(
            &i.pos.mul_scalar(s(0.5)).to_dyn(),
            Some(&i.b.to_dyn()),
            Some(&i.pos.to_dyn()),
            Reduction::None
        )
    );
    case!(
        "nll_loss",
        |i| i.a.nll_loss(
            &i.targets,
            Some(&i.pos.narrow(0, 0, 1).reshape(&[4])),
            Reduction::Mean,
            0
        ),
        i.a.to_dyn().nll_loss(
            &i.targets.to_dyn(),
            Some(&i.pos.narrow(0, 0, 1).reshape(&[4]).to_dyn()),
            Reduction::Mean,
            0
        )
    );
    // Written by hand on both fronts.
    case!(
        "cat",
        |i| Tensor::cat([&i.a, &i.b.narrow(0, 0, 2)], 0),
        DynTensor::cat(&[&i.a.to_dyn(), &i.b.narrow(0, 0, 2).to_dyn()], 0)
    );
    case!(
        "stack",
        |i| Tensor::stack([&i.a, &i.b], 1),
        DynTensor::stack(&[&i.a.to_dyn(), &i.b.to_dyn()], 1)
    );
    case!(
        "to",
        |i| i.a.t().to(Cpu),
        i.a.to_dyn().t()?.to(DynDevice::cpu())
    );
    case!(
        "to_dtype",
        |i| i.a.to_dtype::<f64>(),
        i.a.to_dyn().to_dtype(DType::F64)
    );
    case!(
        "where_cond",
        |i| i.a.gt(&i.b).where_cond(&i.a, &i.pos),
        i.a.to_dyn()
            .gt(&i.b.to_dyn())?
            .where_cond(&i.a.to_dyn(), &i.pos.to_dyn())
    );
    // Ops added after the table was written come last: each case draws fresh inputs from the
    // seeded stream, so an earlier place would change every later case's inputs.
    case!("erf", |i| i.a.erf(), i.a.to_dyn().erf());
    cases
}

#[path = "common/ops.rs"]
mod ops;

#[test]
fn every_op_of_the_table_is_tested_on_both_fronts() {
    ops::assert_covers(
        "parity",
        cases::<f64>().iter().map(|(name, _)| *name),
        |_| None,
    );
}

#[test]
fn the_ops_once_missing_on_one_front_are_declared() {
    let declared: BTreeSet<&str> = devtype::declared_ops().into_iter().collect();
    for op in [
        "pow",
        "minimum",
        "maximum",
        "clamp",
        "clamp_min",
        "clamp_max",
        "sub_scalar",
        "div_scalar",
        "t",
        "expand",
        "max_all",
        "argmax_all",
        "max_keepdim",
        "bmm",
        "sum",
        "mean",
        "cumsum",
        "sort",
        "argsort",
        "topk",
        "masked_fill",
    ] {
        assert!(
            declared.contains(op),
            "{op} is not declared for both fronts"
        );
    }
}

/// Runs every case in `E` and checks that both fronts agree exactly.
fn both_fronts_agree<E: Float>() {
    // One dtype at a time, each from the same seed: the random stream is global, and the
    // tests run in parallel threads (a few-element argmax can be constant by chance, so the
    // inputs must be the ones this test was written against).
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    devtype::manual_seed(7);
    let dtype = E::DTYPE;
    for (name, case) in cases::<E>() {
        let ((ts, tv), (ds, dv)) = case().unwrap_or_else(|e| panic!("{name} ({dtype:?}): {e}"));
        assert_eq!(ts, ds, "{name} ({dtype:?}): shapes differ");
        assert_eq!(tv.len(), dv.len(), "{name} ({dtype:?})");
        for (k, (x, y)) in tv.iter().zip(&dv).enumerate() {
            // Exactly equal: both fronts run the same kernel. Miri adds a few ulps of random
            // error to transcendental functions, separately on each call (in f32 for the
            // 16-bit types, which can move their rounding by one of their ulps).
            let ulp = match dtype {
                DType::F64 => 1e-12,
                DType::F32 => 1e-6,
                DType::F16 => 2e-3,
                _ => 1.6e-2,
            };
            let tolerance = if cfg!(miri) {
                ulp * x.abs().max(1.0)
            } else {
                0.0
            };
            assert!(
                (x - y).abs() <= tolerance || (x.is_nan() && y.is_nan()),
                "{name}[{k}] ({dtype:?}): typed {x} vs dynamic {y}"
            );
        }
        // Fresh random inputs every case: a constant result would mean a broken op.
        assert!(
            tv.iter().any(|&v| v != tv[0]) || tv.len() <= 1 || name.ends_with("scalar"),
            "{name} ({dtype:?}): every value is {}",
            tv[0]
        );
    }
}

// Under Miri (CI runs this suite interpreted, looking for undefined behaviour) one type of each
// kind runs: f32 for the generic kernels f64 shares, f16 for the widening path bf16 shares. A
// hundred ops per type cost over a minute of interpretation each.
#[test]
#[cfg(not(miri))]
fn both_fronts_give_the_same_values_in_f64() {
    both_fronts_agree::<f64>();
}

#[test]
fn both_fronts_give_the_same_values_in_f32() {
    both_fronts_agree::<f32>();
}

#[test]
fn both_fronts_give_the_same_values_in_f16() {
    both_fronts_agree::<f16>();
}

#[test]
#[cfg(not(miri))]
fn both_fronts_give_the_same_values_in_bf16() {
    both_fronts_agree::<bf16>();
}
