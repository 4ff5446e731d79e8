//! Parameters saved and loaded as safetensors, under their `named_parameters()` names (the
//! names PyTorch's `state_dict` uses, so files load in either direction).

use super::Module;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::raw::RawTensor;
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
    }
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
    }
}

/// Writes named tensors to `path` in the safetensors format.
pub(crate) fn write(path: &Path, tensors: &[(String, &RawTensor)]) -> Result<()> {
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
    safetensors::serialize_to_file(views, None, path).map_err(|e| checkpoint_error(path, e))
}

/// A tensor read from a file: its name, shape and values of `E`.
pub(crate) struct Loaded<E> {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) values: Vec<E>,
}

/// Reads every tensor of `path`, which must all be of element type `E`.
pub(crate) fn read<E: Float>(path: &Path) -> Result<Vec<Loaded<E>>> {
    let bytes = std::fs::read(path).map_err(|e| checkpoint_error(path, e))?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| checkpoint_error(path, e))?;
    let mut out = Vec::new();
    for (name, view) in file.tensors() {
        if view.dtype() != st_dtype(E::DTYPE) {
            return Err(checkpoint_error(
                path,
                format!(
                    "tensor {name} is {:?}, expected {:?}",
                    view.dtype(),
                    st_dtype(E::DTYPE)
                ),
            ));
        }
        let width = E::DTYPE.size_in_bytes();
        let values = view
            .data()
            .chunks_exact(width)
            .map(|c| match E::DTYPE {
                DType::F32 => {
                    E::from_f64(f32::from_le_bytes(c.try_into().expect("4 bytes")) as f64)
                }
                _ => E::from_f64(f64::from_le_bytes(c.try_into().expect("8 bytes"))),
            })
            .collect();
        out.push(Loaded {
            name,
            shape: view.shape().to_vec(),
            values,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Saves the parameters of `model` to a safetensors file (PyTorch: `save_file(model.state_dict(), path)`).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Linear;
/// let path = std::env::temp_dir().join("devtype-doc-linear.safetensors");
/// let model = Linear::<Cpu>::new(3, 2, Cpu);
/// model.save(&path).unwrap();
/// let mut copy = Linear::<Cpu>::new(3, 2, Cpu);
/// copy.load(&path).unwrap();
/// assert_eq!(copy.weight.to_vec(), model.weight.to_vec());   // bit for bit
/// # std::fs::remove_file(&path).ok();
/// ```
pub fn save<D: Device, E: Float, M: Module<D, E>>(model: &M, path: impl AsRef<Path>) -> Result<()> {
    let params = model.named_parameters();
    let tensors: Vec<(String, &RawTensor)> =
        params.iter().map(|(n, p)| (n.clone(), &p.raw)).collect();
    write(path.as_ref(), &tensors)
}

/// Loads every parameter of `model` from a safetensors file onto the model's device `D`.
///
/// Every tensor is checked before anything changes: a parameter missing from the file is
/// [`Error::MissingTensor`], one of another shape [`Error::TensorShapeMismatch`], both with
/// PyTorch's `load_state_dict` text naming it; a tensor the model does not have is an error
/// too (PyTorch's `strict=True`).
pub fn load<D: Device, E: Float, M: Module<D, E>>(
    model: &mut M,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let mut loaded = read::<E>(path)?;
    let params = model.named_parameters();
    for (name, p) in &params {
        let found = loaded
            .iter()
            .find(|t| &t.name == name)
            .ok_or_else(|| Error::MissingTensor { name: name.clone() })?;
        if found.shape != p.shape() {
            return Err(Error::TensorShapeMismatch {
                name: name.clone(),
                expected: p.shape().to_vec(),
                found: found.shape.clone(),
            });
        }
    }
    if let Some(extra) = loaded
        .iter()
        .find(|t| !params.iter().any(|(n, _)| n == &t.name))
    {
        return Err(checkpoint_error(
            path,
            format!("Unexpected key(s) in state_dict: \"{}\".", extra.name),
        ));
    }
    let device = match params.first() {
        Some((_, p)) => p.device(),
        None => return Ok(()),
    };
    let mut values = Vec::with_capacity(params.len());
    for (name, _) in &params {
        let at = loaded
            .iter()
            .position(|t| &t.name == name)
            .expect("checked above");
        let t = loaded.swap_remove(at);
        values.push(Tensor::<D, E>::try_from_vec(t.values, &t.shape, device)?);
    }
    let mut values = values.into_iter();
    model.visit_parameters_mut("", &mut |_, p| {
        if let Some(v) = values.next() {
            p.set_value(v);
        }
    });
    Ok(())
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
