//! The element-type suffixes the op families name their CUDA kernels with
//! (`<kernel>_<suffix>`), and [`typed`] to build those names. A leaf: the families import it,
//! and the list of kernel files that imports the families is [`super::kernel_files`].

/// Every element type: copies, casts (between every pair), creation, comparisons, `where`,
/// indexing.
pub(crate) const ALL_TYPES: [&str; 6] = ["f32", "f64", "i64", "bool", "f16", "bf16"];
/// The types with arithmetic: element-wise math, reductions.
pub(crate) const NUMERIC_TYPES: [&str; 5] = ["f32", "f64", "i64", "f16", "bf16"];
/// The floating-point types: float-only math, softmax, relu's gradient. The 16-bit ones
/// (`f16`, `bf16`) compute in `f32` and round once.
pub(crate) const FLOAT_TYPES: [&str; 4] = ["f32", "f64", "f16", "bf16"];
/// `f32` and `f64` only: the families whose 16-bit floats run the `f32` kernels on widened
/// copies (losses, scatter-adds).
pub(crate) const WIDE_FLOAT_TYPES: [&str; 2] = ["f32", "f64"];

/// `<base>_<t>` for each type suffix `t`.
pub(crate) fn typed(names: &mut Vec<String>, base: &str, types: &[&str]) {
    names.extend(types.iter().map(|t| format!("{base}_{t}")));
}
