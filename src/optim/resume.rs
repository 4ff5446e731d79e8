//! One checkpoint for a whole training run: model, optimizer, `GradScaler`, schedule and the
//! random generator, so that a run resumes exactly where it stopped.

use super::{GradScaler, LrScheduler, Optimizer};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::device::Device;
use crate::nn::Module;
use crate::tensor::Float;
use std::collections::HashMap;
use std::path::Path;

/// The header's metadata of a checkpoint.
pub(crate) type Meta = HashMap<String, String>;

pub(crate) mod sealed {
    use super::Meta;
    use crate::core::error::Result;
    use crate::core::raw::RawTensor;
    use std::collections::HashMap;

    /// What an optimizer writes into and reads from a checkpoint.
    pub trait Sealed<D>: Sized {
        /// The state tensors (by their checkpoint names) and the hyper-parameters.
        #[allow(private_interfaces)]
        fn export_state(&self) -> Result<(Vec<(String, RawTensor)>, Meta)>;
        /// A new optimizer from a checkpoint's tensors (on the CPU) and metadata, its state
        /// on `dev`; `names` are the model's parameters.
        #[allow(private_interfaces)]
        fn import_state(
            tensors: &HashMap<String, RawTensor>,
            meta: &Meta,
            dev: D,
            names: &std::collections::HashSet<String>,
        ) -> Result<Self>;
    }
}

/// An optimizer whose every hyper-parameter and state tensor a checkpoint holds ([`Sgd`]
/// and [`Adam`](super::Adam)): see [`save_checkpoint`].
///
/// [`Sgd`]: super::Sgd
pub trait OptimizerState<D: Device, E: Float>: Optimizer<D, E> + sealed::Sealed<D> {}

fn bad(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Checkpoint {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// A number written so that it reads back to the same bits.
pub(crate) fn exact(x: f64) -> String {
    format!("{x:?}")
}

pub(crate) fn meta_f64(meta: &Meta, key: &str) -> Result<f64> {
    meta.get(key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::MissingTensor {
            name: key.to_string(),
        })
}

pub(crate) fn meta_bool(meta: &Meta, key: &str) -> Result<bool> {
    meta.get(key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::MissingTensor {
            name: key.to_string(),
        })
}

/// A checkpoint's state tensor as the state of a parameter of `E` on `dev`.
pub(crate) fn state_tensor(
    raw: &RawTensor,
    dtype: DType,
    dev: crate::DynDevice,
) -> Result<RawTensor> {
    let raw = if raw.dtype == dtype {
        raw.clone()
    } else if raw.dtype.is_float() && dtype.is_float() {
        crate::ops::copy::cast(raw, dtype)?
    } else {
        return Err(Error::DTypeMismatch {
            expected: dtype,
            found: raw.dtype,
        });
    };
    raw.to_device(dev)
}

/// The parameters' names of `model`, each parameter once.
fn param_names<D: Device, E: Float, M: Module<D, E>>(
    model: &M,
) -> std::collections::HashSet<String> {
    model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Saves everything a training run needs to resume exactly, in one safetensors file: the
/// model's parameters and buffers (`model.{name}`: `model.bn.running_mean`, a count as a
/// 0-dim `i64`), the optimizer's hyper-parameters (metadata
/// `optimizer.param_groups.0.lr`, ...) and state tensors (`optimizer.state.{name}.momentum_buffer`,
/// `.exp_avg`, `.exp_avg_sq`, `.step`: PyTorch's `state_dict` names, keyed by parameter name
/// rather than index), the `GradScaler`'s scale and growth tracker (`scaler.scale`,
/// `scaler._growth_tracker`), the schedule's position (`scheduler.state`) and the random
/// generator's state (`rng_state.seed`, `rng_state.offset`).
///
/// Reading the state to the host is a sync on a GPU (as `torch.save`).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{Linear, MSELoss};
/// use devtype::optim::{load_checkpoint, save_checkpoint, LrScheduler, Optimizer, Sgd};
///
/// let path = std::env::temp_dir().join("devtype-doc-resume.safetensors");
/// let dev = Cpu;                                             // or Cuda::<0>::open()?
/// let mut model = Linear::new(3, 1, Cpu).to(dev);
/// let mut opt = Sgd::new(0.1).momentum(0.9).nesterov(true);
/// let mut sched = LrScheduler::step_lr(&mut opt, 2, 0.5)?;
/// let step = |model: &mut Linear<Cpu>, opt: &mut Sgd<Cpu>, sched: &mut LrScheduler, x: &Tensor<Cpu>| {
///     model.zero_grad();
///     MSELoss::new().forward(model.forward(x), Tensor::<Cpu>::zeros([4, 1], dev)).backward();
///     opt.step(model);
///     sched.step(opt).unwrap();
/// };
/// step(&mut model, &mut opt, &mut sched, &Tensor::randn([4, 3], dev));
/// save_checkpoint(&path, &model, &opt, None, Some(&sched))?;
///
/// // Later, in a fresh process: build the same objects, then load into them.
/// let mut model2 = Linear::new(3, 1, Cpu).to(dev);
/// let mut opt2 = Sgd::new(0.1);
/// let mut sched2 = LrScheduler::step_lr(&mut opt2, 2, 0.5)?;
/// load_checkpoint(&path, &mut model2, &mut opt2, None, Some(&mut sched2))?;
/// let x = Tensor::randn([4, 3], dev);
/// step(&mut model, &mut opt, &mut sched, &x);
/// step(&mut model2, &mut opt2, &mut sched2, &x);
/// assert_eq!(model.weight().to_vec(), model2.weight().to_vec()); // bit for bit
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), devtype::Error>(())
/// ```
pub fn save_checkpoint<D: Device, E: Float, M: Module<D, E>, O: OptimizerState<D, E>>(
    path: impl AsRef<Path>,
    model: &M,
    opt: &O,
    scaler: Option<&GradScaler<D>>,
    schedule: Option<&LrScheduler>,
) -> Result<()> {
    let params = model.named_parameters();
    let mut tensors: Vec<(String, RawTensor)> = params
        .iter()
        .map(|(n, p)| (format!("model.{n}"), p.raw.clone()))
        .collect();
    tensors.extend(
        crate::nn::checkpoint_buffer_tensors(model)?
            .into_iter()
            .map(|(n, b)| (format!("model.{n}"), b)),
    );
    let (state, mut meta) = opt.export_state()?;
    tensors.extend(state);
    if let Some(s) = scaler {
        let (t, m) = s.export_state();
        tensors.extend(t);
        meta.extend(m);
    }
    if let Some(s) = schedule {
        let values: Vec<String> = s.state().into_iter().map(exact).collect();
        meta.insert("scheduler.state".into(), values.join(","));
    }
    let rng = crate::random::get_rng_state();
    meta.insert("rng_state.seed".into(), rng.seed.to_string());
    meta.insert("rng_state.offset".into(), rng.offset.to_string());
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let refs: Vec<(String, &RawTensor)> = tensors.iter().map(|(n, t)| (n.clone(), t)).collect();
    crate::nn::checkpoint_write_with_metadata(path.as_ref(), &refs, Some(meta))
}

/// Loads a checkpoint of [`save_checkpoint`] into objects built as the saved run built them
/// (the same model, the same kind of optimizer and schedule; their settings come from the
/// file): the model's parameters and buffers, the optimizer's hyper-parameters and state, the scaler's
/// scale and growth tracker, the schedule's position, and the random generator's state.
///
/// The state goes to the model's device `D`, whatever device it was saved from. Everything
/// is read and checked first (names, shapes, dtypes, every value, a scaler or schedule asked
/// for but not in the file): on any error nothing has changed.
pub fn load_checkpoint<D: Device, E: Float, M: Module<D, E>, O: OptimizerState<D, E>>(
    path: impl AsRef<Path>,
    model: &mut M,
    opt: &mut O,
    scaler: Option<&mut GradScaler<D>>,
    schedule: Option<&mut LrScheduler>,
) -> Result<()> {
    let path = path.as_ref();
    let (tensors, meta) = crate::nn::checkpoint_read_raw(path)?;
    let Some(dev) = model.named_parameters().first().map(|(_, p)| p.device()) else {
        return Err(bad(path, "the model has no parameters to load"));
    };
    let mut model_part = Vec::new();
    let mut rest = HashMap::new();
    for (name, raw) in tensors {
        match name.strip_prefix("model.") {
            Some(n) if raw.dtype == crate::DType::I64 => {
                // A count buffer (`num_batches_tracked`): `prepare_load` checks the name.
                model_part.push(crate::nn::Loaded {
                    name: n.to_string(),
                    shape: raw.shape().to_vec(),
                    values: Vec::new(),
                    counts: Some(raw.to_vec::<i64>()?),
                });
            }
            Some(n) => {
                if !raw.dtype.is_float() {
                    return Err(bad(
                        path,
                        format!("tensor \"{name}\" is {}, not a float", raw.dtype),
                    ));
                }
                let values = crate::ops::copy::cast(&raw, E::DTYPE)?.to_vec::<E>()?;
                model_part.push(crate::nn::Loaded {
                    name: n.to_string(),
                    shape: raw.shape().to_vec(),
                    values,
                    counts: None,
                });
            }
            None => {
                rest.insert(name, raw);
            }
        }
    }
    let values = crate::nn::prepare_load(&*model, path, model_part)?;
    let names = param_names(&*model);
    let new_opt = O::import_state(&rest, &meta, dev, &names)?;
    let new_scaler = match &scaler {
        Some(s) => Some(s.import_state(&rest, &meta)?),
        None => None,
    };
    let new_schedule = match &schedule {
        Some(s) => {
            let text = meta
                .get("scheduler.state")
                .ok_or_else(|| Error::MissingTensor {
                    name: "scheduler.state".into(),
                })?;
            let values = text
                .split(',')
                .map(|v| v.parse::<f64>())
                .collect::<std::result::Result<Vec<f64>, _>>()
                .map_err(|e| bad(path, format!("scheduler.state: {e}")))?;
            let mut s = (*s).clone();
            s.load_state(&values)?;
            Some(s)
        }
        None => None,
    };
    let seed = meta.get("rng_state.seed").and_then(|v| v.parse().ok());
    let offset = meta.get("rng_state.offset").and_then(|v| v.parse().ok());
    let (Some(seed), Some(offset)) = (seed, offset) else {
        return Err(Error::MissingTensor {
            name: "rng_state".into(),
        });
    };
    // Everything is read and on the device: nothing can fail from here on.
    crate::nn::commit_load(model, values);
    *opt = new_opt;
    if let (Some(s), Some(new)) = (scaler, new_scaler) {
        *s = new;
    }
    if let (Some(s), Some(new)) = (schedule, new_schedule) {
        *s = new;
    }
    crate::random::set_rng_state(crate::random::RngState { seed, offset });
    Ok(())
}
