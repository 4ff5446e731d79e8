//! Creation (zeros, ones, full, arange, from_vec, *_like, rand, randn), host reads (to_vec,
//! item), bridges to `DynTensor`, and `Display` against PyTorch's printed forms.
//!
//! Only `random_numbers` touches the global random stream, so no other test in this binary can
//! move it between a `manual_seed` and the draws that follow.

#[path = "cpu_reference.rs"]
mod reference;

use devtype::prelude::*;
use devtype::Element;
use reference::*;

fn err<T>(r: Result<T, devtype::Error>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn constant_fills<E: Element>(value: E) {
    for shape in [
        vec![],
        vec![0],
        vec![1],
        vec![3, 0, 2],
        vec![2, 3],
        vec![257, 263],
    ] {
        let n: usize = shape.iter().product();
        let z = Tensor::<Cpu, E>::zeros(&shape, Cpu);
        assert_eq!(z.shape(), &shape[..]);
        assert_eq!(z.numel(), n);
        assert_eq!(z.dim(), shape.len());
        assert!(z.to_vec().iter().all(|&v| v == E::ZERO), "zeros {shape:?}");
        let o = Tensor::<Cpu, E>::ones(&shape, Cpu);
        assert!(o.to_vec().iter().all(|&v| v == E::ONE), "ones {shape:?}");
        let f = Tensor::<Cpu, E>::full(&shape, value, Cpu);
        assert_eq!(f.to_vec(), vec![value; n], "full {shape:?}");
        assert_eq!(Tensor::<Cpu, E>::zeros_like(&f).to_vec(), vec![E::ZERO; n]);
        assert_eq!(Tensor::<Cpu, E>::ones_like(&f).shape(), &shape[..]);
        // *_like keeps the element type, as PyTorch's; another one next to `f`:
        assert_eq!(Tensor::zeros_like(&f).dtype(), E::DTYPE);
        assert_eq!(
            Tensor::<Cpu, f64>::ones(f.shape(), f.device()).to_vec(),
            vec![1.0; n]
        );
        assert_eq!(f.device(), Cpu);
        assert_eq!(f.dtype(), E::DTYPE);
    }
    let s = Tensor::<Cpu, E>::scalar(value, Cpu);
    assert_eq!(s.shape(), &[] as &[usize]);
    assert_eq!(s.item(), value);
}

#[test]
fn constant_fills_of_every_element_type() {
    constant_fills::<f32>(-2.5);
    constant_fills::<f64>(1e300);
    constant_fills::<i64>(-7);
    constant_fills::<bool>(true);
}

#[test]
fn arange_counts_like_pytorch() {
    for n in [0usize, 1, 7, 70_000] {
        let a = Tensor::<Cpu>::arange(n, Cpu);
        assert_eq!(a.shape(), &[n]);
        assert_eq!(a.to_vec(), (0..n).map(|i| i as f32).collect::<Vec<_>>());
        let a64 = Tensor::<Cpu, f64>::arange(n, Cpu);
        assert_eq!(a64.to_vec(), (0..n).map(|i| i as f64).collect::<Vec<_>>());
        let ai = Tensor::<Cpu, i64>::arange(n, Cpu);
        assert_eq!(ai.to_vec(), (0..n as i64).collect::<Vec<_>>());
    }
    // torch.arange(start, end, step): ceil((end - start) / step) values start + i * step.
    for (start, end, step) in [
        (0.0, 1.0, 0.1),
        (1.0, 10.0, 2.0),
        (5.0, -5.0, -1.5),
        (0.5, 0.5, 1.0),
        (-1.0, 1.0, 0.25),
    ] {
        let t = Tensor::<Cpu, f64>::arange_step(start, end, step, Cpu);
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        let want: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
        assert_eq!(t.shape(), &[n], "arange({start}, {end}, {step})");
        assert_close(
            &to_ref(&t),
            &Ref::new(&[n], want),
            1e-15,
            1.0,
            &format!("arange({start}, {end}, {step})"),
        );
    }
    assert!(Tensor::<Cpu>::try_arange_step(0.0, 1.0, 0.0, Cpu).is_err());
    assert!(Tensor::<Cpu>::try_arange_step(0.0, f64::INFINITY, 1.0, Cpu).is_err());
}

#[test]
fn from_vec_checks_the_length_and_keeps_the_order() {
    let mut rng = Rng::new("from_vec");
    let r = Ref::random(&mut rng, &[3, 4, 5], -1.0, 1.0);
    let t = tensor::<f64>(&r);
    assert_eq!(to_ref(&t), r);
    assert_eq!(
        err(Tensor::<Cpu>::try_from_vec(vec![1.0; 5], [2, 3], Cpu)),
        "from_vec: 5 values cannot fill a tensor of shape [2, 3] (6 elements)"
    );
    assert_eq!(
        err(Tensor::<Cpu>::try_from_vec(vec![1.0; 2], [], Cpu)),
        "from_vec: 2 values cannot fill a tensor of shape [] (1 elements)"
    );
    assert!(Tensor::<Cpu>::try_from_vec(vec![], [0, 4], Cpu).is_ok());
    assert_eq!(
        err(Tensor::<Cpu>::try_zeros([1; 9], Cpu)),
        "devtype supports tensors of at most 8 dimensions, got 9"
    );
    assert_eq!(Tensor::<Cpu>::zeros([1; 8], Cpu).dim(), 8);
    let b = Tensor::from_vec(vec![true, false, true], [3], Cpu);
    assert_eq!(b.to_vec(), vec![true, false, true]);
    let i = Tensor::from_vec(vec![i64::MIN, 0, i64::MAX], [3], Cpu);
    assert_eq!(i.to_vec(), vec![i64::MIN, 0, i64::MAX]);
}

#[test]
fn item_and_to_vec() {
    assert_eq!(Tensor::<Cpu>::full([1, 1, 1], 2.5, Cpu).item(), 2.5);
    assert_eq!(Tensor::<Cpu, i64>::scalar(-3, Cpu).item(), -3);
    assert_eq!(
        err(Tensor::<Cpu>::zeros([2], Cpu).try_item()),
        "a Tensor with 2 elements cannot be converted to Scalar"
    );
    assert_eq!(
        err(Tensor::<Cpu>::zeros([2, 3], Cpu).try_item()),
        "a Tensor with 6 elements cannot be converted to Scalar"
    );
    assert_eq!(
        err(Tensor::<Cpu>::zeros([0], Cpu).try_item()),
        "a Tensor with 0 elements cannot be converted to Scalar"
    );
    let p = std::panic::catch_unwind(|| Tensor::<Cpu>::zeros([2], Cpu).item())
        .expect_err("item panics");
    assert_eq!(
        p.downcast_ref::<String>().map(String::as_str),
        Some("a Tensor with 2 elements cannot be converted to Scalar")
    );
    // item of a one-element view.
    let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
    assert_eq!(m.narrow(0, 1, 1).narrow(1, 1, 1).item(), 4.0);
    assert_eq!(m.t().to_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    // Dynamic reads check the element type.
    let d = m.to_dyn();
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        d.to_vec::<f64>().unwrap_err().to_string(),
        "expected scalar type Double but found Float"
    );
    assert_eq!(
        d.item::<f32>().unwrap_err().to_string(),
        "a Tensor with 4 elements cannot be converted to Scalar"
    );
}

#[test]
fn moves_and_bridges() {
    let x = Tensor::<Cpu>::ones([2, 3], Cpu);
    let y = x.to(Cpu);
    assert!(
        y.shares_storage_with(&x),
        "to the same device is a handle to the same storage"
    );
    let d = x.clone().into_dyn();
    assert_eq!(d.device(), DynDevice::cpu());
    assert_eq!(d.dtype(), DType::F32);
    assert_eq!(d.shape(), &[2, 3]);
    let back: Tensor<Cpu> = d.clone().try_into_typed::<Cpu>().unwrap();
    assert!(back.shares_storage_with(&x));
    let back: Tensor<Cpu, f32> = Tensor::try_from(d.clone()).unwrap();
    assert_eq!(back.to_vec(), x.to_vec());
    assert_eq!(
        d.clone()
            .try_into_tensor::<Cpu, f64>()
            .unwrap_err()
            .to_string(),
        "expected scalar type Double but found Float"
    );
    assert_eq!(
        d.clone()
            .try_into_typed::<Cuda<0>>()
            .unwrap_err()
            .to_string(),
        "cannot view a tensor on cpu as Tensor<Cuda<0>>, a tensor on cuda:0: move it first with `.to(...)`"
    );
    let dd: DynTensor = x.clone().into();
    assert_eq!(
        dd.to(DynDevice::cpu()).unwrap().to_vec::<f32>().unwrap(),
        x.to_vec()
    );
    let f64s: Tensor<Cpu, f64> = x.to_dtype();
    assert_eq!(f64s.to_dyn().dtype(), DType::F64);
}

/// Mean and variance of `values`.
fn moments(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var)
}

/// Correlation of neighbours: near 0 for independent draws.
fn lag_one_correlation(values: &[f64]) -> f64 {
    let (mean, var) = moments(values);
    let n = values.len() - 1;
    values
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / n as f64
        / var
}

/// The only test of this binary that draws from the global stream (see the file's doc).
#[test]
fn random_numbers() {
    const N: usize = 100_000; // above the parallel threshold
    let sigma = |var: f64| (var / N as f64).sqrt();
    // Uniform: in [0, 1), mean 1/2, variance 1/12 (tolerances are 6 standard errors).
    devtype::manual_seed(1234);
    let u: Vec<f64> = Tensor::<Cpu, f64>::zeros([N], Cpu).rand_like().to_vec();
    assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
    let (m, v) = moments(&u);
    assert!(
        (m - 0.5).abs() < 6.0 * sigma(1.0 / 12.0),
        "uniform mean {m}"
    );
    // Var of the sample variance of U(0,1) is (1/80 - 1/144) / N.
    assert!(
        (v - 1.0 / 12.0).abs() < 6.0 * sigma(1.0 / 80.0 - 1.0 / 144.0),
        "uniform variance {v}"
    );
    assert!(
        lag_one_correlation(&u).abs() < 6.0 / (N as f64).sqrt(),
        "uniform draws are correlated"
    );
    let below_tenth = u.iter().filter(|&&x| x < 0.1).count() as f64 / N as f64;
    assert!(
        (below_tenth - 0.1).abs() < 6.0 * sigma(0.09),
        "uniform P(x < 0.1) = {below_tenth}"
    );
    // Normal: mean 0, variance 1, 68.27% within one sigma, 95.45% within two.
    let z: Vec<f64> = Tensor::<Cpu, f64>::zeros([N], Cpu).randn_like().to_vec();
    let (m, v) = moments(&z);
    assert!(m.abs() < 6.0 * sigma(1.0), "normal mean {m}");
    assert!((v - 1.0).abs() < 6.0 * sigma(2.0), "normal variance {v}");
    let within = |k: f64| z.iter().filter(|x| x.abs() < k).count() as f64 / N as f64;
    assert!(
        (within(1.0) - 0.682_689).abs() < 6.0 * sigma(0.2167),
        "P(|z| < 1) = {}",
        within(1.0)
    );
    assert!(
        (within(2.0) - 0.954_500).abs() < 6.0 * sigma(0.0434),
        "P(|z| < 2) = {}",
        within(2.0)
    );
    assert!(
        lag_one_correlation(&z).abs() < 6.0 / (N as f64).sqrt(),
        "normal draws are correlated"
    );
    assert!(z.iter().all(|x| x.is_finite()));
    // f32 draws too, in range and with the right mean.
    let u32s: Vec<f32> = Tensor::<Cpu>::rand([N], Cpu).to_vec();
    assert!(u32s.iter().all(|&v| (0.0..1.0).contains(&v)));
    let (m, _) = moments(&u32s.iter().map(|&x| x as f64).collect::<Vec<_>>());
    assert!(
        (m - 0.5).abs() < 6.0 * sigma(1.0 / 12.0),
        "f32 uniform mean {m}"
    );

    // Same seed, same values; the stream moves on between calls; other seeds differ.
    devtype::manual_seed(7);
    let a = Tensor::<Cpu>::randn([5, 7], Cpu).to_vec();
    let b = Tensor::<Cpu>::randn([5, 7], Cpu).to_vec();
    devtype::manual_seed(7);
    assert_eq!(
        Tensor::<Cpu>::randn([5, 7], Cpu).to_vec(),
        a,
        "manual_seed resets the stream"
    );
    assert_eq!(Tensor::<Cpu>::randn([5, 7], Cpu).to_vec(), b);
    assert_ne!(a, b, "successive draws differ");
    devtype::manual_seed(8);
    assert_ne!(
        Tensor::<Cpu>::randn([5, 7], Cpu).to_vec(),
        a,
        "another seed, other values"
    );
    devtype::manual_seed(7);
    let r1 = Tensor::<Cpu>::rand([3], Cpu).to_vec();
    devtype::manual_seed(7);
    let r2 = DynTensor::rand([3], DynDevice::cpu())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(r1, r2, "typed and dynamic draw the same stream");
    devtype::manual_seed(7);
    let big1 = Tensor::<Cpu>::rand([70_001], Cpu).to_vec();
    devtype::manual_seed(7);
    assert_eq!(
        Tensor::<Cpu>::rand([70_001], Cpu).to_vec(),
        big1,
        "parallel draws are reproducible"
    );
    // Shapes that hold nothing or one value.
    assert_eq!(Tensor::<Cpu>::rand([0, 3], Cpu).shape(), &[0, 3]);
    assert!((0.0..1.0).contains(&Tensor::<Cpu>::rand([], Cpu).item()));
    assert!(Tensor::<Cpu, f64>::zeros([], Cpu)
        .randn_like()
        .item()
        .is_finite());
    assert_eq!(
        DynTensor::randn([2, 0], DynDevice::cpu()).unwrap().shape(),
        &[2, 0]
    );
}

#[test]
fn display_matches_pytorch() {
    let show = |v: Vec<f32>, shape: &[usize]| Tensor::from_vec(v, shape, Cpu).to_string();
    assert_eq!(show(vec![1.0, 2.0, 3.0], &[3]), "tensor([1., 2., 3.])");
    assert_eq!(
        show(vec![1.5, -2.25, 3.0, 4.0], &[2, 2]),
        "tensor([[ 1.5000, -2.2500],\n        [ 3.0000,  4.0000]])"
    );
    assert_eq!(show(vec![3.0], &[]), "tensor(3.)");
    assert_eq!(show(vec![], &[0]), "tensor([])");
    assert_eq!(show(vec![], &[2, 0]), "tensor([], size=(2, 0))");
    assert_eq!(show(vec![-1.0, 2.0], &[2]), "tensor([-1.,  2.])");
    assert_eq!(show(vec![-0.0], &[1]), "tensor([-0.])");
    assert_eq!(show(vec![0.0, 0.0], &[2]), "tensor([0., 0.])");
    assert_eq!(show(vec![0.1, 0.25], &[2]), "tensor([0.1000, 0.2500])");
    assert_eq!(show(vec![10.5, -0.25], &[2]), "tensor([10.5000, -0.2500])");
    assert_eq!(
        show(vec![1e-5, 1.0], &[2]),
        "tensor([1.0000e-05, 1.0000e+00])"
    );
    assert_eq!(show(vec![123456789.0], &[1]), "tensor([1.2346e+08])");
    assert_eq!(show(vec![1.5, f32::NAN], &[2]), "tensor([1.5000,    nan])");
    assert_eq!(
        show((0..30).map(|i| i as f32).collect(), &[30]),
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n        28., 29.])"
    );
    let row = "[0., 0., 0.,  ..., 0., 0., 0.]";
    let want = format!(
        "tensor([{row},\n        {row},\n        {row},\n        ...,\n        {row},\n        {row},\n        {row}])"
    );
    assert_eq!(Tensor::<Cpu>::zeros([100, 100], Cpu).to_string(), want);
    assert_eq!(
        Tensor::from_vec(vec![1.0f64, 2.0], [2], Cpu).to_string(),
        "tensor([1., 2.], dtype=torch.float64)"
    );
    assert_eq!(
        Tensor::<Cpu, f64>::zeros([0], Cpu).to_string(),
        "tensor([], dtype=torch.float64)"
    );
    assert_eq!(
        Tensor::from_vec(vec![1i64, 2, 3, 4], [2, 2], Cpu).to_string(),
        "tensor([[1, 2],\n        [3, 4]])"
    );
    assert_eq!(Tensor::<Cpu, i64>::scalar(5, Cpu).to_string(), "tensor(5)");
    assert_eq!(
        Tensor::<Cpu, i64>::zeros([0], Cpu).to_string(),
        "tensor([], dtype=torch.int64)"
    );
    assert_eq!(
        Tensor::from_vec(vec![true, false], [2], Cpu).to_string(),
        "tensor([ True, False])"
    );
    // A view prints its own elements, in its own order.
    let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], Cpu);
    assert_eq!(
        m.t().to_string(),
        "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])"
    );
    assert_eq!(format!("{:?}", m.t()), m.t().to_string());
    assert_eq!(m.to_dyn().to_string(), m.to_string());
}

#[test]
fn display_sizes_columns_by_the_finite_numbers_only() {
    // PyTorch's `_Formatter` takes its width from the finite non-zero values; `nan`/`inf` are
    // padded to it but never widen it.
    let show = |v: Vec<f32>| Tensor::from_vec(v.clone(), [v.len()], Cpu).to_string();
    assert_eq!(
        show(vec![1.0, f32::NAN, f32::INFINITY]),
        "tensor([1., nan, inf])"
    );
    assert_eq!(show(vec![2.0, f32::NEG_INFINITY]), "tensor([2., -inf])");
    assert_eq!(show(vec![f32::NAN]), "tensor([nan])");
}
