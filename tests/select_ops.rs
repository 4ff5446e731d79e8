//! The ops a PyTorch user reaches for: `sum()`/`mean()` of everything, `max(dim)`/`min(dim)`
//! with indices, `sort`/`argsort`/`topk`, `cumsum`, `masked_fill`, `full_like`, `tensor!`.
//! Each against an independent reference (f64 loops written here, or values and texts
//! recorded from PyTorch 2.15), on fresh random inputs, on both fronts; the backward rules by
//! `gradcheck`.

use devtype::autograd::{gradcheck, gradcheck_dyn};
use devtype::prelude::*;
use devtype::tensor;
use devtype::IndexItem;

type T = Tensor<Cpu, f64>;

fn randn(shape: &[usize], seed: u64) -> T {
    devtype::manual_seed(seed);
    Tensor::<Cpu, f64>::zeros(shape, Cpu).randn_like()
}

/// Random values rounded to whole numbers in about [-4, 4]: many ties.
fn rounded(shape: &[usize], seed: u64) -> T {
    let v = randn(shape, seed).to_vec();
    Tensor::from_vec(v.iter().map(|x| (x * 2.0).round()).collect(), shape, Cpu)
}

fn err<V>(r: devtype::Result<V>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Strides of a contiguous `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The lines along `d` of a row-major `shape`: each as the flat positions of its elements.
fn lines(shape: &[usize], d: usize) -> Vec<Vec<usize>> {
    let st = strides(shape);
    let n: usize = shape.iter().product();
    let mut out = Vec::new();
    for start in 0..n {
        if (start / st[d]).is_multiple_of(shape[d]) {
            out.push((0..shape[d]).map(|i| start + i * st[d]).collect());
        }
    }
    out
}

#[test]
fn sum_and_mean_of_everything_by_pytorch_names() {
    let x = randn(&[3, 5, 2], 1);
    let v = x.to_vec();
    let want: f64 = v.iter().sum();
    assert!((x.sum().item() - want).abs() < 1e-12);
    assert!((x.mean().item() - want / 30.0).abs() < 1e-12);
    assert_eq!(x.sum().shape(), &[] as &[usize]);
    // The old names are aliases.
    assert_eq!(x.sum_all().item(), x.sum().item());
    assert_eq!(x.mean_all().item(), x.mean().item());
    let d = x.to_dyn();
    assert_eq!(d.sum().unwrap().item::<f64>().unwrap(), x.sum().item());
    // PyTorch sums bool as int64.
    let b = DynTensor::from_vec(vec![true, false, true], [3], DynDevice::cpu()).unwrap();
    assert_eq!(b.sum().unwrap().dtype(), DType::I64);
    assert_eq!(b.sum().unwrap().item::<i64>().unwrap(), 2);
    gradcheck(|v| Ok(v[0].sum()), std::slice::from_ref(&x)).unwrap();
    gradcheck(|v| Ok(v[0].mean()), &[x]).unwrap();
}

#[test]
fn cumsum_matches_a_running_sum_along_every_dim_and_on_views() {
    let shape = [4, 3, 5];
    let x = randn(&shape, 2);
    let v = x.to_vec();
    for d in 0..3 {
        let mut want = vec![0.0; v.len()];
        for line in lines(&shape, d) {
            let mut acc = 0.0;
            for &p in &line {
                acc += v[p];
                want[p] = acc;
            }
        }
        for dim in [d as isize, d as isize - 3] {
            let got = x.cumsum(dim).to_vec();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "dim {dim}: {g} vs {w}");
            }
            assert_eq!(
                x.to_dyn().cumsum(dim).unwrap().to_vec::<f64>().unwrap(),
                got
            );
        }
        gradcheck(|t| t[0].try_cumsum(d as isize), std::slice::from_ref(&x)).unwrap();
    }
    // A transposed view: the same as its contiguous copy.
    let t = x.transpose(0, 2);
    assert_eq!(t.cumsum(1).to_vec(), t.contiguous().cumsum(1).to_vec());
    // f32 and f16 against the f64 sums (16-bit accumulates in f32, rounded once per output).
    let f = x.to_dtype::<f32>().cumsum(2).to_vec();
    let h = x.to_dtype::<f16>().cumsum(2).to_vec();
    for ((a, b), w) in f.iter().zip(&h).zip(x.cumsum(2).to_vec()) {
        assert!((*a as f64 - w).abs() < 1e-5);
        assert!((b.to_f64() - w).abs() < 2e-2 * w.abs().max(1.0));
    }
    // A long single line, on the parallel paths.
    let long = randn(&[70_000], 3);
    let lv = long.to_vec();
    let got = long.cumsum(0).to_vec();
    let mut acc = 0.0;
    for (g, x) in got.iter().zip(&lv) {
        acc += x;
        assert!((g - acc).abs() < 1e-9);
    }
    let wide = randn(&[600, 80], 4);
    let (wv, got) = (wide.to_vec(), wide.cumsum(0).to_vec());
    for j in 0..80 {
        let mut acc = 0.0;
        for i in 0..600 {
            acc += wv[i * 80 + j];
            assert!((got[i * 80 + j] - acc).abs() < 1e-9);
        }
    }
    // PyTorch's: bool counts as int64 on the dynamic front; integers stay int64.
    let b = DynTensor::from_vec(vec![true, false, true], [3], DynDevice::cpu()).unwrap();
    let c = b.cumsum(0).unwrap();
    assert_eq!(c.dtype(), DType::I64);
    assert_eq!(c.to_vec::<i64>().unwrap(), [1, 1, 2]);
    let i = tensor!([1i64, -2, 5], Cpu);
    assert_eq!(i.cumsum(0).to_vec(), [1, -1, 4]);
    assert_eq!(
        err(x.try_cumsum(3)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
}

/// The stable order of one line: by value (NaN above all), then by index.
fn reference_order(v: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let key = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    };
    idx.sort_by(|&i, &j| {
        let o = key(v[i], v[j]);
        if descending {
            o.reverse()
        } else {
            o
        }
    });
    idx
}

#[test]
fn sort_argsort_and_topk_match_a_stable_reference_along_every_dim() {
    let shape = [5, 6, 7];
    // Rounded to halves: many ties, which a stable sort keeps in index order.
    let x = rounded(&shape, 5);
    let v = x.to_vec();
    for d in 0..3 {
        for descending in [false, true] {
            let s = x.sort(d as isize, descending);
            let (sv, si) = (s.values.to_vec(), s.indices.to_vec());
            let a = x.argsort(d as isize, descending).to_vec();
            let k = shape[d] / 2 + 1;
            let t = x.topk(k, d as isize, descending, true);
            let tshape: Vec<usize> = (0..3).map(|j| if j == d { k } else { shape[j] }).collect();
            assert_eq!(t.values.shape(), &tshape[..]);
            let (tv, ti) = (t.values.to_vec(), t.indices.to_vec());
            for (line, tline) in lines(&shape, d).iter().zip(lines(&tshape, d)) {
                let vals: Vec<f64> = line.iter().map(|&p| v[p]).collect();
                let order = reference_order(&vals, descending);
                for (r, &i) in order.iter().enumerate() {
                    assert_eq!(si[line[r]], i as i64, "dim {d} desc {descending}");
                    assert_eq!(a[line[r]], i as i64);
                    assert_eq!(sv[line[r]], vals[i]);
                    if r < k {
                        assert_eq!(ti[tline[r]], i as i64);
                        assert_eq!(tv[tline[r]], vals[i]);
                    }
                }
            }
            let ds = x.to_dyn().sort(d as isize, descending).unwrap();
            assert_eq!(ds.values.to_vec::<f64>().unwrap(), sv);
            assert_eq!(ds.indices.to_vec::<i64>().unwrap(), si);
        }
    }
    // Distinct values: the gradient goes back to where each value came from.
    let y = randn(&[4, 6], 6);
    gradcheck(
        |t| Ok(t[0].try_sort(1, true)?.values),
        std::slice::from_ref(&y),
    )
    .unwrap();
    gradcheck(
        |t| Ok(t[0].try_topk(3, 0, false, true)?.values),
        std::slice::from_ref(&y),
    )
    .unwrap();
    gradcheck_dyn(|t| Ok(t[0].topk(2, 1, true, true)?.values), &[y.to_dyn()]).unwrap();
}

#[test]
fn sort_and_topk_place_nan_as_pytorch() {
    let n = f64::NAN;
    let x = tensor!([3., n, 1., 3., -1., n, 1.], Cpu);
    let show = |v: Vec<f64>| format!("{v:?}");
    // Recorded from PyTorch 2.15: x.sort(stable=True), x.sort(descending=True, stable=True).
    let s = x.sort(0, false);
    assert_eq!(
        show(s.values.to_vec()),
        "[-1.0, 1.0, 1.0, 3.0, 3.0, NaN, NaN]"
    );
    assert_eq!(s.indices.to_vec(), [4, 2, 6, 0, 3, 1, 5]);
    let s = x.sort(0, true);
    assert_eq!(
        show(s.values.to_vec()),
        "[NaN, NaN, 3.0, 3.0, 1.0, 1.0, -1.0]"
    );
    assert_eq!(s.indices.to_vec(), [1, 5, 0, 3, 2, 6, 4]);
    // x.topk(3, largest=False); x.topk(3) is [nan, nan, 3.0] (PyTorch picks index 3 of the
    // tied 3.0s, its order of ties being unspecified; devtype's is by index: 0).
    let t = x.topk(3, 0, false, true);
    assert_eq!(t.values.to_vec(), [-1.0, 1.0, 1.0]);
    assert_eq!(t.indices.to_vec(), [4, 2, 6]);
    let t = x.topk(3, 0, true, true);
    assert_eq!(show(t.values.to_vec()), "[NaN, NaN, 3.0]");
    assert_eq!(t.indices.to_vec()[..2], [1, 5]);
    // f16 and i64 sort as f64 does.
    let h = x.to_dtype::<f16>().sort(0, false);
    assert_eq!(h.indices.to_vec(), [4, 2, 6, 0, 3, 1, 5]);
    let i = tensor!([[3i64, -7, 3, 0]], Cpu).sort(1, true);
    assert_eq!(i.values.to_vec(), [3, 3, 0, -7]);
    assert_eq!(i.indices.to_vec(), [0, 2, 3, 1]);
}

#[test]
fn topk_and_sort_errors_are_pytorchs() {
    let x = randn(&[2, 3], 7);
    assert_eq!(
        err(x.try_topk(4, 1, true, true)),
        "selected index k out of range"
    );
    assert_eq!(
        err(x.to_dyn().topk(4, 1, true, true)),
        "selected index k out of range"
    );
    assert_eq!(
        err(x.try_topk(1, -3, true, true)),
        "Dimension out of range (expected to be in range of [-2, 1], but got -3)"
    );
    assert_eq!(
        err(x.try_sort(2, false)),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    assert_eq!(
        err(x.try_max(2)),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    // k = 0 is an empty result, as PyTorch's.
    assert_eq!(x.topk(0, 1, true, true).values.shape(), &[2, 0]);
}

#[test]
fn max_and_min_over_a_dim_return_values_and_indices() {
    let shape = [4, 7];
    let x = rounded(&shape, 8);
    let v = x.to_vec();
    for d in 0..2 {
        let (mx, mn) = (x.max(d as isize), x.min(d as isize));
        for (o, line) in lines(&shape, d).iter().enumerate() {
            let vals: Vec<f64> = line.iter().map(|&p| v[p]).collect();
            // The first index of the extreme value.
            let best = |better: fn(f64, f64) -> bool| {
                (0..vals.len()).fold(0, |b, i| if better(vals[i], vals[b]) { i } else { b })
            };
            let (imax, imin) = (best(|a, b| a > b), best(|a, b| a < b));
            assert_eq!(mx.indices.to_vec()[o], imax as i64);
            assert_eq!(mx.values.to_vec()[o], vals[imax]);
            assert_eq!(mn.indices.to_vec()[o], imin as i64);
            assert_eq!(mn.values.to_vec()[o], vals[imin]);
        }
        let k = x.max_keepdim(d as isize);
        assert_eq!(k.values.shape().len(), 2);
        assert_eq!(k.indices.to_vec(), mx.indices.to_vec());
    }
    // Recorded from PyTorch 2.15: NaN wins max, first index on ties.
    let n = f64::NAN;
    let m = tensor!([[1., n, 2.], [5., 5., 0.]], Cpu).max(1);
    assert!(m.values.to_vec()[0].is_nan());
    assert_eq!(m.values.to_vec()[1], 5.0);
    assert_eq!(m.indices.to_vec(), [1, 0]);
    let m = tensor!([[1., 3., 3.], [0., 0., 0.]], Cpu).min(1);
    assert_eq!(
        (m.values.to_vec(), m.indices.to_vec()),
        (vec![1.0, 0.0], vec![0, 0])
    );
    // The dynamic front, bool included (PyTorch's max over bool is a bool).
    let d = x.to_dyn().max(1).unwrap();
    assert_eq!(
        d.indices.to_vec::<i64>().unwrap(),
        x.max(1).indices.to_vec()
    );
    let b = DynTensor::from_vec(vec![false, true, false, false], [2, 2], DynDevice::cpu()).unwrap();
    let bm = b.max(1).unwrap();
    assert_eq!(bm.values.dtype(), DType::Bool);
    assert_eq!(bm.values.to_vec::<bool>().unwrap(), [true, false]);
    assert_eq!(bm.indices.to_vec::<i64>().unwrap(), [1, 0]);
    let y = randn(&[3, 5], 9);
    gradcheck(|t| Ok(t[0].try_max(1)?.values), std::slice::from_ref(&y)).unwrap();
    gradcheck(|t| Ok(t[0].try_min_keepdim(0)?.values), &[y]).unwrap();
}

#[test]
fn masked_fill_matches_where_and_passes_the_gradient_elsewhere() {
    let x = randn(&[3, 4], 10);
    let m = randn(&[1, 4], 11).gt_scalar(0.0);
    let (xv, mv) = (x.to_vec(), m.to_vec());
    let got = x.masked_fill(&m, -2.5);
    assert_eq!(got.shape(), &[3, 4]);
    for (p, g) in got.to_vec().iter().enumerate() {
        let want = if mv[p % 4] { -2.5 } else { xv[p] };
        assert_eq!(*g, want);
    }
    let d = x.to_dyn().masked_fill(&m.to_dyn(), -2.5).unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), got.to_vec());
    // The mask broadcasts the result (out-of-place `masked_fill`, as PyTorch's).
    let wide = randn(&[4], 12).masked_fill(m.expand(&[3, 4]), 0.0);
    assert_eq!(wide.shape(), &[3, 4]);
    gradcheck(|t| t[0].try_masked_fill(&m, 1.0), std::slice::from_ref(&x)).unwrap();
    // PyTorch's texts.
    let long_mask = DynTensor::from_vec(vec![1i64, 0, 1], [3], DynDevice::cpu()).unwrap();
    let z = DynTensor::zeros([3], DynDevice::cpu()).unwrap();
    assert_eq!(
        err(z.masked_fill(&long_mask, 1.0)),
        "masked_fill_ only supports boolean masks, but got mask with dtype long int"
    );
    let all = DynTensor::from_vec(vec![true; 3], [3], DynDevice::cpu()).unwrap();
    let of = |dtype: DType, v: f64| z.to_dtype(dtype).unwrap().masked_fill(&all, v);
    assert_eq!(
        err(of(DType::F16, 65504.01)),
        "value cannot be converted to type c10::Half without overflow"
    );
    assert_eq!(
        err(of(DType::BF16, 3.3895317282046747e38)),
        "value cannot be converted to type c10::BFloat16 without overflow"
    );
    assert_eq!(
        err(of(DType::F32, 1e39)),
        "value cannot be converted to type float without overflow"
    );
    assert_eq!(
        err(of(DType::I64, 1e19)),
        "value cannot be converted to type int64_t without overflow"
    );
    assert_eq!(
        err(of(DType::I64, f64::NAN)),
        "value cannot be converted to type int64_t without overflow"
    );
    assert_eq!(
        of(DType::F16, 65504.0).unwrap().to_vec::<f16>().unwrap()[0].to_f64(),
        65504.0
    );
    assert!(of(DType::F16, f64::INFINITY).is_ok());
    // PyTorch truncates a float fill into an integer tensor.
    assert_eq!(
        of(DType::I64, 1.5).unwrap().to_vec::<i64>().unwrap(),
        [1, 1, 1]
    );
}

#[test]
fn likes_keep_shape_device_and_dtype() {
    let x = Tensor::<Cpu, f16>::zeros([2, 3], Cpu);
    let f = Tensor::full_like(&x, 7i64);
    assert_eq!((f.shape(), f.to_vec()), (&[2usize, 3][..], vec![7i64; 6]));
    let d = x.to_dyn();
    let fd = DynTensor::full_like(&d, 2.5).unwrap();
    assert_eq!(fd.dtype(), DType::F16);
    assert_eq!(fd.shape(), &[2, 3]);
    assert_eq!(DynTensor::zeros_like(&d).unwrap().dtype(), DType::F16);
    assert_eq!(DynTensor::ones_like(&d).unwrap().device(), d.device());
}

#[test]
fn the_tensor_literal_reads_its_shape_from_the_nesting() {
    let x = tensor!([[1f32, 2., 3.], [4., 5., 6.]], Cpu);
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(x.to_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y: Tensor<Cpu, f64> = tensor!([[[1.], [2.]]], Cpu);
    assert_eq!(y.shape(), &[1, 2, 1]);
    let b = tensor!([true, false], Cpu);
    assert_eq!(b.to_vec(), [true, false]);
    let s = tensor!(3i64, Cpu);
    assert_eq!((s.shape().len(), s.item()), (0, 3));
    let e: Tensor<Cpu, f32> = tensor!([[0f32; 0]; 0], Cpu);
    assert_eq!(e.shape(), &[0]);
}

#[test]
fn indexing_reads_like_pytorch_and_makes_views() {
    let x = randn(&[3, 4, 5], 13);
    let v = x.to_vec();
    let at = |a: usize, b: usize, c: usize| v[a * 20 + b * 5 + c];
    // x[1] and x[-1, :, 2]: single indices drop their dims.
    let r = x.i(1);
    assert_eq!(r.shape(), &[4, 5]);
    assert_eq!(r.to_vec(), v[20..40]);
    let r = x.i((-1, .., 2));
    assert_eq!(r.shape(), &[4]);
    assert_eq!(r.to_vec(), (0..4).map(|b| at(2, b, 2)).collect::<Vec<_>>());
    // x[:, 1:3, -2:] and clamped ends (x[:, 2:99]), an empty slice (x[2:1]).
    let r = x.i((.., 1..3, -2..));
    assert_eq!(r.shape(), &[3, 2, 2]);
    let mut want = Vec::new();
    for a in 0..3 {
        for b in 1..3 {
            for c in 3..5 {
                want.push(at(a, b, c));
            }
        }
    }
    assert_eq!(r.to_vec(), want);
    assert_eq!(x.i((.., 2..99)).shape(), &[3, 2, 5]);
    assert_eq!(x.i(IndexItem::Slice(Some(2), Some(1))).shape(), &[0, 4, 5]);
    assert_eq!(x.i((..2, ..=1)).shape(), &[2, 2, 5]);
    // A view: the same storage, no copy (writes through the source are seen).
    assert!(x.i((.., 1)).shares_storage_with(&x));
    // The dynamic front, and PyTorch's texts.
    let d = x.to_dyn();
    assert_eq!(
        d.i((0, 1..)).unwrap().to_vec::<f64>().unwrap(),
        x.i((0, 1..)).to_vec()
    );
    assert_eq!(
        err(x.try_i((0, 4))),
        "index 4 is out of bounds for dimension 1 with size 4"
    );
    assert_eq!(
        err(x.try_i((.., -6))),
        "index -6 is out of bounds for dimension 1 with size 4"
    );
    assert_eq!(
        err(d.i((0, 0, 0, 0))),
        "too many indices for tensor of dimension 3"
    );
    // The gradient lands in the places read.
    gradcheck(|t| t[0].try_i((1.., -1, 1..4)), std::slice::from_ref(&x)).unwrap();
}

/// Lines long enough for the fast paths (the lane-wise max/min of a contiguous run, `topk`'s
/// one-pass selection), with ties, NaNs at random places and strided lines, against the
/// references above; in f64, f32, f16 and i64.
#[test]
fn long_lines_take_the_fast_paths_and_agree_with_the_references() {
    let mut seed = 40;
    for shape in [[3usize, 517], [300, 3], [2, 2048]] {
        seed += 1;
        let mut v = rounded(&shape, seed).to_vec();
        // A NaN in some lines (early, late, two in one line), none in others.
        let last = v.len() - 1;
        for p in [5, last - 2, last - 40] {
            v[p] = f64::NAN;
        }
        let x = Tensor::from_vec(v.clone(), shape, Cpu);
        for d in 0..2 {
            let ls = lines(&shape, d);
            let first = |line: &[usize], better: fn(f64, f64) -> bool| {
                let vals: Vec<f64> = line.iter().map(|&p| v[p]).collect();
                // PyTorch's: the first NaN, else the first extreme.
                match vals.iter().position(|x| x.is_nan()) {
                    Some(i) => i,
                    None => {
                        (0..vals.len()).fold(0, |b, i| if better(vals[i], vals[b]) { i } else { b })
                    }
                }
            };
            let (mx, mn) = (x.max(d as isize), x.min(d as isize));
            let (x32, xh) = (x.to_dtype::<f32>(), x.to_dtype::<f16>());
            let (m32, mh) = (x32.max(d as isize), xh.min(d as isize));
            let xi = Tensor::from_vec(
                v.iter()
                    .map(|&a| if a.is_nan() { 9 } else { a as i64 })
                    .collect(),
                shape,
                Cpu,
            );
            let (mi, iv_all) = (xi.max(d as isize), xi.to_vec());
            let (mxi, mxv, mni) = (mx.indices.to_vec(), mx.values.to_vec(), mn.indices.to_vec());
            let (m32i, mhi) = (m32.indices.to_vec(), mh.indices.to_vec());
            let (mii, miv) = (mi.indices.to_vec(), mi.values.to_vec());
            for (o, line) in ls.iter().enumerate() {
                let (imax, imin) = (first(line, |a, b| a > b), first(line, |a, b| a < b));
                let what = format!("shape {shape:?} dim {d} line {o}");
                assert_eq!(mxi[o], imax as i64, "max {what}");
                assert_eq!(mni[o], imin as i64, "min {what}");
                assert_eq!(m32i[o], imax as i64, "f32 max {what}");
                assert_eq!(mhi[o], imin as i64, "f16 min {what}");
                let want = v[line[imax]];
                let got = mxv[o];
                assert!(got == want || (got.is_nan() && want.is_nan()), "{what}");
                let iv: Vec<i64> = line.iter().map(|&p| iv_all[p]).collect();
                let ibest = (0..iv.len()).fold(0, |b, i| if iv[i] > iv[b] { i } else { b });
                assert_eq!(mii[o], ibest as i64, "i64 max {what}");
                assert_eq!(miv[o], iv[ibest], "i64 max {what}");
            }
            // max() over everything, through the same runs.
            let all = x.max_all().item();
            assert!(all.is_nan(), "a NaN wins max_all");
            for descending in [true, false] {
                let k = 7.min(shape[d]);
                let t = x.topk(k, d as isize, descending, true);
                let t32 = x32.topk(k, d as isize, descending, true);
                let mut tshape = shape;
                tshape[d] = k;
                let (tv, ti, t32i) = (t.values.to_vec(), t.indices.to_vec(), t32.indices.to_vec());
                for (line, tline) in ls.iter().zip(lines(&tshape, d)) {
                    let vals: Vec<f64> = line.iter().map(|&p| v[p]).collect();
                    let order = reference_order(&vals, descending);
                    for r in 0..k.min(vals.len()) {
                        let what = format!("topk shape {shape:?} dim {d} desc {descending} r {r}");
                        assert_eq!(ti[tline[r]], order[r] as i64, "{what}");
                        assert_eq!(t32i[tline[r]], order[r] as i64, "f32 {what}");
                        let (g, w) = (tv[tline[r]], vals[order[r]]);
                        assert!(g == w || (g.is_nan() && w.is_nan()), "{what}");
                    }
                }
            }
        }
    }
}

/// Every element type sorts by one order (NaN above every number, all NaNs tied, `-0.0` tied
/// with `0.0`, infinities, ties by index), along contiguous and strided lines, for `sort`,
/// `topk` of a few (the one-pass path) and of many, both directions: against the comparator
/// reference on the values as the type holds them.
#[test]
fn every_element_type_sorts_nan_signed_zeros_and_ties_in_one_order() {
    let specials = [
        f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e-40,
        -1e-300,
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let shape = [3, 240];
    let data: Vec<f64> = (0..720)
        .map(|_| match next() % 4 {
            0 => specials[(next() % specials.len() as u64) as usize],
            _ => ((next() % 15) as f64 - 7.0) / 2.0,
        })
        .collect();
    let x = DynTensor::from_vec(data, shape, DynDevice::cpu()).unwrap();
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64] {
        let xt = x.to_dtype(dtype).unwrap();
        let v = xt.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        for (view, vshape, d) in [(xt.clone(), shape, 1usize), (xt.t().unwrap(), [240, 3], 0)] {
            let vv = view.to_dtype(DType::F64).unwrap().contiguous().unwrap();
            let vv = vv.to_vec::<f64>().unwrap();
            for descending in [false, true] {
                for k in [240, 5, 50] {
                    let s = if k == 240 {
                        view.sort(d as isize, descending).unwrap()
                    } else {
                        view.topk(k, d as isize, descending, true).unwrap()
                    };
                    let sv = s
                        .values
                        .to_dtype(DType::F64)
                        .unwrap()
                        .to_vec::<f64>()
                        .unwrap();
                    let si = s.indices.to_vec::<i64>().unwrap();
                    let mut kshape = vshape;
                    kshape[d] = k;
                    for (line, kline) in lines(&vshape, d).iter().zip(lines(&kshape, d)) {
                        let vals: Vec<f64> = line.iter().map(|&p| vv[p]).collect();
                        let order = reference_order(&vals, descending);
                        for r in 0..k {
                            let what = format!("{dtype:?} dim {d} desc {descending} k {k} at {r}");
                            assert_eq!(si[kline[r]], order[r] as i64, "{what}");
                            assert!(same(sv[kline[r]], vals[order[r]]), "{what}");
                        }
                    }
                }
            }
        }
        assert_eq!(v.len(), 720);
    }
}
