//! Fused cross-entropy over class indices (class weights, `ignore_index`, reductions), whose
//! backward is one fused kernel: `(softmax(x) - onehot(t)) * weight[t] * g / total_weight`.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::Error;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::{DType, Scalar};
use crate::dyn_tensor::check::same_device_arguments;
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::ops::{BinaryOp, CompareOp, UnaryOp};
use crate::tensor::{ArgumentOn, ElementIs, HasDevice, OperandOn};

/// `cross_entropy(logits, targets, weight)`, recorded (targets and weight get no gradient).
pub(crate) fn cross_entropy(
    logits: In<'_>,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
) -> Result<Out> {
    let value = ops::loss::cross_entropy(logits.value, targets, weight, options)?;
    let node = record("NllLossBackward0", &[logits.node], |_| {
        let (x, t, w) = (logits.value.clone(), targets.clone(), weight.cloned());
        move |g| {
            Ok(vec![Some(
                ops::loss::cross_entropy_backward::cross_entropy_backward(
                    &x,
                    &t,
                    w.as_ref(),
                    options,
                    &g,
                )?,
            )])
        }
    });
    Ok(Out { value, node })
}

/// PyTorch's device check of `nll_loss_forward`: logits, targets, then the weight.
fn check_loss(logits: In<'_>, targets: &RawTensor, weight: Option<In<'_>>) -> Result<()> {
    let mut args = vec![("self", logits.value), ("target", targets)];
    if let Some(w) = weight {
        args.push(("weight", w.value));
    }
    same_device_arguments("wrapper_CUDA_nll_loss_forward", &args)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Element-wise losses (`l1_loss`, `smooth_l1_loss`, `huber_loss`,
// `binary_cross_entropy_with_logits`) and `nll_loss`, composed from recorded ops: each step
// records its own backward rule, so the gradients are those of the composition (and reach the
// target too where PyTorch's do: every one of these but `nll_loss` differentiates its target).

/// Folds per-element losses as `reduction` says.
fn reduce(loss: Out, reduction: Reduction) -> Result<Out> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Sum => super::reduce::sum_mean(loss.input(), &[], false, false),
        Reduction::Mean => super::reduce::sum_mean(loss.input(), &[], false, true),
    }
}

/// Runs `f` on `a` and `b` converted to their result type (the dynamic front's mixed dtypes,
/// as PyTorch's element-wise ops promote them).
fn promoted(a: In<'_>, b: In<'_>, f: impl FnOnce(In<'_>, In<'_>) -> Result<Out>) -> Result<Out> {
    let to = super::binary::result_type(a.value, b.value);
    let ca = (a.value.dtype != to)
        .then(|| super::copy::cast(a, to))
        .transpose()?;
    let cb = (b.value.dtype != to)
        .then(|| super::copy::cast(b, to))
        .transpose()?;
    f(
        ca.as_ref().map_or(a, Out::input),
        cb.as_ref().map_or(b, Out::input),
    )
}

/// `|input - target|` (broadcast as PyTorch's element-wise ops).
fn abs_diff(input: In<'_>, target: In<'_>) -> Result<Out> {
    let d = super::binary::binary(input, target, BinaryOp::Sub)?;
    super::unary::unary(d.input(), UnaryOp::Abs)
}

/// `l1_loss(input, target)`: `|input - target|`, reduced.
pub(crate) fn l1_loss(input: In<'_>, target: In<'_>, reduction: Reduction) -> Result<Out> {
    promoted(input, target, |x, t| reduce(abs_diff(x, t)?, reduction))
}

/// `smooth_l1_loss` (`beta > 0`) and `huber_loss` (`huber`: `delta`): with `z = |x - t|`,
/// `0.5 z^2 / beta` where `z < beta`, else `z - 0.5 beta` (Smooth L1); `0.5 z^2` where
/// `z < delta`, else `delta (z - 0.5 delta)` (Huber).
fn smooth(input: In<'_>, target: In<'_>, reduction: Reduction, k: f64, huber: bool) -> Result<Out> {
    promoted(input, target, |x, t| {
        let z = abs_diff(x, t)?;
        if !huber && k == 0.0 {
            // PyTorch's Smooth L1 with `beta == 0` is the L1 loss.
            return reduce(z, reduction);
        }
        let near = ops::binary::compare_scalar(&z.value, Scalar::Float(k), CompareOp::Lt)?;
        let sq = super::unary::unary(z.input(), UnaryOp::Square)?;
        let half_sq =
            super::binary::binary_scalar(sq.input(), Scalar::Float(0.5), BinaryOp::Mul, false)?;
        let (inner, outer) = if huber {
            let shifted = super::binary::binary_scalar(
                z.input(),
                Scalar::Float(0.5 * k),
                BinaryOp::Sub,
                false,
            )?;
            let outer = super::binary::binary_scalar(
                shifted.input(),
                Scalar::Float(k),
                BinaryOp::Mul,
                false,
            )?;
            (half_sq, outer)
        } else {
            let inner = super::binary::binary_scalar(
                half_sq.input(),
                Scalar::Float(k),
                BinaryOp::Div,
                false,
            )?;
            let outer = super::binary::binary_scalar(
                z.input(),
                Scalar::Float(0.5 * k),
                BinaryOp::Sub,
                false,
            )?;
            (inner, outer)
        };
        reduce(
            super::copy::where_cond(&near, inner.input(), outer.input())?,
            reduction,
        )
    })
}

/// `smooth_l1_loss(input, target, beta)`.
pub(crate) fn smooth_l1_loss(
    input: In<'_>,
    target: In<'_>,
    reduction: Reduction,
    beta: f64,
) -> Result<Out> {
    if beta < 0.0 {
        return Err(Error::Shape(
            "smooth_l1_loss does not support negative values for beta.".into(),
        ));
    }
    smooth(input, target, reduction, beta, false)
}

/// `huber_loss(input, target, delta)`.
pub(crate) fn huber_loss(
    input: In<'_>,
    target: In<'_>,
    reduction: Reduction,
    delta: f64,
) -> Result<Out> {
    if delta <= 0.0 || delta.is_nan() {
        return Err(Error::Shape(
            "huber_loss does not support non-positive values for delta.".into(),
        ));
    }
    smooth(input, target, reduction, delta, true)
}

/// `torch.Size([3, 4])`, as PyTorch prints a shape in its `ValueError`s.
fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// `binary_cross_entropy_with_logits(input, target, weight, pos_weight)`, in PyTorch's stable
/// form: `(1 - t) x - lw * log_sigmoid(x)` with `lw = 1 + (pos_weight - 1) t`, where
/// `-log_sigmoid(x) = max(-x, 0) + log(1 + exp(-|x|))` never overflows; times `weight`.
pub(crate) fn bce_with_logits(
    input: In<'_>,
    target: In<'_>,
    weight: Option<In<'_>>,
    pos_weight: Option<In<'_>>,
    reduction: Reduction,
) -> Result<Out> {
    if target.value.shape() != input.value.shape() {
        return Err(Error::Shape(format!(
            "Target size ({}) must be the same as input size ({})",
            torch_size(target.value.shape()),
            torch_size(input.value.shape())
        )));
    }
    if !target.value.dtype.is_float() {
        // `(1 - target).mul_(input)`: the product's type cannot be written into the target's.
        return Err(Error::ResultTypeCast {
            result: super::binary::result_type(input.value, target.value),
            output: target.value.dtype,
        });
    }
    promoted(input, target, |x, t| {
        let neg = super::unary::unary(x, UnaryOp::Neg)?;
        let relu_neg = super::unary::unary(neg.input(), UnaryOp::Relu)?;
        let abs = super::unary::unary(x, UnaryOp::Abs)?;
        let neg_abs = super::unary::unary(abs.input(), UnaryOp::Neg)?;
        let e = super::unary::unary(neg_abs.input(), UnaryOp::Exp)?;
        let one_plus =
            super::binary::binary_scalar(e.input(), Scalar::Float(1.0), BinaryOp::Add, false)?;
        let soft = super::unary::unary(one_plus.input(), UnaryOp::Log)?;
        // -log_sigmoid(x)
        let mut nls = super::binary::binary(relu_neg.input(), soft.input(), BinaryOp::Add)?;
        if let Some(pw) = pos_weight {
            let pw_m1 = super::binary::binary_scalar(pw, Scalar::Float(1.0), BinaryOp::Sub, false)?;
            let scaled = promoted(pw_m1.input(), t, |a, b| {
                super::binary::binary(a, b, BinaryOp::Mul)
            })?;
            let lw = super::binary::binary_scalar(
                scaled.input(),
                Scalar::Float(1.0),
                BinaryOp::Add,
                false,
            )?;
            nls = promoted(nls.input(), lw.input(), |a, b| {
                super::binary::binary(a, b, BinaryOp::Mul)
            })?;
        }
        let one_minus_t = super::binary::binary_scalar(t, Scalar::Float(1.0), BinaryOp::Sub, true)?;
        let lin = super::binary::binary(one_minus_t.input(), x, BinaryOp::Mul)?;
        let mut loss = promoted(lin.input(), nls.input(), |a, b| {
            super::binary::binary(a, b, BinaryOp::Add)
        })?;
        if let Some(w) = weight {
            loss = promoted(loss.input(), w, |a, b| {
                super::binary::binary(a, b, BinaryOp::Mul)
            })?;
        }
        reduce(loss, reduction)
    })
}

/// `nll_loss(input, target, weight, ignore_index)` over log-probabilities `[batch, classes]`
/// (or `[classes]` with a 0-D target): `-weight[t] * input[i, t]`, the mean divided by the
/// summed weights of the targets not ignored (NaN when every target is ignored, as PyTorch).
///
/// On the CPU a target outside `[0, classes)` (other than `ignore_index`) fails with PyTorch's
/// text; on a GPU it is not read back (the host would wait), and the gather it feeds gives NaN.
pub(crate) fn nll_loss(
    input: In<'_>,
    target: &RawTensor,
    weight: Option<&RawTensor>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Out> {
    if target.dtype != DType::I64 {
        return Err(Error::Shape(format!(
            "expected target dtype to be Long or Byte, but got {}",
            target.dtype
        )));
    }
    let target = target.clone();
    let (n, c) = ops::loss::check(input.value, &target, weight)?;
    if target.device.is_cpu() {
        for t in target.to_vec::<i64>()? {
            if t != ignore_index && (t < 0 || t >= c as i64) {
                return Err(Error::Shape(format!("Target {t} is out of bounds.")));
            }
        }
    }
    let kept = ops::binary::compare_scalar(&target, Scalar::Int(ignore_index), CompareOp::Ne)?;
    let zero = kit::zeros(&[], &target)?;
    // Ignored rows read class 0 (their weight is zero).
    let safe = ops::where_cond::where_cond(&kept, &target, &zero)?;
    let rows = kit::reshape(&safe, &[n, 1])?;
    let x = if input.value.rank() == 1 {
        Some(super::shape::reshape(input, &[1, c as isize])?)
    } else {
        None
    };
    let picked = super::index::gather(x.as_ref().map_or(input, Out::input), 1, &rows)?;
    let picked = super::shape::reshape(picked.input(), &[n as isize])?;
    let kept = ops::copy::cast(&kit::reshape(&kept, &[n])?, input.value.dtype)?;
    let w = match weight {
        Some(w) => kit::mul(
            ops::index::index_select(w, 0, &kit::reshape(&safe, &[n])?)?,
            &kept,
        )?,
        None => kept,
    };
    let weighted = super::binary::binary(
        picked.input(),
        Out::untracked(w.clone()).input(),
        BinaryOp::Mul,
    )?;
    let loss = super::unary::unary(weighted.input(), UnaryOp::Neg)?;
    match reduction {
        Reduction::None if input.value.rank() == 1 => super::shape::reshape(loss.input(), &[]),
        Reduction::None => Ok(loss),
        Reduction::Sum => super::reduce::sum_mean(loss.input(), &[], false, false),
        Reduction::Mean => {
            let total = super::reduce::sum_mean(loss.input(), &[], false, false)?;
            let total_weight = ops::reduce::reduce(&w, &[], false, ops::ReduceOp::Sum)?;
            super::binary::binary(
                total.input(),
                Out::untracked(total_weight).input(),
                BinaryOp::Div,
            )
        }
    }
}

/// PyTorch's device check of the element-wise losses (TensorIterator's, over the input, the
/// target and any weights).
fn check_elementwise(tensors: &[Option<In<'_>>]) -> Result<()> {
    let values: Vec<&RawTensor> = tensors.iter().flatten().map(|t| t.value).collect();
    same_device_elementwise(&values, false)?;
    Ok(())
}

declare_ops! {
    /// Mean cross-entropy of these logits (`[batch, classes]`) against class indices
    /// (`F.cross_entropy(x, t)`).
    Float fn cross_entropy(x, targets: (impl ArgumentOn<D> + HasDevice<Element = i64>)) -> Same
        check { check_loss(x, targets.value, None)?; }
        = cross_entropy(x, targets.value, None, CrossEntropyOptions { reduction: Reduction::Mean, ignore_index: -100 });
    /// Cross-entropy of these logits against class indices, with optional class weights,
    /// PyTorch's `ignore_index` (`-100` by default) and reduction (`F.cross_entropy`).
    Float fn cross_entropy_with(x, targets: (impl ArgumentOn<D> + HasDevice<Element = i64>), weight: OptTensor, reduction: Reduction, ignore_index: i64) -> Same
        check { check_loss(x, targets.value, weight)?; }
        = cross_entropy(x, targets.value, weight.map(|w| w.value), CrossEntropyOptions { reduction, ignore_index });
    /// The L1 loss `|self - target|`, reduced (`F.l1_loss(x, t, reduction=...)`).
    Float fn l1_loss(x, target: (impl OperandOn<D> + ElementIs<E>), reduction: Reduction) -> Same
        check { check_elementwise(&[Some(x), Some(target)])?; }
        = l1_loss(x, target, reduction);
    /// The Smooth L1 loss (`F.smooth_l1_loss(x, t, reduction=..., beta=...)`): quadratic
    /// below `beta`, linear above; `beta = 0` is the L1 loss.
    Float fn smooth_l1_loss(x, target: (impl OperandOn<D> + ElementIs<E>), reduction: Reduction, beta: f64) -> Same
        check { check_elementwise(&[Some(x), Some(target)])?; }
        = smooth_l1_loss(x, target, reduction, beta);
    /// The Huber loss (`F.huber_loss(x, t, reduction=..., delta=...)`): quadratic below
    /// `delta`, linear (slope `delta`) above.
    Float fn huber_loss(x, target: (impl OperandOn<D> + ElementIs<E>), reduction: Reduction, delta: f64) -> Same
        check { check_elementwise(&[Some(x), Some(target)])?; }
        = huber_loss(x, target, reduction, delta);
    /// Binary cross-entropy of these logits against probabilities `target` (same shape),
    /// with optional element weights and positive-class weights, in the numerically stable
    /// form (`F.binary_cross_entropy_with_logits(x, t, weight, pos_weight=..., reduction=...)`).
    Float fn binary_cross_entropy_with_logits(x, target: (impl OperandOn<D> + ElementIs<E>), weight: OptTensor, pos_weight: OptTensor, reduction: Reduction) -> Same
        check { check_elementwise(&[Some(x), Some(target), weight, pos_weight])?; }
        = bce_with_logits(x, target, weight, pos_weight, reduction);
    /// The negative log-likelihood of these log-probabilities (`[batch, classes]`) at class
    /// indices `target`, with optional class weights and `ignore_index`
    /// (`F.nll_loss(x, t, weight, ignore_index=..., reduction=...)`).
    Float fn nll_loss(x, target: (impl ArgumentOn<D> + HasDevice<Element = i64>), weight: OptTensor, reduction: Reduction, ignore_index: i64) -> Same
        check { check_loss(x, target.value, weight)?; }
        = nll_loss(x, target.value, weight.map(|w| w.value), reduction, ignore_index);
}
