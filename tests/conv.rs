//! Convolutions and pooling (issue 30): `conv2d`, `conv1d`, `max_pool2d`, `avg_pool2d`,
//! `adaptive_avg_pool2d` on both fronts against PyTorch's values and gradients (float64,
//! recorded by `scripts/torch_conv.py`) for several option sets; an independent naive f64
//! direct convolution on fresh random inputs; gradcheck; PyTorch's error texts; the modules;
//! and on a GPU (the simulator in CI) the same results.

mod common;

use common::close;

#[path = "reference/conv_torch.rs"]
#[allow(dead_code, clippy::excessive_precision, clippy::approx_constant)]
mod torch;

use common::Rng;
use devtype::autograd::gradcheck;
use devtype::nn::{AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d};
use devtype::prelude::*;
use devtype::{DType, DynTensor, Size2};

/// One recorded convolution.
pub struct ConvCase {
    pub name: &'static str,
    pub one_d: bool,
    pub x_shape: &'static [usize],
    pub x: &'static [f64],
    pub w_shape: &'static [usize],
    pub w: &'static [f64],
    pub b: Option<&'static [f64]>,
    pub stride: Size2,
    pub padding: Size2,
    pub dilation: Size2,
    pub groups: usize,
    pub y_shape: &'static [usize],
    pub y: &'static [f64],
    pub v: &'static [f64],
    pub gx: &'static [f64],
    pub gw: &'static [f64],
    pub gb: Option<&'static [f64]>,
}

/// One recorded pooling (`kind`: `max`, `avg` or `adaptive`, whose `kernel` is the output
/// size).
pub struct PoolCase {
    pub name: &'static str,
    pub kind: &'static str,
    pub x_shape: &'static [usize],
    pub x: &'static [f64],
    pub kernel: Size2,
    pub stride: Size2,
    pub padding: Size2,
    pub dilation: Size2,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
    pub y_shape: &'static [usize],
    pub y: &'static [f64],
    pub v: &'static [f64],
    pub gx: &'static [f64],
}

fn conv_typed<D: Device>(
    c: &ConvCase,
    x: &Tensor<D, f64>,
    w: &Tensor<D, f64>,
    b: Option<&Tensor<D, f64>>,
) -> Tensor<D, f64> {
    if c.one_d {
        x.conv1d(w, b, c.stride.1, c.padding.1, c.dilation.1, c.groups)
    } else {
        x.conv2d(w, b, c.stride, c.padding, c.dilation, c.groups)
    }
}

fn pool_typed<D: Device>(p: &PoolCase, x: &Tensor<D, f64>) -> Tensor<D, f64> {
    match p.kind {
        "max" => x.max_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode),
        "avg" => x.avg_pool2d(
            p.kernel,
            p.stride,
            p.padding,
            p.ceil_mode,
            p.count_include_pad,
        ),
        _ => x.adaptive_avg_pool2d(p.kernel),
    }
}

/// The typed front on `dev` reproduces PyTorch's values and gradients.
fn check_typed_against_torch<D: Device + HostSync>(dev: D, tol: f64) {
    for c in torch::CONV {
        let x = Tensor::parameter(Tensor::from_vec(c.x.to_vec(), c.x_shape, dev));
        let w = Tensor::parameter(Tensor::from_vec(c.w.to_vec(), c.w_shape, dev));
        let b =
            c.b.map(|b| Tensor::parameter(Tensor::from_vec(b.to_vec(), [b.len()], dev)));
        let y = conv_typed(c, &x, &w, b.as_ref());
        assert_eq!(y.shape(), c.y_shape, "{}", c.name);
        close(c.name, &y.to_vec(), c.y, tol);
        y.backward_with(&Tensor::from_vec(c.v.to_vec(), c.y_shape, dev));
        close(
            &format!("{} grad x", c.name),
            &x.grad().unwrap().to_vec(),
            c.gx,
            tol,
        );
        close(
            &format!("{} grad w", c.name),
            &w.grad().unwrap().to_vec(),
            c.gw,
            tol,
        );
        if let (Some(b), Some(gb)) = (&b, c.gb) {
            close(
                &format!("{} grad b", c.name),
                &b.grad().unwrap().to_vec(),
                gb,
                tol,
            );
        }
    }
    for p in torch::POOL {
        let x = Tensor::parameter(Tensor::from_vec(p.x.to_vec(), p.x_shape, dev));
        let y = pool_typed(p, &x);
        assert_eq!(y.shape(), p.y_shape, "{}", p.name);
        close(p.name, &y.to_vec(), p.y, tol);
        y.backward_with(&Tensor::from_vec(p.v.to_vec(), p.y_shape, dev));
        close(
            &format!("{} grad x", p.name),
            &x.grad().unwrap().to_vec(),
            p.gx,
            tol,
        );
    }
}

#[test]
fn typed_front_matches_pytorch() {
    check_typed_against_torch(Cpu, 1e-12);
}

#[test]
fn dynamic_front_matches_pytorch() {
    let cpu = DynDevice::cpu();
    let d = |v: &[f64], shape: &[usize]| {
        DynTensor::parameter(DynTensor::from_vec(v.to_vec(), shape, cpu).unwrap()).unwrap()
    };
    for c in torch::CONV {
        let (x, w) = (d(c.x, c.x_shape), d(c.w, c.w_shape));
        let b = c.b.map(|b| d(b, &[b.len()]));
        let y = if c.one_d {
            x.conv1d(
                &w,
                b.as_ref(),
                c.stride.1,
                c.padding.1,
                c.dilation.1,
                c.groups,
            )
        } else {
            x.conv2d(&w, b.as_ref(), c.stride, c.padding, c.dilation, c.groups)
        }
        .unwrap();
        close(c.name, &y.to_vec::<f64>().unwrap(), c.y, 1e-12);
        y.backward_with(&d(c.v, c.y_shape)).unwrap();
        close(
            c.name,
            &x.grad().unwrap().to_vec::<f64>().unwrap(),
            c.gx,
            1e-12,
        );
        close(
            c.name,
            &w.grad().unwrap().to_vec::<f64>().unwrap(),
            c.gw,
            1e-12,
        );
        if let (Some(b), Some(gb)) = (&b, c.gb) {
            close(
                c.name,
                &b.grad().unwrap().to_vec::<f64>().unwrap(),
                gb,
                1e-12,
            );
        }
    }
    for p in torch::POOL {
        let x = d(p.x, p.x_shape);
        let y = match p.kind {
            "max" => x.max_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode),
            "avg" => x.avg_pool2d(
                p.kernel,
                p.stride,
                p.padding,
                p.ceil_mode,
                p.count_include_pad,
            ),
            _ => x.adaptive_avg_pool2d(p.kernel),
        }
        .unwrap();
        close(p.name, &y.to_vec::<f64>().unwrap(), p.y, 1e-12);
        y.backward_with(&d(p.v, p.y_shape)).unwrap();
        close(
            p.name,
            &x.grad().unwrap().to_vec::<f64>().unwrap(),
            p.gx,
            1e-12,
        );
    }
}

/// A direct convolution in f64 with its gradients for the upstream `v`, written from the
/// definition: `y[n, o, i, j] = b[o] + sum w[o, c', ki, kj] x[n, g c_g + c', i s - p + ki d, ..]`.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn naive_conv(
    x: &[f64],
    [n, c, h, w]: [usize; 4],
    wt: &[f64],
    [o, cg, kh, kw]: [usize; 4],
    b: &[f64],
    (sh, sw): Size2,
    (ph, pw): Size2,
    (dh, dw): Size2,
    groups: usize,
    v_seed: &mut Rng,
) -> (Vec<usize>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    let ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    let og = o / groups;
    let mut y = vec![0.0; n * o * oh * ow];
    let v = v_seed.values(y.len(), -1.0, 1.0);
    let (mut gx, mut gw, mut gb) = (vec![0.0; x.len()], vec![0.0; wt.len()], vec![0.0; o]);
    for ni in 0..n {
        for oc in 0..o {
            let g = oc / og;
            for i in 0..oh {
                for j in 0..ow {
                    let yi = ((ni * o + oc) * oh + i) * ow + j;
                    let mut acc = b[oc];
                    for cc in 0..cg {
                        let ci = g * cg + cc;
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let yy = (i * sh + ki * dh) as i64 - ph as i64;
                                let xx = (j * sw + kj * dw) as i64 - pw as i64;
                                if yy < 0 || yy >= h as i64 || xx < 0 || xx >= w as i64 {
                                    continue;
                                }
                                let xi = ((ni * c + ci) * h + yy as usize) * w + xx as usize;
                                let wi = ((oc * cg + cc) * kh + ki) * kw + kj;
                                acc += wt[wi] * x[xi];
                                gx[xi] += wt[wi] * v[yi];
                                gw[wi] += x[xi] * v[yi];
                            }
                        }
                    }
                    y[yi] = acc;
                    gb[oc] += v[yi];
                }
            }
        }
    }
    (vec![n, o, oh, ow], y, v, gx, gw, gb)
}

/// Fresh random shapes and options: both fronts' values and all three gradients match the
/// naive f64 convolution (in f64 to 1e-10, in f32 to a few ulps of the sums).
#[test]
fn naive_reference_on_fresh_inputs() {
    let mut rng = Rng::new("conv_naive_reference_on_fresh_inputs");
    for round in 0..12 {
        let groups = rng.pick(&[1usize, 1, 2, 3]);
        let (n, cg, og) = (1 + rng.below(2), 1 + rng.below(3), 1 + rng.below(3));
        let (c, o) = (cg * groups, og * groups);
        let (kh, kw) = (1 + rng.below(3), 1 + rng.below(3));
        let (sh, sw) = (1 + rng.below(2), 1 + rng.below(3));
        let (dh, dw) = (1 + rng.below(2), 1 + rng.below(2));
        let (ph, pw) = (rng.below(3), rng.below(2));
        let h = (kh - 1) * dh + 1 + rng.below(5);
        let w = (kw - 1) * dw + 1 + rng.below(5);
        let x = rng.values(n * c * h * w, -2.0, 2.0);
        let wt = rng.values(o * cg * kh * kw, -1.0, 1.0);
        let b = rng.values(o, -1.0, 1.0);
        let (ys, y, v, gx, gw, gb) = naive_conv(
            &x,
            [n, c, h, w],
            &wt,
            [o, cg, kh, kw],
            &b,
            (sh, sw),
            (ph, pw),
            (dh, dw),
            groups,
            &mut rng,
        );
        let what = format!("round {round}: groups {groups}, x [{n}, {c}, {h}, {w}], w [{o}, {cg}, {kh}, {kw}], stride ({sh}, {sw}), padding ({ph}, {pw}), dilation ({dh}, {dw})");
        let xt = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(x.clone(), [n, c, h, w], Cpu));
        let wt_t = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(
            wt.clone(),
            [o, cg, kh, kw],
            Cpu,
        ));
        let bt = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(b.clone(), [o], Cpu));
        let out = xt.conv2d(&wt_t, Some(&bt), (sh, sw), (ph, pw), (dh, dw), groups);
        assert_eq!(out.shape(), ys.as_slice(), "{what}");
        close(&what, &out.to_vec(), &y, 1e-10);
        out.backward_with(Tensor::from_vec(v.clone(), ys.clone(), Cpu));
        close(
            &format!("{what}: grad x"),
            &xt.grad().unwrap().to_vec(),
            &gx,
            1e-10,
        );
        close(
            &format!("{what}: grad w"),
            &wt_t.grad().unwrap().to_vec(),
            &gw,
            1e-10,
        );
        close(
            &format!("{what}: grad b"),
            &bt.grad().unwrap().to_vec(),
            &gb,
            1e-10,
        );
        // f32, on a transposed (non-contiguous) input view.
        let f = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let x32 = Tensor::<Cpu>::from_vec(f(&x), [n, c, h, w], Cpu)
            .transpose(2, 3)
            .contiguous()
            .transpose(2, 3);
        let w32 = Tensor::<Cpu>::from_vec(f(&wt), [o, cg, kh, kw], Cpu);
        let b32 = Tensor::<Cpu>::from_vec(f(&b), [o], Cpu);
        let out32 = x32.conv2d(&w32, Some(&b32), (sh, sw), (ph, pw), (dh, dw), groups);
        let got: Vec<f64> = out32.to_vec().iter().map(|&a| a as f64).collect();
        close(
            &format!("{what}: f32"),
            &got,
            &y,
            1e-5 * (cg * kh * kw) as f64,
        );
    }
}

#[test]
fn gradcheck_conv_and_pools() {
    let mut rng = Rng::new("gradcheck_conv_and_pools");
    let t = |rng: &mut Rng, shape: &[usize]| {
        let n = shape.iter().product();
        Tensor::<Cpu, f64>::from_vec(rng.values(n, -1.0, 1.0), shape, Cpu)
    };
    let (x, w, b) = (
        t(&mut rng, &[2, 4, 5, 4]),
        t(&mut rng, &[4, 2, 2, 3]),
        t(&mut rng, &[4]),
    );
    gradcheck(
        |v| v[0].try_conv2d(&v[1], Some(&v[2]), (2, 1), (1, 1), (1, 2), 2),
        &[x.clone(), w.clone(), b.clone()],
    )
    .unwrap();
    gradcheck(
        |v| v[0].try_conv2d(&v[1], None, (1, 1), (0, 0), (1, 1), 2),
        &[x.clone(), w],
    )
    .unwrap();
    let (x1, w1) = (t(&mut rng, &[2, 3, 7]), t(&mut rng, &[2, 3, 3]));
    gradcheck(
        |v| v[0].try_conv1d(&v[1], Some(&v[2]), 2, 1, 1, 1),
        &[x1, w1, t(&mut rng, &[2])],
    )
    .unwrap();
    gradcheck(
        |v| v[0].try_max_pool2d((2, 2), (1, 2), (1, 0), (1, 1), true),
        std::slice::from_ref(&x),
    )
    .unwrap();
    gradcheck(
        |v| v[0].try_avg_pool2d((3, 2), (2, 1), (1, 1), true, false),
        std::slice::from_ref(&x),
    )
    .unwrap();
    gradcheck(|v| v[0].try_adaptive_avg_pool2d((3, 3)), &[x]).unwrap();
}

#[test]
fn pytorch_error_texts() {
    let r = |shape: &[usize]| Tensor::<Cpu>::zeros(shape, Cpu);
    let err = |e: devtype::Result<Tensor<Cpu>>| e.unwrap_err().to_string();
    let (x, w) = (r(&[2, 4, 5, 5]), r(&[8, 3, 3, 3]));
    assert_eq!(
        err(x.try_conv2d(&w, None, (1, 1), (0, 0), (1, 1), 1)),
        "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 channels, but got 4 channels instead"
    );
    assert_eq!(
        err(r(&[2, 6, 5, 5]).try_conv2d(&w, None, (1, 1), (0, 0), (1, 1), 3)),
        "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[8, 3, 3, 3]] instead"
    );
    assert_eq!(
        err(r(&[2, 3, 5, 5]).try_conv2d(&w, Some(&r(&[7])), (1, 1), (0, 0), (1, 1), 1)),
        "Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but got bias of size [7] instead"
    );
    assert_eq!(
        err(r(&[2, 3, 2, 2]).try_conv2d(&w, None, (1, 1), (0, 0), (1, 1), 1)),
        "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"
    );
    assert_eq!(
        err(r(&[2, 3, 5, 6]).try_conv2d(&w, None, (1, 1), (0, 0), (3, 2), 1)),
        "Calculated padded input size per channel: (5 x 6). Kernel size: (7 x 5). Kernel size can't be greater than actual input size"
    );
    assert_eq!(
        err(r(&[2, 3, 5, 5]).try_conv2d(&w, None, (0, 1), (0, 0), (1, 1), 1)),
        "non-positive stride is not supported"
    );
    assert_eq!(
        err(r(&[2, 3, 5, 5]).try_conv2d(&w, None, (1, 1), (0, 0), (1, 0), 1)),
        "non-positive dilation is not supported"
    );
    assert_eq!(
        err(r(&[2, 3, 5, 5]).try_conv2d(&w, None, (1, 1), (0, 0), (1, 1), 0)),
        "non-positive groups is not supported"
    );
    assert_eq!(
        err(r(&[5, 5]).try_conv2d(&w, None, (1, 1), (0, 0), (1, 1), 1)),
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [5, 5]"
    );
    assert_eq!(
        err(r(&[2, 4, 5]).try_conv1d(r(&[8, 3, 3]), None, 1, 0, 1, 1)),
        "Given groups=1, weight of size [8, 3, 3], expected input[2, 4, 5] to have 3 channels, but got 4 channels instead"
    );
    assert_eq!(
        err(r(&[2, 3, 2]).try_conv1d(r(&[8, 3, 3]), None, 1, 0, 1, 1)),
        "Calculated padded input size per channel: (2). Kernel size: (3). Kernel size can't be greater than actual input size"
    );
    assert_eq!(
        err(r(&[2, 3, 5]).try_conv1d(&w, None, 1, 0, 1, 1)),
        "Expected 4-dimensional input for 4-dimensional weight [8, 3, 3, 3], but got 3-dimensional input of size [2, 3, 5] instead"
    );
    assert_eq!(
        err(r(&[2, 3, 5]).try_conv1d(r(&[8, 3, 0]), None, 1, 0, 1, 1)),
        "Given weight of size [8, 3, 0], expected a kernel of at least 1 in every spatial dimension"
    );
    let x = r(&[2, 3, 5, 5]);
    assert_eq!(
        err(x.try_max_pool2d((3, 3), (2, 2), (2, 2), (1, 1), false)),
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"
    );
    assert_eq!(
        err(r(&[2, 3, 2, 9]).try_max_pool2d((3, 3), (1, 1), (0, 0), (1, 1), false)),
        "Given input size: (3x2x9). Calculated output size: (3x0x7). Output size is too small"
    );
    assert_eq!(
        err(x.try_max_pool2d((0, 5), (1, 1), (0, 0), (1, 1), false)),
        "kernel size should be greater than zero, but got kH: 0 kW: 5"
    );
    assert_eq!(
        err(x.try_max_pool2d((2, 2), (1, 0), (0, 0), (1, 1), false)),
        "stride should not be zero"
    );
    assert_eq!(
        err(x.try_max_pool2d((3, 3), (1, 1), (0, 0), (2, 0), false)),
        "dilation should be greater than zero, but got dilationH: 2 dilationW: 0"
    );
    assert_eq!(
        err(r(&[5, 5]).try_max_pool2d((2, 2), (2, 2), (0, 0), (1, 1), false)),
        "non-empty 3D or 4D (batch mode) tensor expected for input"
    );
    assert_eq!(
        err(r(&[2, 0, 5, 5]).try_max_pool2d((2, 2), (2, 2), (0, 0), (1, 1), false)),
        "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 5, 5]"
    );
    assert_eq!(
        err(x.try_avg_pool2d((5, 3), (1, 1), (1, 2), false, true)),
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"
    );
    assert_eq!(
        err(r(&[5, 5]).try_avg_pool2d((2, 2), (2, 2), (0, 0), false, true)),
        "Dimension out of range (expected to be in range of [-2, 1], but got -3)"
    );
    assert_eq!(
        err(r(&[5, 5]).try_adaptive_avg_pool2d((2, 2))),
        "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5, 5]"
    );
    assert_eq!(
        err(r(&[2, 3, 0, 5]).try_adaptive_avg_pool2d((2, 2))),
        "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 3, 0, 5] with dimension 2 being empty"
    );
    // The dynamic front's type checks.
    let cpu = DynDevice::cpu();
    let dx = DynTensor::zeros([2, 3, 5, 5], cpu).unwrap();
    let dw = DynTensor::zeros([8, 3, 3, 3], cpu)
        .and_then(|t| t.to_dtype(DType::F64))
        .unwrap();
    assert_eq!(
        dx.conv2d(&dw, None, (1, 1), (0, 0), (1, 1), 1)
            .unwrap_err()
            .to_string(),
        "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
    );
    assert_eq!(
        dx.to_dtype(DType::F64)
            .unwrap()
            .conv2d(
                &dw.to_dtype(DType::F32).unwrap(),
                None,
                (1, 1),
                (0, 0),
                (1, 1),
                1
            )
            .unwrap_err()
            .to_string(),
        "expected scalar type Double but found Float"
    );
    assert_eq!(
        dx.conv2d(&dw.to_dtype(DType::BF16).unwrap(), None, (1, 1), (0, 0), (1, 1), 1)
            .unwrap_err()
            .to_string(),
        "Input type (torch.FloatTensor) and weight type (CPUBFloat16Type) should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
    );
    assert_eq!(
        dx.to_dtype(DType::F16)
            .unwrap()
            .conv1d(&DynTensor::zeros([8, 3, 3], cpu).unwrap(), None, 1, 0, 1, 1)
            .unwrap_err()
            .to_string(),
        "expected scalar type Half but found Float"
    );
    let dw = dw.to_dtype(DType::F32).unwrap();
    let db = DynTensor::zeros([8], cpu)
        .and_then(|t| t.to_dtype(DType::F64))
        .unwrap();
    assert_eq!(
        dx.conv2d(&dw, Some(&db), (1, 1), (0, 0), (1, 1), 1)
            .unwrap_err()
            .to_string(),
        "Input type (float) and bias type (double) should be the same"
    );
    // Shapes PyTorch allows: unbatched, an empty batch, an adaptive output of 0.
    assert_eq!(
        r(&[3, 5, 5])
            .conv2d(r(&[8, 3, 3, 3]), None, (1, 1), (0, 0), (1, 1), 1)
            .shape(),
        &[8, 3, 3]
    );
    assert_eq!(
        r(&[0, 3, 5, 5])
            .conv2d(r(&[8, 3, 3, 3]), None, (1, 1), (0, 0), (1, 1), 1)
            .shape(),
        &[0, 8, 3, 3]
    );
    assert_eq!(
        r(&[2, 3, 5, 5]).adaptive_avg_pool2d((2, 0)).shape(),
        &[2, 3, 2, 0]
    );
}

#[test]
fn modules() {
    devtype::manual_seed(30);
    let conv = Conv2d::<Cpu, f64>::try_with_options(4, 6, (3, 2), 2, true, Cpu).unwrap();
    assert_eq!(conv.weight().shape(), &[6, 2, 3, 2]);
    let bound = 1.0 / (12f64).sqrt();
    assert!(conv.weight().to_vec().iter().all(|v| v.abs() <= bound));
    assert!(conv
        .bias()
        .unwrap()
        .to_vec()
        .iter()
        .all(|v| v.abs() <= bound));
    let params = Module::<Cpu, f64>::parameters(&conv);
    assert_eq!(params.len(), 2);
    let x = Tensor::<Cpu>::randn([2, 4, 6, 5], Cpu).to_dtype::<f64>();
    let conv = conv.with_padding((1, 0)).with_stride((2, 1));
    let y = conv.forward(&x);
    assert_eq!(y.shape(), &[2, 6, 3, 4]);
    let want = x.conv2d(conv.weight(), conv.bias(), (2, 1), (1, 0), (1, 1), 2);
    assert_eq!(y.to_vec(), want.to_vec());
    let moved = conv.to(Cpu);
    assert_eq!(moved.forward(&x).to_vec(), want.to_vec());

    let c1 = Conv1d::new(4, 2, 3, Cpu).with_dilation(2);
    let y = c1.forward(&Tensor::randn([3, 4, 9], Cpu));
    assert_eq!(y.shape(), &[3, 2, 5]);

    let x = Tensor::<Cpu>::randn([2, 3, 7, 6], Cpu);
    let mut mp = MaxPool2d::new((3, 3));
    mp.stride = (2, 2);
    mp.padding = (1, 1);
    assert_eq!(
        mp.forward(&x).to_vec(),
        x.max_pool2d((3, 3), (2, 2), (1, 1), (1, 1), false).to_vec()
    );
    let ap = AvgPool2d::new((2, 2));
    assert_eq!(ap.forward(&x).shape(), &[2, 3, 3, 3]);
    let aap = AdaptiveAvgPool2d::new((2, 3));
    assert_eq!(aap.forward(&x).shape(), &[2, 3, 2, 3]);
    // A small network trains end to end.
    let net = Conv2d::new(3, 4, (3, 3), Cpu).with_padding((1, 1));
    let y = AdaptiveAvgPool2d::new((1, 1)).forward(MaxPool2d::new((2, 2)).forward(net.forward(&x)));
    y.sum().backward();
    assert!(net.weight().grad().is_some() && net.bias().unwrap().grad().is_some());
}

/// PyTorch's max pool of one plane, written out: each window's maximum starting at `-inf` at
/// its first index, taps in row-major order, a tap winning when it is greater or NaN (so the
/// first of tied maxima, the last NaN). `(values, flat indices)`.
#[allow(clippy::too_many_arguments)]
fn naive_max_pool(
    plane: &[f64],
    (h, w): (usize, usize),
    (kh, kw): Size2,
    (sh, sw): Size2,
    (ph, pw): Size2,
    (dh, dw): Size2,
    (oh, ow): Size2,
) -> (Vec<f64>, Vec<i64>) {
    let (mut ys, mut idx) = (vec![], vec![]);
    for oy in 0..oh {
        for ox in 0..ow {
            let (y0, x0) = (
                oy as i64 * sh as i64 - ph as i64,
                ox as i64 * sw as i64 - pw as i64,
            );
            let (mut best, mut at) = (f64::NEG_INFINITY, -1i64);
            for ki in 0..kh as i64 {
                for kj in 0..kw as i64 {
                    let (y, x) = (y0 + ki * dh as i64, x0 + kj * dw as i64);
                    if y < 0 || x < 0 || y >= h as i64 || x >= w as i64 {
                        continue;
                    }
                    let i = y * w as i64 + x;
                    let v = plane[i as usize];
                    if at < 0 {
                        at = i;
                    }
                    if v > best || v.is_nan() {
                        (best, at) = (v, i);
                    }
                }
            }
            ys.push(best);
            idx.push(at);
        }
    }
    (ys, idx)
}

/// Max pools of fresh inputs against [`naive_max_pool`], in f64 and f32: values drawn from a few
/// levels (ties in most windows), NaN and `-inf` sprinkled in, rows wide enough for the
/// kernel's vector of outputs and a tail, windows inside the image (the branch-free path) and
/// reaching into padding or dilated; the gradient goes to each maximum's index.
#[test]
fn max_pool_against_naive_reference_on_fresh_inputs() {
    let mut rng = Rng::new("max_pool_against_naive_reference_on_fresh_inputs");
    for round in 0..40 {
        let (kh, kw) = (1 + rng.below(3), 1 + rng.below(3));
        let (sh, sw) = (1 + rng.below(3), 1 + rng.below(3));
        let padded = rng.chance(0.3);
        let (ph, pw) = if padded {
            (rng.below(kh / 2 + 1), rng.below(kw / 2 + 1))
        } else {
            (0, 0)
        };
        let (dh, dw) = if padded {
            (1 + rng.below(2), 1)
        } else {
            (1, 1)
        };
        let h = (kh - 1) * dh + 1 + rng.below(6);
        let w = (kw - 1) * dw + 1 + rng.below(70);
        let planes = 1 + rng.below(3);
        let x: Vec<f64> = (0..planes * h * w)
            .map(|_| match rng.below(40) {
                0 => f64::NAN,
                1 => f64::NEG_INFINITY,
                _ => rng.below(5) as f64 - 2.0,
            })
            .collect();
        let (oh, ow) = (
            (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1,
            (w + 2 * pw - (kw - 1) * dw - 1) / sw + 1,
        );
        let (mut want, mut want_idx) = (vec![], vec![]);
        for p in 0..planes {
            let (v, i) = naive_max_pool(
                &x[p * h * w..][..h * w],
                (h, w),
                (kh, kw),
                (sh, sw),
                (ph, pw),
                (dh, dw),
                (oh, ow),
            );
            want.extend(v);
            want_idx.extend(i);
        }
        let what = format!(
            "round {round}: x [{planes}, {h}, {w}], kernel ({kh}, {kw}), stride ({sh}, {sw}), padding ({ph}, {pw}), dilation ({dh}, {dw})"
        );
        let same = |got: &[f64], what: &str| {
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, (g, e)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g == e || (g.is_nan() && e.is_nan()),
                    "{what}: output {k}: {g} against {e}"
                );
            }
        };
        let xt = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(x.clone(), [planes, h, w], Cpu));
        let r = xt.max_pool2d_with_indices((kh, kw), (sh, sw), (ph, pw), (dh, dw), false);
        same(&r.values.to_vec(), &what);
        assert_eq!(r.indices.to_vec(), want_idx, "{what}: indices");
        let x32 =
            Tensor::<Cpu>::from_vec(x.iter().map(|&v| v as f32).collect(), [planes, h, w], Cpu);
        let r32 = x32.max_pool2d_with_indices((kh, kw), (sh, sw), (ph, pw), (dh, dw), false);
        let got32: Vec<f64> = r32.values.to_vec().iter().map(|&v| v as f64).collect();
        same(&got32, &format!("{what}: f32"));
        assert_eq!(r32.indices.to_vec(), want_idx, "{what}: f32 indices");
        // The gradient: each output's seed at its maximum's index, summed.
        let seed = rng.values(want.len(), -1.0, 1.0);
        let mut gx = vec![0.0; x.len()];
        for (k, &i) in want_idx.iter().enumerate() {
            gx[(k / (oh * ow)) * h * w + i as usize] += seed[k];
        }
        r.values
            .backward_with(Tensor::from_vec(seed, [planes, oh, ow], Cpu));
        close(
            &format!("{what}: grad"),
            &xt.grad().unwrap().to_vec(),
            &gx,
            1e-12,
        );
    }
}

/// NaN wins a max-pool window and takes its gradient; a window of `-inf` gives `-inf` and
/// sends its gradient to its first element (PyTorch 2.15's values and gradient).
#[test]
fn max_pool_nan_and_infinite_windows() {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let x = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(
        vec![1., nan, 3., nan, 2., 5., -inf, -inf, 0., 1., -inf, -inf],
        [1, 3, 4],
        Cpu,
    ));
    let y = x.max_pool2d((2, 2), (1, 2), (0, 0), (1, 1), false);
    let v = y.to_vec();
    assert!(v[0].is_nan() && v[1].is_nan());
    assert_eq!(&v[2..], &[5.0, -inf]);
    y.backward_with(Tensor::from_vec(vec![1., 2., 3., 4.], [1, 2, 2], Cpu));
    assert_eq!(
        x.grad().unwrap().to_vec(),
        vec![0., 1., 0., 2., 0., 3., 4., 0., 0., 0., 0., 0.]
    );
    let r = x.max_pool2d_with_indices((2, 2), (1, 2), (0, 0), (1, 1), false);
    assert_eq!(r.indices.to_vec(), vec![1, 3, 5, 6]);
    assert_eq!(r.indices.shape(), &[1, 2, 2]);
    if let Some(gpu) = common::gpu() {
        let xg = Tensor::parameter(x.detach().to(gpu));
        let yg = xg.max_pool2d((2, 2), (1, 2), (0, 0), (1, 1), false);
        assert_eq!(yg.to_vec()[2..], v[2..]);
        yg.backward_with(Tensor::from_vec(vec![1., 2., 3., 4.], [1, 2, 2], Cpu).to(gpu));
        assert_eq!(xg.grad().unwrap().to_vec(), x.grad().unwrap().to_vec());
        let rg = xg.max_pool2d_with_indices((2, 2), (1, 2), (0, 0), (1, 1), false);
        assert_eq!(rg.indices.to_vec(), vec![1, 3, 5, 6]);
    }
}

/// Inside an autocast scope an `f32` convolution runs in the low type (as PyTorch's autocast
/// lists `conv1d` and `conv2d`): the same values as converting by hand, gradients in `f32`.
#[test]
fn autocast_runs_convolutions_in_low_precision() {
    use devtype::amp::autocast;
    devtype::manual_seed(31);
    let x = Tensor::parameter(Tensor::<Cpu>::randn([2, 3, 6, 5], Cpu));
    let w = Tensor::parameter(Tensor::<Cpu>::randn([4, 3, 3, 3], Cpu));
    let b = Tensor::parameter(Tensor::<Cpu>::randn([4], Cpu));
    let y = autocast::<bf16, _>(|| x.conv2d(&w, Some(&b), (1, 2), (1, 1), (1, 1), 1));
    let low = |t: &Tensor<Cpu>| t.to_dtype::<bf16>();
    let want = low(&x)
        .conv2d(low(&w), Some(&low(&b)), (1, 2), (1, 1), (1, 1), 1)
        .to_dtype::<f32>();
    assert_eq!(y.to_vec(), want.to_vec());
    y.sum().backward();
    assert!(x.grad().is_some() && w.grad().is_some() && b.grad().is_some());
    let x1 = Tensor::<Cpu>::randn([1, 4, 9], Cpu);
    let w1 = Tensor::<Cpu>::randn([2, 4, 3], Cpu);
    let y1 = autocast::<f16, _>(|| x1.conv1d(&w1, None, 2, 1, 1, 1));
    let want1 = x1
        .to_dtype::<f16>()
        .conv1d(w1.to_dtype::<f16>(), None, 2, 1, 1, 1)
        .to_dtype::<f32>();
    assert_eq!(y1.to_vec(), want1.to_vec());
}

/// `DynConv2d`, the dynamic front's layer: its forward is `conv2d` with its fields, its
/// parameters are named and get gradients, and it moves in place.
#[test]
fn dyn_conv2d_module() {
    use devtype::nn::{DynConv2d, DynModule};
    let cpu = DynDevice::cpu();
    let mut conv = DynConv2d::new(4, 6, (3, 2), cpu).unwrap();
    conv.stride = (2, 1);
    conv.padding = (1, 0);
    conv.to(cpu).unwrap();
    let x = DynTensor::randn([2, 4, 7, 5], cpu).unwrap();
    let y = conv.forward(&x).unwrap();
    let want = x
        .conv2d(&conv.weight, conv.bias.as_ref(), (2, 1), (1, 0), (1, 1), 1)
        .unwrap();
    assert_eq!(y.shape(), &[2, 6, 4, 4]);
    assert_eq!(y.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    let names: Vec<String> = conv
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["weight", "bias"]);
    let bound = 1.0 / 24f32.sqrt();
    assert!(conv
        .weight
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| v.abs() <= bound));
    y.sum_all().unwrap().backward().unwrap();
    assert!(conv.weight.grad().is_some() && conv.bias.as_ref().unwrap().grad().is_some());
}

/// `DynConv1d`, as `DynConv2d`: its forward is `conv1d` with its fields, its parameters are
/// named, within PyTorch's bounds and get gradients, and it moves in place; a move that fails
/// leaves it where it was. (Not compared draw for draw with `Conv1d` under one seed: the
/// generator is global and this binary's tests draw from it in parallel.)
#[test]
fn dyn_conv1d_module() {
    use devtype::nn::{DynConv1d, DynModule};
    let cpu = DynDevice::cpu();
    let mut conv = DynConv1d::new(4, 6, 3, cpu).unwrap();
    conv.stride = 2;
    conv.padding = 1;
    conv.dilation = 2;
    conv.to(cpu).unwrap();
    let x = DynTensor::randn([2, 4, 11], cpu).unwrap();
    let y = conv.forward(&x).unwrap();
    let want = x
        .conv1d(&conv.weight, conv.bias.as_ref(), 2, 1, 2, 1)
        .unwrap();
    assert_eq!(y.shape(), &[2, 6, 5]);
    assert_eq!(y.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    let names: Vec<String> = conv
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["weight", "bias"]);
    let bound = 1.0 / 12f32.sqrt();
    assert!(conv
        .weight
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| v.abs() <= bound));
    y.sum_all().unwrap().backward().unwrap();
    assert!(conv.weight.grad().is_some() && conv.bias.as_ref().unwrap().grad().is_some());
    // A device that does not exist: an error, and the layer as it was.
    let before = conv.weight.to_vec::<f32>().unwrap();
    assert!(conv.to(DynDevice::cuda(63)).is_err());
    assert_eq!(conv.weight.device(), cpu);
    assert_eq!(conv.bias.as_ref().unwrap().device(), cpu);
    assert_eq!(conv.weight.to_vec::<f32>().unwrap(), before);
    assert!(conv.weight.is_leaf() && conv.weight.requires_grad());
    // Without a bias.
    conv.bias = None;
    let y = conv.forward(&x).unwrap();
    let want = x.conv1d(&conv.weight, None, 2, 1, 2, 1).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    assert_eq!(conv.named_parameters().len(), 1);
}

/// `DynConv1d` and `DynConv2d` moved to the GPU in place (the simulator in CI): their
/// parameters stay leaves that require gradients, and forward and gradients match the same
/// layers on the CPU.
#[test]
fn gpu_dyn_conv_layers_match_cpu() {
    use devtype::nn::{DynConv1d, DynConv2d, DynModule};
    let Some(gpu) = common::gpu() else {
        return;
    };
    let (cpu, dev) = (DynDevice::cpu(), DynDevice::from(gpu));
    let vals = |t: &DynTensor| t.to(cpu).unwrap().to_vec::<f32>().unwrap();
    // A fresh parameter on the CPU with `t`'s values.
    let copy = |t: &DynTensor| DynTensor::parameter(t.detach().to(cpu).unwrap()).unwrap();
    // Runs `layer` (on the GPU) and `reference` (on the CPU) on `x` and compares values and
    // the gradients of the input and the parameters.
    let check = |what: &str, layer: &dyn DynModule, reference: &dyn DynModule, x: &DynTensor| {
        let xg = DynTensor::parameter(x.to(dev).unwrap()).unwrap();
        let xc = DynTensor::parameter(x.clone()).unwrap();
        let (yg, yc) = (layer.forward(&xg).unwrap(), reference.forward(&xc).unwrap());
        assert_eq!(yg.device(), dev, "{what}: output device");
        let as64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        close(what, &as64(vals(&yg)), &as64(vals(&yc)), 1e-5);
        yg.square().unwrap().sum_all().unwrap().backward().unwrap();
        yc.square().unwrap().sum_all().unwrap().backward().unwrap();
        close(
            &format!("{what} grad x"),
            &as64(vals(&xg.grad().unwrap())),
            &as64(vals(&xc.grad().unwrap())),
            1e-4,
        );
        let (pg, pc) = (layer.named_parameters(), reference.named_parameters());
        assert_eq!(pg.len(), pc.len());
        for ((name, g), (_, c)) in pg.iter().zip(&pc) {
            assert_eq!(g.device(), dev, "{what}.{name}: device");
            assert!(
                g.is_leaf() && g.requires_grad(),
                "{what}.{name}: a parameter"
            );
            close(
                &format!("{what} grad {name}"),
                &as64(vals(&g.grad().unwrap())),
                &as64(vals(&c.grad().unwrap())),
                1e-4,
            );
        }
    };

    let mut c1 = DynConv1d::new(4, 6, 3, cpu).unwrap();
    (c1.stride, c1.padding, c1.dilation) = (2, 1, 2);
    let r1 = DynConv1d {
        weight: copy(&c1.weight),
        bias: c1.bias.as_ref().map(copy),
        ..c1.clone()
    };
    let same: *const DynConv1d = c1.to(dev).unwrap();
    assert!(
        std::ptr::eq(same, &c1),
        "DynConv1d::to returns the layer itself"
    );
    assert_eq!(c1.weight.device(), dev);
    check(
        "DynConv1d",
        &c1,
        &r1,
        &DynTensor::randn([2, 4, 13], cpu).unwrap(),
    );

    let mut c2 = DynConv2d::new(6, 4, (3, 2), cpu).unwrap();
    (c2.stride, c2.padding, c2.groups) = ((2, 1), (1, 0), 2);
    c2.weight =
        DynTensor::parameter(c2.weight.narrow(1, 0, 3).unwrap().contiguous().unwrap()).unwrap();
    let r2 = DynConv2d {
        weight: copy(&c2.weight),
        bias: c2.bias.as_ref().map(copy),
        ..c2.clone()
    };
    c2.to(dev).unwrap();
    check(
        "DynConv2d",
        &c2,
        &r2,
        &DynTensor::randn([2, 6, 7, 5], cpu).unwrap(),
    );
    // And back: the layer on the CPU gives the reference's values.
    c1.to(cpu).unwrap();
    let x = DynTensor::randn([1, 4, 9], cpu).unwrap();
    assert_eq!(
        vals(&c1.forward(&x).unwrap()),
        vals(&r1.forward(&x).unwrap())
    );
}

/// The GPU (the simulator in CI) gives PyTorch's values and gradients too, in f64.
#[test]
fn gpu_matches_pytorch() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    check_typed_against_torch(gpu, 1e-10);
}

/// The GPU's f32/f16/bf16 kernels against the CPU's on the recorded inputs.
#[test]
fn gpu_low_precision_matches_cpu() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let cpu = DynDevice::cpu();
        let dev = DynDevice::from(gpu);
        let t = |v: &[f64], shape: &[usize], on: DynDevice| {
            DynTensor::from_vec(v.to_vec(), shape, cpu)
                .and_then(|t| t.to_dtype(dtype))
                .and_then(|t| t.to(on))
                .unwrap()
        };
        let vals = |t: &DynTensor| {
            t.to(cpu)
                .and_then(|t| t.to_dtype(DType::F64))
                .and_then(|t| t.to_vec::<f64>())
                .unwrap()
        };
        let tol = match dtype {
            DType::F32 => 1e-5,
            DType::F16 => 4e-3,
            _ => 3e-2,
        };
        for c in &torch::CONV[..3] {
            let run = |on: DynDevice| {
                let (x, w) = (t(c.x, c.x_shape, on), t(c.w, c.w_shape, on));
                let b = c.b.map(|b| t(b, &[b.len()], on));
                vals(
                    &x.conv2d(&w, b.as_ref(), c.stride, c.padding, c.dilation, c.groups)
                        .unwrap(),
                )
            };
            close(
                &format!("{} {dtype:?}", c.name),
                &run(dev),
                &run(cpu),
                tol * 10.0,
            );
        }
        for p in torch::POOL {
            let run = |on: DynDevice| {
                let x = t(p.x, p.x_shape, on);
                let y = match p.kind {
                    "max" => x.max_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode),
                    "avg" => x.avg_pool2d(
                        p.kernel,
                        p.stride,
                        p.padding,
                        p.ceil_mode,
                        p.count_include_pad,
                    ),
                    _ => x.adaptive_avg_pool2d(p.kernel),
                };
                vals(&y.unwrap())
            };
            close(&format!("{} {dtype:?}", p.name), &run(dev), &run(cpu), tol);
        }
    }
}
