//! Parameters and buffers saved and loaded as safetensors, under their `named_parameters()`
//! and `named_buffers()` names (the names PyTorch's `state_dict` uses, so files load in either
//! direction).

use super::{Buffer, BufferMut, Module};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::tensor::{DType, Element, Float, Tensor};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use std::path::Path;

fn st_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::Bool => Dtype::BOOL,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
    }
}

/// An error unless `view`'s bytes are exactly its shape's elements of `width` bytes each.
fn check_byte_len(
    path: &std::path::Path,
    name: &str,
    view: &safetensors::tensor::TensorView<'_>,
    width: usize,
) -> Result<()> {
    let numel = view
        .shape()
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if numel.and_then(|n| n.checked_mul(width)) != Some(view.data().len()) {
        return Err(checkpoint_error(
            path,
            format!(
                "tensor \"{name}\": shape {:?} does not match its {} bytes of data",
                view.shape(),
                view.data().len()
            ),
        ));
    }
    Ok(())
}

fn checkpoint_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Checkpoint {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// Little-endian bytes of a tensor's values (copied to the host).
fn to_bytes(t: &RawTensor) -> Result<Vec<u8>> {
    fn go<E: Element>(t: &RawTensor, bytes: impl Fn(E) -> Vec<u8>) -> Result<Vec<u8>> {
        Ok(t.to_vec::<E>()?.into_iter().flat_map(bytes).collect())
    }
    match t.dtype {
        DType::F32 => go::<f32>(t, |v| v.to_le_bytes().to_vec()),
        DType::F64 => go::<f64>(t, |v| v.to_le_bytes().to_vec()),
        DType::I64 => go::<i64>(t, |v| v.to_le_bytes().to_vec()),
        DType::Bool => go::<bool>(t, |v| vec![v as u8]),
        DType::F16 => go::<half::f16>(t, |v| v.to_le_bytes().to_vec()),
        DType::BF16 => go::<half::bf16>(t, |v| v.to_le_bytes().to_vec()),
    }
}

/// The first name given twice, if any.
fn repeated_name<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

/// The error for two different tensors under one name: a file holds one tensor per name.
fn repeated_name_error(path: &Path, name: &str) -> Error {
    checkpoint_error(
        path,
        format!(
            "two different parameters are named \"{name}\"; a checkpoint holds one tensor per name"
        ),
    )
}

/// Writes named tensors to `path` in the safetensors format. A name given twice is an error
/// naming it, and nothing is written.
pub(crate) fn write(path: &Path, tensors: &[(String, &RawTensor)]) -> Result<()> {
    write_with_metadata(path, tensors, None)
}

/// [`write`], with the header's `__metadata__` (string to string).
pub(crate) fn write_with_metadata(
    path: &Path,
    tensors: &[(String, &RawTensor)],
    metadata: Option<std::collections::HashMap<String, String>>,
) -> Result<()> {
    if let Some(name) = repeated_name(tensors.iter().map(|(n, _)| n.as_str())) {
        return Err(repeated_name_error(path, name));
    }
    let data = tensors
        .iter()
        .map(|(name, t)| Ok((name.clone(), t.dtype, t.shape().to_vec(), to_bytes(t)?)))
        .collect::<Result<Vec<_>>>()?;
    let views = data
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(st_dtype(*dtype), shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| checkpoint_error(path, e))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, metadata, path).map_err(|e| checkpoint_error(path, e))
}

/// The tensors of a file (on the CPU, by name) and its metadata.
pub(crate) type RawFile = (
    Vec<(String, RawTensor)>,
    std::collections::HashMap<String, String>,
);

/// Reads every tensor of `path` onto the CPU in its own dtype, with the file's metadata (the
/// header checked as [`read`] checks it).
pub(crate) fn read_raw(path: &Path) -> Result<RawFile> {
    let bytes = std::fs::read(path).map_err(|e| checkpoint_error(path, e))?;
    check_header(path, &bytes)?;
    let (_, meta) = SafeTensors::read_metadata(&bytes).map_err(|e| checkpoint_error(path, e))?;
    let metadata = meta.metadata().clone().unwrap_or_default();
    let file = SafeTensors::deserialize(&bytes).map_err(|e| checkpoint_error(path, e))?;
    let mut out = Vec::new();
    for (name, view) in file.tensors() {
        let shape = crate::core::layout::Dims::shape(view.shape())?;
        let numel: usize = view.shape().iter().product();
        let data = view.data();
        let bad = || {
            checkpoint_error(
                path,
                format!(
                    "tensor \"{name}\": shape {:?} does not match its {} bytes of data",
                    view.shape(),
                    data.len()
                ),
            )
        };
        macro_rules! decode {
            ($t:ty, $w:expr, $f:expr) => {{
                if data.len() != numel * $w {
                    return Err(bad());
                }
                let v: Vec<$t> = data.chunks_exact($w).map($f).collect();
                RawTensor::from_cpu_vec(v, shape)
            }};
        }
        let raw = match view.dtype() {
            Dtype::F32 => decode!(f32, 4, |c| f32::from_le_bytes(c.try_into().expect("4"))),
            Dtype::F64 => decode!(f64, 8, |c| f64::from_le_bytes(c.try_into().expect("8"))),
            Dtype::I64 => decode!(i64, 8, |c| i64::from_le_bytes(c.try_into().expect("8"))),
            Dtype::F16 => decode!(half::f16, 2, |c| half::f16::from_le_bytes(
                c.try_into().expect("2")
            )),
            Dtype::BF16 => decode!(half::bf16, 2, |c| half::bf16::from_le_bytes(
                c.try_into().expect("2")
            )),
            Dtype::BOOL => decode!(bool, 1, |c| c[0] != 0),
            other => {
                return Err(checkpoint_error(
                    path,
                    format!("tensor \"{name}\" is {other:?}, which devtype does not read"),
                ))
            }
        };
        out.push((name, raw));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((out, metadata))
}

/// A tensor read from a file: its name, shape and values of `E`; an `i64` tensor (a count
/// buffer, `num_batches_tracked`) has its values in `counts` instead (and none in `values`).
pub(crate) struct Loaded<E> {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) values: Vec<E>,
    pub(crate) counts: Option<Vec<i64>>,
}

/// A JSON value of a safetensors header, as far as the checks below need it.
enum Json {
    Number(String),
    Text(String),
    List(Vec<Json>),
    Object(Vec<(String, Json)>),
    Other,
}

/// A small JSON reader for the safetensors header, so that a malformed tensor entry can be
/// named before the `safetensors` crate (whose errors name no tensor) looks at it. `None` for
/// anything that is not well-formed JSON; nesting deeper than 64 is refused, never recursed.
struct JsonReader<'a> {
    text: &'a [u8],
    at: usize,
}

impl JsonReader<'_> {
    fn parse(text: &[u8]) -> Option<Json> {
        let mut r = JsonReader { text, at: 0 };
        let v = r.value(0)?;
        r.space();
        (r.at == r.text.len()).then_some(v)
    }

    fn space(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.space();
        let hit = self.text.get(self.at) == Some(&b);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        if depth > 64 {
            return None;
        }
        self.space();
        match *self.text.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Object(fields));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    fields.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Json::Object(fields));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Json::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Json::List(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::Text),
            b'-' | b'0'..=b'9' => {
                let start = self.at;
                while self.text.get(self.at).is_some_and(|b| {
                    b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')
                }) {
                    self.at += 1;
                }
                let number = std::str::from_utf8(&self.text[start..self.at]).ok()?;
                Some(Json::Number(number.to_string()))
            }
            _ => {
                for word in ["true", "false", "null"] {
                    if self.text[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Some(Json::Other);
                    }
                }
                None
            }
        }
    }

    /// A string at the cursor; escapes other than `\"` and `\\` are kept as written (names
    /// are only shown in messages).
    fn string(&mut self) -> Option<String> {
        if self.text.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match *self.text.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return String::from_utf8(out).ok();
                }
                b'\\' => {
                    let next = *self.text.get(self.at + 1)?;
                    if !matches!(next, b'"' | b'\\') {
                        out.push(b'\\');
                    }
                    out.push(next);
                    self.at += 2;
                }
                b => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
    }
}

/// The bytes per element of a safetensors dtype name; `None` for the sub-byte types (`F4`,
/// `F6_*`), whose byte counts `safetensors` checks itself (devtype refuses them by dtype).
fn dtype_width(name: &str) -> Option<usize> {
    match name {
        "F64" | "I64" | "U64" | "C64" => Some(8),
        "F32" | "I32" | "U32" => Some(4),
        "F16" | "BF16" | "I16" | "U16" => Some(2),
        n if n.starts_with("F4") || n.starts_with("F6") => None,
        _ => Some(1),
    }
}

/// Checks every tensor entry of the header of `bytes` for what devtype needs before any
/// allocation: at most `MAX_DIMS` dimensions, a shape whose sizes (and byte count) fit in
/// memory arithmetic, and data offsets that span exactly the bytes the shape needs. Errors
/// name the file and the tensor. Headers that are not readable JSON are left to `safetensors`.
fn check_header(path: &Path, bytes: &[u8]) -> Result<()> {
    let Some(len) = bytes.get(..8) else {
        return Err(checkpoint_error(
            path,
            format!(
                "the file has {} bytes, too few for a safetensors header",
                bytes.len()
            ),
        ));
    };
    let len = u64::from_le_bytes(len.try_into().unwrap_or([0; 8]));
    let Some(header) = usize::try_from(len)
        .ok()
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
    else {
        return Err(checkpoint_error(
            path,
            format!(
                "the header claims {len} bytes, but the file has only {} after the length",
                bytes.len() - 8
            ),
        ));
    };
    let Some(Json::Object(entries)) = JsonReader::parse(header) else {
        return Ok(());
    };
    let max_dims = crate::core::layout::MAX_DIMS;
    for (name, entry) in &entries {
        let Json::Object(fields) = entry else {
            continue;
        };
        if name == "__metadata__" {
            continue;
        }
        let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let Some(Json::List(dims)) = field("shape") else {
            continue;
        };
        let bad = |message: String| checkpoint_error(path, format!("tensor \"{name}\": {message}"));
        let shape_text = || {
            let dims: Vec<&str> = dims
                .iter()
                .map(|d| match d {
                    Json::Number(n) => n.as_str(),
                    _ => "?",
                })
                .collect();
            format!("[{}]", dims.join(", "))
        };
        if dims.len() > max_dims {
            return Err(bad(format!(
                "shape {} has {} dimensions; devtype supports tensors of at most {max_dims}",
                shape_text(),
                dims.len()
            )));
        }
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            match d {
                Json::Number(n) => match n.parse::<usize>() {
                    Ok(v) => shape.push(v),
                    Err(_) => {
                        return Err(bad(format!(
                            "shape {} has a size that is not a count of elements ({n})",
                            shape_text()
                        )))
                    }
                },
                _ => {
                    return Err(bad(format!(
                        "shape {} is not a list of sizes",
                        shape_text()
                    )))
                }
            }
        }
        let dtype = match field("dtype") {
            Some(Json::Text(t)) => t.as_str(),
            _ => "",
        };
        let Some(width) = dtype_width(dtype) else {
            continue;
        };
        // Every partial product (the strides) and the byte count must fit; zeros count as one
        // so that an empty tensor with absurd sizes cannot overflow the strides either.
        let fits = shape
            .iter()
            .try_fold(width, |acc: usize, &d| acc.checked_mul(d.max(1)))
            .is_some_and(|b| b <= isize::MAX as usize);
        if !fits {
            return Err(bad(format!(
                "shape {shape:?} of {dtype} overflows: its size in bytes does not fit in memory"
            )));
        }
        let need = shape.iter().product::<usize>() * width;
        if let Some(Json::List(offsets)) = field("data_offsets") {
            let offsets: Vec<Option<usize>> = offsets
                .iter()
                .map(|o| match o {
                    Json::Number(n) => n.parse().ok(),
                    _ => None,
                })
                .collect();
            if let [Some(begin), Some(end)] = offsets[..] {
                if end < begin || end - begin != need {
                    return Err(bad(format!(
                        "shape {shape:?} of {dtype} needs {need} bytes, but its data_offsets [{begin}, {end}] hold {}",
                        end.saturating_sub(begin)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Reads every tensor of `path` as element type `E`: a floating-point tensor of another type
/// (`f16`, `bf16`, `f32`, `f64`) is converted, rounding once to nearest as the crate's casts
/// do (PyTorch's `load_state_dict` converts with `param.copy_(input_param)`); a tensor of a
/// non-float type is an error naming it.
///
/// A malformed file is an error naming the file (and the tensor, where one is at fault),
/// never a panic: see `check_header`.
pub(crate) fn read<E: Float>(path: &Path) -> Result<Vec<Loaded<E>>> {
    read_with_counts(path, false)
}

/// [`read`], where `counts` also reads `i64` tensors (into [`Loaded::counts`]): a module's
/// count buffers, which [`prepare_load`] checks by name.
fn read_with_counts<E: Float>(path: &Path, counts: bool) -> Result<Vec<Loaded<E>>> {
    let bytes = std::fs::read(path).map_err(|e| checkpoint_error(path, e))?;
    check_header(path, &bytes)?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| checkpoint_error(path, e))?;
    let mut out = Vec::new();
    for (name, view) in file.tensors() {
        let max_dims = crate::core::layout::MAX_DIMS;
        if view.shape().len() > max_dims {
            return Err(checkpoint_error(
                path,
                format!(
                    "tensor \"{name}\": shape {:?} has {} dimensions; devtype supports tensors of at most {max_dims}",
                    view.shape(),
                    view.shape().len()
                ),
            ));
        }
        if counts && view.dtype() == Dtype::I64 {
            check_byte_len(path, &name, &view, 8)?;
            let values = view
                .data()
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            out.push(Loaded {
                name,
                shape: view.shape().to_vec(),
                values: Vec::new(),
                counts: Some(values),
            });
            continue;
        }
        let Some(file_dtype) = [DType::F32, DType::F64, DType::F16, DType::BF16]
            .into_iter()
            .find(|&d| st_dtype(d) == view.dtype())
        else {
            return Err(checkpoint_error(
                path,
                format!(
                    "tensor {name} is {:?}, expected {:?}",
                    view.dtype(),
                    st_dtype(E::DTYPE)
                ),
            ));
        };
        let width = file_dtype.size_in_bytes();
        check_byte_len(path, &name, &view, width)?;
        let values = view
            .data()
            .chunks_exact(width)
            .map(|c| match file_dtype {
                DType::F32 => {
                    E::from_f64(f32::from_le_bytes(c.try_into().expect("4 bytes")) as f64)
                }
                // Exact: an f16 or bf16 value is an f64 value.
                DType::F16 => {
                    E::from_f64(half::f16::from_le_bytes(c.try_into().expect("2 bytes")).to_f64())
                }
                DType::BF16 => {
                    E::from_f64(half::bf16::from_le_bytes(c.try_into().expect("2 bytes")).to_f64())
                }
                _ => E::from_f64(f64::from_le_bytes(c.try_into().expect("8 bytes"))),
            })
            .collect();
        out.push(Loaded {
            name,
            shape: view.shape().to_vec(),
            values,
            counts: None,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Saves the parameters and buffers of `model` to a safetensors file (PyTorch:
/// `save_file(model.state_dict(), path)`): a tensor buffer (`running_mean`) in the model's
/// element type, a count (`num_batches_tracked`) as a 0-dim `i64`, as PyTorch stores them.
///
/// Each parameter is written once, under its first name: a weight tied to another layer's
/// (`set_weight(&other.weight())`) is stored under the first layer's name only, as
/// safetensors' `save_model` stores shared tensors, and [`load`] gives it to every layer that
/// shares it. Two different parameters under one name are an error naming it (nothing is
/// written).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Linear;
/// let path = std::env::temp_dir().join("devtype-doc-linear.safetensors");
/// let model = Linear::<Cpu>::new(3, 2, Cpu);
/// model.save(&path).unwrap();
/// let mut copy = Linear::<Cpu>::new(3, 2, Cpu);
/// copy.load(&path).unwrap();
/// assert_eq!(copy.weight().to_vec(), model.weight().to_vec());   // bit for bit
/// # std::fs::remove_file(&path).ok();
/// ```
pub fn save<D: Device, E: Float, M: Module<D, E>>(model: &M, path: impl AsRef<Path>) -> Result<()> {
    let params = model.named_parameters();
    let buffers = buffer_tensors(model)?;
    let tensors: Vec<(String, &RawTensor)> = params
        .iter()
        .map(|(n, p)| (n.clone(), &p.raw))
        .chain(buffers.iter().map(|(n, b)| (n.clone(), b)))
        .collect();
    write(path.as_ref(), &tensors)
}

/// The buffers of `model` as the tensors a file holds: a tensor buffer as it is, a count as a
/// 0-dim `i64` on the CPU.
pub(crate) fn buffer_tensors<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &M,
) -> Result<Vec<(String, RawTensor)>> {
    model
        .named_buffers()
        .into_iter()
        .map(|(name, b)| {
            let raw = match b {
                Buffer::Tensor(t) => t.raw,
                Buffer::Count(n) => {
                    RawTensor::from_cpu_vec(vec![n], crate::core::layout::Dims::shape(&[])?)
                }
            };
            Ok((name, raw))
        })
        .collect()
}

/// The device of `model`'s state: that of its first parameter, or of its first tensor buffer.
pub(crate) fn state_device<D: Device, E: Float, M: Module<D, E> + ?Sized>(model: &M) -> Option<D> {
    if let Some((_, p)) = model.named_parameters().first() {
        return Some(p.device());
    }
    let mut dev = None;
    model.visit_buffers("", &mut |_, b| {
        if let (None, Buffer::Tensor(t)) = (&dev, b) {
            dev = Some(t.device());
        }
    });
    dev
}

/// The values a file gives a model's parameters, tensor buffers and count buffers, on its
/// device and checked ([`prepare_load`]); [`commit_load`] gives them to the model.
pub(crate) struct Prepared<D: Device, E: Float> {
    params: std::collections::HashMap<String, Tensor<D, E>>,
    buffers: std::collections::HashMap<String, Tensor<D, E>>,
    counts: std::collections::HashMap<String, i64>,
}

/// Loads every parameter and buffer of `model` from a safetensors file onto the model's
/// device `D`.
///
/// Every tensor is checked before anything changes: a parameter missing from the file is
/// [`Error::MissingTensor`], one of another shape [`Error::TensorShapeMismatch`], both with
/// PyTorch's `load_state_dict` text naming it; a tensor the model does not have is an error
/// too (PyTorch's `strict=True`), and so are two different parameters under one name. A
/// tensor of another floating-point type (`f16`, `bf16`, `f64` into an `f32` model, or any
/// other pair) is converted, as PyTorch's `load_state_dict` converts. On any error the model
/// is left unchanged.
///
/// A tied weight is read from its first name (see [`save`]) and shared again by every layer
/// that holds it; a file that also stores it under another of its names is accepted (that
/// entry's shape is checked, its values are not used).
///
/// Buffers are checked the same way: a tensor buffer (`running_mean`) must be there with its
/// shape; a count (`num_batches_tracked`) must be a 0-dim tensor, an `i64` as PyTorch writes
/// it (or a float holding a whole number).
pub fn load<D: Device, E: Float, M: Module<D, E>>(
    model: &mut M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let loaded = read_with_counts::<E>(path, true)?;
    let values = prepare_load(model, path, loaded)?;
    commit_load(model, values);
    Ok(())
}

/// The values `loaded` gives the parameters and buffers of `model`, on its device, every name,
/// shape and dtype checked (see [`load`]); nothing changes yet.
pub(crate) fn prepare_load<D: Device, E: Float, M: Module<D, E>>(
    model: &M,
    path: &Path,
    loaded: Vec<Loaded<E>>,
) -> Result<Prepared<D, E>> {
    // Every name, and the first name of each parameter (its identity), in visit order.
    let mut all: Vec<(String, Vec<usize>, Option<usize>)> = Vec::new();
    model.visit_parameters("", &mut |name, p| {
        all.push((name.to_string(), p.shape().to_vec(), super::identity(p)))
    });
    let mut firsts = std::collections::HashSet::new();
    let mut params: Vec<(&str, &[usize])> = Vec::new();
    for (name, shape, id) in &all {
        if id.is_none_or(|id| firsts.insert(id)) {
            params.push((name, shape));
        }
    }
    // Every buffer: its name and, for a tensor, its shape (`None` for a count).
    let mut buffers: Vec<(String, Option<Vec<usize>>)> = Vec::new();
    model.visit_buffers("", &mut |name, b| {
        let shape = match b {
            Buffer::Tensor(t) => Some(t.shape().to_vec()),
            Buffer::Count(_) => None,
        };
        buffers.push((name.to_string(), shape));
    });
    if let Some(name) = repeated_name(
        params
            .iter()
            .map(|(n, _)| *n)
            .chain(buffers.iter().map(|(n, _)| n.as_str())),
    ) {
        return Err(repeated_name_error(path, name));
    }
    let find = |name: &str| loaded.iter().find(|t| t.name == name);
    let not_float = |name: &str| {
        checkpoint_error(
            path,
            format!(
                "tensor {name} is {:?}, expected {:?}",
                Dtype::I64,
                st_dtype(E::DTYPE)
            ),
        )
    };
    let mut counts = std::collections::HashMap::new();
    for (name, shape) in &buffers {
        let Some(found) = find(name) else {
            return Err(Error::MissingTensor { name: name.clone() });
        };
        let expected = shape.clone().unwrap_or_default();
        if found.shape != expected {
            return Err(Error::TensorShapeMismatch {
                name: name.clone(),
                expected,
                found: found.shape.clone(),
            });
        }
        match (shape, &found.counts) {
            (Some(_), Some(_)) => return Err(not_float(name)),
            (Some(_), None) => {}
            (None, Some(c)) => {
                counts.insert(name.clone(), c[0]);
            }
            (None, None) => {
                let v = found.values[0].to_f64();
                if v.fract() != 0.0 || !(i64::MIN as f64..=i64::MAX as f64).contains(&v) {
                    return Err(checkpoint_error(
                        path,
                        format!("tensor \"{name}\" is a count, but holds {v}"),
                    ));
                }
                counts.insert(name.clone(), v as i64);
            }
        }
    }
    for (name, shape, _) in &all {
        let primary = params.iter().any(|(n, _)| n == name);
        let found = match find(name) {
            Some(found) => found,
            None if primary => return Err(Error::MissingTensor { name: name.clone() }),
            None => continue,
        };
        if found.counts.is_some() {
            return Err(not_float(name));
        }
        if found.shape != *shape {
            return Err(Error::TensorShapeMismatch {
                name: name.clone(),
                expected: shape.clone(),
                found: found.shape.clone(),
            });
        }
    }
    if let Some(extra) = loaded.iter().find(|t| {
        !all.iter().any(|(n, _, _)| n == &t.name) && !buffers.iter().any(|(n, _)| n == &t.name)
    }) {
        return Err(checkpoint_error(
            path,
            format!("Unexpected key(s) in state_dict: \"{}\".", extra.name),
        ));
    }
    let mut prepared = Prepared {
        params: std::collections::HashMap::with_capacity(params.len()),
        buffers: std::collections::HashMap::new(),
        counts,
    };
    let Some(device) = state_device(model) else {
        return Ok(prepared);
    };
    let primaries: std::collections::HashSet<String> =
        params.iter().map(|(n, _)| n.to_string()).collect();
    let tensor_buffers: std::collections::HashSet<&str> = buffers
        .iter()
        .filter(|(_, s)| s.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    for t in loaded {
        if primaries.contains(&t.name) {
            let value = Tensor::<D, E>::try_from_vec(t.values, &t.shape, device)?;
            prepared.params.insert(t.name, value);
        } else if tensor_buffers.contains(t.name.as_str()) {
            let value = Tensor::<D, E>::try_from_vec(t.values, &t.shape, device)?;
            prepared.buffers.insert(t.name, value);
        }
    }
    Ok(prepared)
}

/// Gives the parameters and buffers of `model` the values [`prepare_load`] made: cannot fail.
pub(crate) fn commit_load<D: Device, E: Float, M: Module<D, E>>(
    model: &mut M,
    prepared: Prepared<D, E>,
) {
    let Prepared {
        params: mut values,
        mut buffers,
        counts,
    } = prepared;
    // Every value is on the device: nothing can fail from here on.
    let _ = super::for_each_unique_mut(model, |name, p| {
        if let Some(v) = values.remove(name) {
            p.set_value(v);
        }
        Ok(())
    });
    model.visit_buffers_mut("", &mut |name, b| match b {
        BufferMut::Tensor(t) => {
            if let Some(v) = buffers.remove(name) {
                *t = v;
            }
        }
        BufferMut::Count(c) => {
            if let Some(&v) = counts.get(name) {
                *c = v;
            }
        }
    });
}

/// Reads every tensor of a safetensors file onto `dev`, by name (sorted): a checkpoint
/// loaded onto a chosen device, typed on it.
pub fn load_tensors<D: Device, E: Float>(
    path: impl AsRef<Path>,
    dev: D,
) -> Result<Vec<(String, Tensor<D, E>)>> {
    read::<E>(path.as_ref())?
        .into_iter()
        .map(|t| Ok((t.name, Tensor::try_from_vec(t.values, &t.shape, dev)?)))
        .collect()
}
