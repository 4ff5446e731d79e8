//! Checking backward rules against central finite differences, like
//! `torch.autograd.gradcheck`: in `f64`, the analytical Jacobian (one backward per output
//! element) must match the numerical one (two evaluations per input element).

use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::graph::no_grad;
use crate::tensor::Tensor;
use crate::DynTensor;

/// Tolerances of [`gradcheck_with`]: PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// The finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (of the numerical value).
    pub rtol: f64,
    /// Accept an input whose gradient is zero everywhere. Off by default, so that a check
    /// cannot pass by comparing zeros with zeros.
    pub allow_zero_gradient: bool,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            allow_zero_gradient: false,
        }
    }
}

/// Evaluates the function at given input values, without recording.
type ValueFn<'a> = &'a dyn Fn(&[Vec<f64>]) -> Result<Vec<f64>>;
/// `v^T J` for each input, at given input values.
type VjpFn<'a> = &'a dyn Fn(&[Vec<f64>], &[f64]) -> Result<Vec<Vec<f64>>>;

/// The comparison shared by both fronts. `value(xs)` evaluates the function without recording;
/// `vjp(xs, v)` returns `v^T J` for each input.
fn check(
    shapes: &[Vec<usize>],
    inputs: Vec<Vec<f64>>,
    options: GradcheckOptions,
    value: ValueFn<'_>,
    vjp: VjpFn<'_>,
) -> Result<()> {
    let out = value(&inputs)?;
    let m = out.len();
    // analytical[i][j][k] = d out[j] / d input_i[k]
    let mut analytical: Vec<Vec<Vec<f64>>> =
        inputs.iter().map(|x| vec![vec![0.0; x.len()]; m]).collect();
    for j in 0..m {
        let mut v = vec![0.0; m];
        v[j] = 1.0;
        for (i, row) in vjp(&inputs, &v)?.into_iter().enumerate() {
            analytical[i][j] = row;
        }
    }
    for (i, x) in inputs.iter().enumerate() {
        let mut numerical = vec![vec![0.0; x.len()]; m];
        for k in 0..x.len() {
            let mut xs = inputs.clone();
            xs[i][k] = x[k] + options.eps;
            let plus = value(&xs)?;
            xs[i][k] = x[k] - options.eps;
            let minus = value(&xs)?;
            for j in 0..m {
                numerical[j][k] = (plus[j] - minus[j]) / (2.0 * options.eps);
            }
        }
        let mut worst = None;
        for j in 0..m {
            for k in 0..x.len() {
                let (a, n) = (analytical[i][j][k], numerical[j][k]);
                let within = (a - n).abs() <= options.atol + options.rtol * n.abs();
                if !within {
                    worst = Some((j, k, a, n));
                }
            }
        }
        if let Some((j, k, a, n)) = worst {
            return Err(Error::Autograd(format!(
                "Jacobian mismatch for output 0 with respect to input {i} (shape {:?}),\nat d out[{j}] / d in[{k}]: numerical {n:.8}, analytical {a:.8}\nnumerical:{numerical:?}\nanalytical:{:?}",
                shapes[i], analytical[i]
            )));
        }
        let all_zero = analytical[i].iter().flatten().all(|&a| a == 0.0);
        if all_zero && !options.allow_zero_gradient && !x.is_empty() && m > 0 {
            return Err(Error::Autograd(format!(
                "gradcheck: the gradient with respect to input {i} is zero everywhere, so the check proves nothing (pick other inputs, or set allow_zero_gradient)"
            )));
        }
    }
    Ok(())
}

/// Checks the backward rules of `f` at `inputs` against central finite differences, with
/// PyTorch's default tolerances (`torch.autograd.gradcheck`). Every input is made a parameter.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::autograd::gradcheck;
/// let x = Tensor::<Cpu, f64>::from_vec(vec![0.3, -1.2, 2.0], [3], Cpu);
/// gradcheck(|v| Ok(v[0].tanh().mul_scalar(3.0).sum_all()), &[x]).unwrap();
/// ```
pub fn gradcheck<D: Device + crate::device::HostSync, F>(
    f: F,
    inputs: &[Tensor<D, f64>],
) -> Result<()>
where
    F: Fn(&[Tensor<D, f64>]) -> Result<Tensor<D, f64>>,
{
    gradcheck_with(f, inputs, GradcheckOptions::default())
}

/// [`gradcheck`] with other tolerances.
pub fn gradcheck_with<D: Device + crate::device::HostSync, F>(
    f: F,
    inputs: &[Tensor<D, f64>],
    options: GradcheckOptions,
) -> Result<()>
where
    F: Fn(&[Tensor<D, f64>]) -> Result<Tensor<D, f64>>,
{
    let device = inputs
        .first()
        .map(|t| t.device())
        .ok_or_else(|| Error::Autograd("gradcheck: no inputs".into()))?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
    let build = |xs: &[Vec<f64>]| -> Result<Vec<Tensor<D, f64>>> {
        xs.iter()
            .zip(&shapes)
            .map(|(x, s)| {
                Ok(Tensor::parameter(Tensor::try_from_vec(
                    x.clone(),
                    s,
                    device,
                )?))
            })
            .collect()
    };
    let value = |xs: &[Vec<f64>]| -> Result<Vec<f64>> { no_grad(|| f(&build(xs)?)?.try_to_vec()) };
    let vjp = |xs: &[Vec<f64>], v: &[f64]| -> Result<Vec<Vec<f64>>> {
        let params = build(xs)?;
        let out = f(&params)?;
        if out.requires_grad() {
            out.try_backward_with(&Tensor::try_from_vec(v.to_vec(), out.shape(), device)?)?;
        }
        params
            .iter()
            .zip(xs)
            .map(|(p, x)| {
                Ok(p.grad()
                    .map(|g| g.try_to_vec())
                    .transpose()?
                    .unwrap_or_else(|| vec![0.0; x.len()]))
            })
            .collect()
    };
    let start = inputs
        .iter()
        .map(|t| t.try_to_vec())
        .collect::<Result<Vec<_>>>()?;
    check(&shapes, start, options, &value, &vjp)
}

/// [`gradcheck`] for the dynamic front: `inputs` are `f64` tensors on one device.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::autograd::gradcheck_dyn;
/// let x = DynTensor::from_vec(vec![0.3f64, -1.2, 2.0], [3], DynDevice::cpu()).unwrap();
/// gradcheck_dyn(|v| v[0].exp()?.sum_all(), &[x]).unwrap();
/// ```
pub fn gradcheck_dyn<F>(f: F, inputs: &[DynTensor]) -> Result<()>
where
    F: Fn(&[DynTensor]) -> Result<DynTensor>,
{
    let device = inputs
        .first()
        .map(|t| t.device())
        .ok_or_else(|| Error::Autograd("gradcheck: no inputs".into()))?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
    let build = |xs: &[Vec<f64>]| -> Result<Vec<DynTensor>> {
        xs.iter()
            .zip(&shapes)
            .map(|(x, s)| DynTensor::parameter(DynTensor::from_vec(x.clone(), s, device)?))
            .collect()
    };
    let value =
        |xs: &[Vec<f64>]| -> Result<Vec<f64>> { no_grad(|| f(&build(xs)?)?.to_vec::<f64>()) };
    let vjp = |xs: &[Vec<f64>], v: &[f64]| -> Result<Vec<Vec<f64>>> {
        let params = build(xs)?;
        let out = f(&params)?;
        if out.requires_grad() {
            out.backward_with(&DynTensor::from_vec(v.to_vec(), out.shape(), device)?)?;
        }
        params
            .iter()
            .zip(xs)
            .map(|(p, x)| {
                Ok(p.grad()
                    .map(|g| g.to_vec::<f64>())
                    .transpose()?
                    .unwrap_or_else(|| vec![0.0; x.len()]))
            })
            .collect()
    };
    let start = inputs
        .iter()
        .map(|t| t.to_vec::<f64>())
        .collect::<Result<Vec<_>>>()?;
    check(&shapes, start, GradcheckOptions::default(), &value, &vjp)
}
