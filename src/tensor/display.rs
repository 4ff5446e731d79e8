//! Printing tensors the way PyTorch prints them: `tensor([[1., 2.]], device='cuda:0')`.
//! Values on a GPU are copied to the host first, which waits for the GPU (a host sync).

use super::DType;
use crate::core::raw::RawTensor;
use std::fmt;

/// Above this many elements, only the first and last three per dimension are shown.
const SUMMARIZE_ABOVE: usize = 1000;
const EDGE_ITEMS: usize = 3;
/// PyTorch's default `linewidth`.
const LINE_WIDTH: usize = 80;

/// How every number of one tensor is written, decided from all of them (as `_Formatter`).
enum Style {
    Int,
    Bool,
    /// Floats that are all whole numbers: `1.`, `-2.`.
    WholeFloat,
    /// `0.1234`.
    Fixed,
    /// `1.2346e+08`.
    Scientific,
}

/// One value to print: integers are kept as `i64`, so that every one prints exactly (an `f64`
/// would round those past 2^53: `9007199254740993` to `...992`).
#[derive(Clone, Copy)]
enum Num {
    Float(f64),
    Int(i64),
}

impl Num {
    /// The value as `f64`, for the float styles' decisions.
    fn as_f64(self) -> f64 {
        match self {
            Num::Float(v) => v,
            Num::Int(v) => v as f64,
        }
    }

    fn is_finite(self) -> bool {
        match self {
            Num::Float(v) => v.is_finite(),
            Num::Int(_) => true,
        }
    }
}

fn style_for(values: &[Num], dtype: DType) -> Style {
    match dtype {
        DType::I64 => return Style::Int,
        DType::Bool => return Style::Bool,
        _ => {}
    }
    let finite: Vec<f64> = values
        .iter()
        .map(|v| v.as_f64())
        .filter(|v| v.is_finite())
        .collect();
    let nonzero: Vec<f64> = finite
        .iter()
        .map(|v| v.abs())
        .filter(|&v| v != 0.0)
        .collect();
    let max = nonzero.iter().copied().fold(0.0f64, f64::max);
    let min = nonzero.iter().copied().fold(f64::INFINITY, f64::min);
    let wide = !nonzero.is_empty() && (max / min > 1000.0 || max > 1e8);
    if finite.iter().all(|v| v.fract() == 0.0) {
        return if wide {
            Style::Scientific
        } else {
            Style::WholeFloat
        };
    }
    if wide || (!nonzero.is_empty() && min < 1e-4) {
        Style::Scientific
    } else {
        Style::Fixed
    }
}

fn write_value(v: Num, style: &Style) -> String {
    let v = match (v, style) {
        // Integers print exactly, whatever their size (PyTorch's int mode has no exponent).
        (Num::Int(i), Style::Int) => return i.to_string(),
        (Num::Int(i), Style::Bool) => return (if i != 0 { "True" } else { "False" }).into(),
        (v, _) => v.as_f64(),
    };
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match style {
        // Only integer tensors take these styles, and their values are `Num::Int`.
        Style::Int => format!("{v:.0}"),
        Style::Bool => (if v != 0.0 { "True" } else { "False" }).into(),
        Style::WholeFloat => format!("{v:.0}."),
        Style::Fixed => format!("{v:.4}"),
        Style::Scientific => {
            // Rust writes `1.2346e8`; PyTorch (C printf) writes `1.2346e+08`.
            crate::core::format::c_style_exponent(format!("{v:.4e}"))
        }
    }
}

/// Positions to print along a dimension of `size`, with `None` standing for the `...` of a
/// summarised dimension. Positions index the values read: a summarised dimension holds only
/// its first and last `EDGE_ITEMS` (see [`summarized`]).
fn shown_indices(size: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && size > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((EDGE_ITEMS..2 * EDGE_ITEMS).map(Some))
            .collect()
    } else {
        (0..size).map(Some).collect()
    }
}

struct Printer<'a> {
    values: &'a [Num],
    shape: &'a [usize],
    strides: Vec<usize>,
    style: Style,
    width: usize,
    summarize: bool,
}

impl Printer<'_> {
    fn write(&self, out: &mut String, dim: usize, offset: usize, indent: usize) {
        if dim == self.shape.len() {
            out.push_str(&write_value(self.values[offset], &self.style));
            return;
        }
        let idx = shown_indices(self.shape[dim], self.summarize);
        if dim + 1 == self.shape.len() {
            // The innermost dimension wraps at 80 columns, as PyTorch's `_vector_str`.
            let items: Vec<String> = idx
                .iter()
                .map(|i| match i {
                    Some(i) => format!(
                        "{:>w$}",
                        write_value(self.values[offset + i * self.strides[dim]], &self.style),
                        w = self.width
                    ),
                    None => " ...".to_string(),
                })
                .collect();
            let per_line = ((LINE_WIDTH.saturating_sub(indent)) / (self.width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            out.push('[');
            out.push_str(&lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
            out.push(']');
            return;
        }
        out.push('[');
        for (n, i) in idx.iter().enumerate() {
            if n > 0 {
                out.push(',');
                for _ in 0..(self.shape.len() - dim - 1) {
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent + 1));
            }
            match i {
                Some(i) => self.write(out, dim + 1, offset + i * self.strides[dim], indent + 1),
                None => out.push_str("..."),
            }
        }
        out.push(']');
    }
}

/// The elements a summarised print shows, as PyTorch's `get_summarized_data`: along every
/// dimension longer than `2 * EDGE_ITEMS`, the first and last `EDGE_ITEMS`. At most
/// `(2 * EDGE_ITEMS)^rank` elements are read, however large (or expanded) the tensor is.
fn summarized(t: &RawTensor) -> crate::core::error::Result<RawTensor> {
    let mut out = t.clone();
    for d in 0..t.rank() {
        let size = out.shape()[d];
        if size > 2 * EDGE_ITEMS {
            let head = crate::ops::shape::narrow(&out, d as isize, 0, EDGE_ITEMS)?;
            let tail = crate::ops::shape::narrow(&out, d as isize, size - EDGE_ITEMS, EDGE_ITEMS)?;
            out = crate::ops::cat::cat(&[&head, &tail], d as isize)?;
        }
    }
    Ok(out)
}

/// Writes `tensor(...)` for any tensor.
pub(crate) fn format(t: &RawTensor, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let summarize = t.numel() > SUMMARIZE_ABOVE;
    let data;
    let shown_data = if summarize {
        data = summarized(t).map_err(|_| fmt::Error)?;
        &data
    } else {
        t
    };
    let values: Vec<Num> = match shown_data.dtype {
        DType::F32 => shown_data
            .to_vec::<f32>()
            .map(|v| v.into_iter().map(|x| Num::Float(x.into())).collect()),
        DType::F64 => shown_data
            .to_vec::<f64>()
            .map(|v| v.into_iter().map(Num::Float).collect()),
        // Exact in f64, as PyTorch's `_tensor_str` reads every value through `.item()`.
        DType::F16 => shown_data
            .to_vec::<half::f16>()
            .map(|v| v.into_iter().map(|x| Num::Float(x.to_f64())).collect()),
        DType::BF16 => shown_data
            .to_vec::<half::bf16>()
            .map(|v| v.into_iter().map(|x| Num::Float(x.to_f64())).collect()),
        DType::I64 => shown_data
            .to_vec::<i64>()
            .map(|v| v.into_iter().map(Num::Int).collect()),
        DType::Bool => shown_data
            .to_vec::<bool>()
            .map(|v| v.into_iter().map(|x| Num::Int(x.into())).collect()),
    }
    .map_err(|_| fmt::Error)?;
    let shape = t.shape();
    // Strides of the values read: summarised dims hold `2 * EDGE_ITEMS` of them.
    let strides = super::layout::contiguous_strides(shown_data.shape()).to_vec();
    // The numbers actually shown decide the style and the column width.
    let mut shown = Vec::new();
    collect_shown(&values, shape, &strides, 0, 0, summarize, &mut shown);
    let style = style_for(&shown, t.dtype);
    // As PyTorch's `_Formatter`: the width comes from the finite values only.
    let width = shown
        .iter()
        .filter(|v| v.is_finite())
        .map(|&v| write_value(v, &style).len())
        .max()
        .unwrap_or(0);
    let mut body = String::new();
    if values.is_empty() {
        body.push_str("[]");
    } else {
        let printer = Printer {
            values: &values,
            shape,
            strides,
            style,
            width,
            summarize,
        };
        printer.write(&mut body, 0, 0, "tensor(".len());
    }
    let mut suffix = String::new();
    if values.is_empty() && shape.len() > 1 {
        suffix.push_str(&format!(
            ", size=({})",
            shape
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !t.device.is_cpu() {
        suffix.push_str(&format!(", device='{}'", t.device));
    }
    match t.dtype {
        DType::F64 | DType::F16 | DType::BF16 => {
            suffix.push_str(", dtype=");
            suffix.push_str(t.dtype.torch_name());
        }
        DType::I64 if values.is_empty() => suffix.push_str(", dtype=torch.int64"),
        DType::Bool if values.is_empty() => suffix.push_str(", dtype=torch.bool"),
        _ => {}
    }
    write!(f, "tensor({body}{suffix})")
}

fn collect_shown(
    values: &[Num],
    shape: &[usize],
    strides: &[usize],
    dim: usize,
    offset: usize,
    summarize: bool,
    out: &mut Vec<Num>,
) {
    if values.is_empty() {
        return;
    }
    if dim == shape.len() {
        out.push(values[offset]);
        return;
    }
    for i in shown_indices(shape[dim], summarize).into_iter().flatten() {
        collect_shown(
            values,
            shape,
            strides,
            dim + 1,
            offset + i * strides[dim],
            summarize,
            out,
        );
    }
}

/// [`format`], then PyTorch's autograd suffix: `requires_grad=True` for a parameter,
/// `grad_fn=<AddBackward0>` for a tracked op's result.
pub(crate) fn format_tracked(
    t: &RawTensor,
    node: Option<&crate::graph::Node>,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let Some(node) = node else {
        return format(t, f);
    };
    let text = Shown(t).to_string();
    let suffix = if node.is_leaf() {
        "requires_grad=True".to_string()
    } else {
        format!("grad_fn=<{}>", node.name())
    };
    match text.strip_suffix(')') {
        Some(head) => write!(f, "{head}, {suffix})"),
        None => write!(f, "{text} ({suffix})"),
    }
}

/// A raw tensor, printed by [`format`].
struct Shown<'a>(&'a RawTensor);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use crate::prelude::*;

    #[test]
    fn prints_like_pytorch() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
        assert_eq!(t.to_string(), "tensor([[1., 2.],\n        [3., 4.]])");
        let t = Tensor::from_vec(vec![0.5f32, -1.25], [2], Cpu);
        assert_eq!(t.to_string(), "tensor([ 0.5000, -1.2500])");
        let t = Tensor::from_vec(vec![1.5f64], [], Cpu);
        assert_eq!(t.to_string(), "tensor(1.5000, dtype=torch.float64)");
        let t = Tensor::from_vec(vec![3i64, 10], [2], Cpu);
        assert_eq!(t.to_string(), "tensor([ 3, 10])");
        let t = Tensor::from_vec(vec![true, false], [2], Cpu);
        assert_eq!(t.to_string(), "tensor([ True, False])");
        let t = Tensor::from_vec(vec![1e-5f32, 1.0], [2], Cpu);
        assert_eq!(t.to_string(), "tensor([1.0000e-05, 1.0000e+00])");
        let t = Tensor::<Cpu>::zeros([2, 1, 2], Cpu);
        assert_eq!(t.to_string(), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])");
        let t = Tensor::<Cpu>::zeros([0, 3], Cpu);
        assert_eq!(t.to_string(), "tensor([], size=(0, 3))");
        let t = Tensor::from_vec(vec![9007199254740993i64, -1, i64::MIN], [3], Cpu);
        assert_eq!(
            t.to_string(),
            "tensor([    9007199254740993,                   -1, -9223372036854775808])"
        );
        let t = Tensor::<Cpu>::arange(2000, Cpu);
        assert_eq!(t.to_string(), "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
    }
}
