//! Shape ops of the typed front against the f64 reference: reshape, view, transpose, t, permute,
//! squeeze, unsqueeze, flatten, narrow, expand, contiguous; which of them share storage; their
//! errors with PyTorch's texts; and random chains of views read back through `to_vec`.

#[path = "cpu_reference.rs"]
mod reference;

use devtype::prelude::*;
use reference::*;

fn random_tensor(rng: &mut Rng, shape: &[usize]) -> (Tensor<Cpu, f64>, Ref) {
    let r = Ref::random(rng, shape, -10.0, 10.0);
    (tensor::<f64>(&r), r)
}

fn err<T>(r: Result<T, devtype::Error>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn transpose_and_permute_move_values_like_the_reference() {
    let mut rng = Rng::new("transpose_and_permute");
    for shape in [
        vec![2, 3],
        vec![1, 5],
        vec![4, 1, 3],
        vec![2, 3, 4, 5],
        vec![3, 1, 2, 1, 4],
        vec![263, 257],
    ] {
        let (t, r) = random_tensor(&mut rng, &shape);
        let rank = shape.len();
        for d0 in 0..rank {
            for d1 in 0..rank {
                let want = r.transpose(d0, d1);
                assert_exact(
                    &to_ref(&t.transpose(d0 as isize, d1 as isize)),
                    &want,
                    &format!("transpose({d0}, {d1}) of {shape:?}"),
                );
                let (n0, n1) = (d0 as isize - rank as isize, d1 as isize - rank as isize);
                assert_exact(
                    &to_ref(&t.transpose(n0, n1)),
                    &want,
                    &format!("transpose({n0}, {n1}) of {shape:?}"),
                );
                assert!(t
                    .transpose(d0 as isize, d1 as isize)
                    .shares_storage_with(&t));
            }
        }
        // Random permutations, with negative dims now and then.
        for _ in 0..10 {
            let mut order: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                order.swap(i, rng.below(i + 1));
            }
            let o: Vec<isize> = order
                .iter()
                .map(|&d| {
                    if rng.below(2) == 0 {
                        d as isize
                    } else {
                        d as isize - rank as isize
                    }
                })
                .collect();
            let p = t.permute(&o);
            assert_exact(
                &to_ref(&p),
                &r.permute(&order),
                &format!("permute({o:?}) of {shape:?}"),
            );
            assert!(p.shares_storage_with(&t));
            let c = p.contiguous();
            assert!(c.is_contiguous());
            assert_exact(
                &to_ref(&c),
                &r.permute(&order),
                "contiguous of a permutation",
            );
        }
    }
    let m = Tensor::<Cpu>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], Cpu);
    assert_eq!(m.t().to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(m.t().strides(), &[1, 3]);
    assert!(!m.t().is_contiguous());
    let v = Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu);
    assert_eq!(v.t().to_vec(), vec![1.0, 2.0]);
    // A 1-element result is contiguous with stride 1, whatever its operands' strides (the
    // short path of tiny ops copies an operand's layout only when it is that one).
    let one = Tensor::<Cpu>::scalar(2.0, Cpu).expand(&[1]);
    assert_eq!(one.strides(), &[0]);
    assert_eq!((&one + &one).strides(), &[1]);
    assert_eq!((&one + &one).to_vec(), vec![4.0]);
    assert_eq!((&v.narrow(0, 0, 1) * &one).strides(), &[1]);
    assert_eq!(
        err(Tensor::<Cpu>::zeros([2, 2, 2], Cpu).try_t()),
        "t() expects a tensor with <= 2 dimensions, but self is 3D"
    );
    // 0-dim: transpose(0, -1) is the tensor itself.
    let s = Tensor::<Cpu>::scalar(4.0, Cpu);
    assert_eq!(s.transpose(0, -1).item(), 4.0);
    assert_eq!(s.permute(&[]).item(), 4.0);
}

#[test]
fn shape_errors_have_pytorchs_text() {
    let t = Tensor::<Cpu>::zeros([2, 3, 4], Cpu);
    assert_eq!(
        err(t.try_transpose(0, 3)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(t.try_transpose(-4, 0)),
        "Dimension out of range (expected to be in range of [-3, 2], but got -4)"
    );
    assert_eq!(
        err(t.try_permute(&[0, 1])),
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2"
    );
    assert_eq!(
        err(t.try_permute(&[0, 1, 1])),
        "permute(): duplicate dims are not allowed."
    );
    assert_eq!(
        err(t.try_permute(&[0, 1, -2])),
        "permute(): duplicate dims are not allowed."
    );
    assert_eq!(
        err(t.try_permute(&[0, 1, 3])),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(t.try_unsqueeze(4)),
        "Dimension out of range (expected to be in range of [-4, 3], but got 4)"
    );
    assert_eq!(
        err(t.try_unsqueeze(-5)),
        "Dimension out of range (expected to be in range of [-4, 3], but got -5)"
    );
    assert_eq!(
        err(t.try_squeeze(3)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(t.try_flatten(2, 1)),
        "flatten() has invalid args: start_dim cannot come after end_dim"
    );
    assert_eq!(
        err(t.try_flatten(0, 3)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(t.try_narrow(1, 2, 2)),
        "start (2) + length (2) exceeds dimension size (3)."
    );
    assert_eq!(
        err(t.try_narrow(2, 5, 0)),
        "start out of range (expected to be in range of [-4, 4], but got 5)"
    );
    assert_eq!(
        err(t.try_narrow(2, 4, 1)),
        "start (4) + length (1) exceeds dimension size (4)."
    );
    assert_eq!(
        err(t.try_narrow(3, 0, 1)),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    assert_eq!(
        err(t.try_reshape(&[5, 5])),
        "shape '[5, 5]' is invalid for input of size 24"
    );
    assert_eq!(
        err(t.try_reshape(&[-1, 5])),
        "shape '[-1, 5]' is invalid for input of size 24"
    );
    assert_eq!(
        err(t.try_view(&[7])),
        "shape '[7]' is invalid for input of size 24"
    );
    assert_eq!(
        err(t.try_reshape(&[-1, -1])),
        "only one dimension can be inferred"
    );
    assert_eq!(
        err(t.try_expand(&[2, 5, 4])),
        "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 5, 4].  Tensor sizes: [2, 3, 4]"
    );
    let s = Tensor::<Cpu>::scalar(1.0, Cpu);
    assert_eq!(
        err(s.try_narrow(0, 0, 1)),
        "narrow() cannot be applied to a 0-dim tensor."
    );
    assert_eq!(
        err(s.try_flatten(0, 1)),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    assert_eq!(
        err(s.try_transpose(0, 1)),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    assert_eq!(
        err(s.try_sum_dim(1)),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    // Sizes whose product overflows are refused, not multiplied.
    assert!(t.try_reshape(&[isize::MAX, isize::MAX]).is_err());
    assert!(t.try_view(&[0, isize::MAX, 4]).is_err());
}

#[test]
fn view_of_a_transposed_tensor_fails_with_pytorchs_text() {
    let t = Tensor::<Cpu>::zeros([2, 3], Cpu).t();
    assert_eq!(
        err(t.try_view(&[6])),
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
    let r = std::panic::catch_unwind(|| t.view(&[-1])).expect_err("view panics");
    assert_eq!(
        r.downcast_ref::<String>().map(String::as_str),
        Some("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    );
    // reshape copies instead, with the right order.
    assert_eq!(t.reshape(&[6]).to_vec(), t.contiguous().to_vec());
    assert!(!t.reshape(&[6]).shares_storage_with(&t));
}

#[test]
fn views_where_strides_allow_them() {
    let mut rng = Rng::new("views_where_strides_allow_them");
    let (t, r) = random_tensor(&mut rng, &[4, 6]);
    // Rows of a narrowed tensor are still contiguous inside: splitting the last dim works.
    let n = t.narrow(1, 1, 4);
    let rn = r.narrow(1, 1, 4);
    let v = n.view(&[4, 2, 2]);
    assert!(v.shares_storage_with(&t));
    assert_exact(
        &to_ref(&v),
        &rn.reshape(&[4, 2, 2]),
        "view [4, 2, 2] of narrow",
    );
    assert!(n.try_view(&[16]).is_err());
    // A narrow along dim 0 stays contiguous.
    let rows = t.narrow(0, 1, 2);
    assert!(rows.is_contiguous());
    assert_exact(
        &to_ref(&rows.view(&[12])),
        &r.narrow(0, 1, 2).reshape(&[12]),
        "view of row block",
    );
    // Inserting size-1 dims into a transpose is a view.
    let tt = t.t();
    let v = tt.view(&[6, 1, 4]);
    assert!(v.shares_storage_with(&t));
    assert_exact(
        &to_ref(&v),
        &r.transpose(0, 1).reshape(&[6, 1, 4]),
        "view with a size-1 dim of a transpose",
    );
    assert_exact(
        &to_ref(&tt.view(&[1, 6, 4])),
        &r.transpose(0, 1).reshape(&[1, 6, 4]),
        "leading 1",
    );
    // Merging dims that are contiguous among themselves in a permuted tensor.
    let (t3, r3) = random_tensor(&mut rng, &[2, 3, 4]);
    let p = t3.permute(&[2, 0, 1]); // [4, 2, 3]; dims 1 and 2 stay contiguous together
    let v = p.view(&[4, 6]);
    assert!(v.shares_storage_with(&t3));
    assert_exact(
        &to_ref(&v),
        &r3.permute(&[2, 0, 1]).reshape(&[4, 6]),
        "merge contiguous pair",
    );
    assert!(p.try_view(&[8, 3]).is_err());
    // Reshape of a contiguous tensor is a view; of a transposed one, a copy.
    assert!(t.reshape(&[3, 8]).shares_storage_with(&t));
    assert!(t.reshape(&[-1]).shares_storage_with(&t));
    assert!(!tt.reshape(&[24]).shares_storage_with(&t));
}

#[test]
fn reshape_flatten_squeeze_unsqueeze_keep_row_major_order() {
    let mut rng = Rng::new("reshape_flatten_squeeze_unsqueeze");
    let (t, r) = random_tensor(&mut rng, &[2, 1, 3, 4]);
    for shape in [
        vec![24],
        vec![4, 6],
        vec![2, 3, 4],
        vec![1, 24, 1],
        vec![2, 2, 2, 3],
    ] {
        let s: Vec<isize> = shape.iter().map(|&x| x as isize).collect();
        assert_exact(
            &to_ref(&t.reshape(&s)),
            &r.reshape(&shape),
            &format!("reshape {shape:?}"),
        );
        assert_exact(
            &to_ref(&t.view(&s)),
            &r.reshape(&shape),
            &format!("view {shape:?}"),
        );
        // With one size inferred.
        for at in 0..s.len() {
            let mut inferred = s.clone();
            inferred[at] = -1;
            assert_exact(
                &to_ref(&t.reshape(&inferred)),
                &r.reshape(&shape),
                &format!("reshape {inferred:?}"),
            );
        }
    }
    let one = Tensor::<Cpu>::from_vec(vec![3.5], [1, 1], Cpu);
    assert_eq!(one.reshape(&[]).shape(), &[] as &[usize]);
    assert_eq!(one.reshape(&[]).item(), 3.5);
    let empty = Tensor::<Cpu>::zeros([0, 3], Cpu);
    assert_eq!(empty.reshape(&[3, 0, 5]).shape(), &[3, 0, 5]);
    assert_eq!(empty.reshape(&[-1]).shape(), &[0]);
    assert!(
        empty.try_reshape(&[-1, 0]).is_err(),
        "-1 with a 0 size is ambiguous"
    );
    // flatten
    for (s, e, want) in [
        (0isize, -1isize, vec![24]),
        (1, 2, vec![2, 3, 4]),
        (2, 3, vec![2, 1, 12]),
        (-2, -1, vec![2, 1, 12]),
        (1, 1, vec![2, 1, 3, 4]),
    ] {
        let f = t.flatten(s, e);
        assert_exact(
            &to_ref(&f),
            &r.reshape(&want),
            &format!("flatten({s}, {e})"),
        );
    }
    assert_eq!(Tensor::<Cpu>::scalar(2.0, Cpu).flatten(0, -1).shape(), &[1]);
    // squeeze / unsqueeze
    assert_exact(&to_ref(&t.squeeze(1)), &r.reshape(&[2, 3, 4]), "squeeze(1)");
    assert_exact(
        &to_ref(&t.squeeze(-3)),
        &r.reshape(&[2, 3, 4]),
        "squeeze(-3)",
    );
    assert_eq!(t.squeeze(0).shape(), &[2, 1, 3, 4], "a dim of size 2 stays");
    for d in 0..=4isize {
        let mut shape = vec![2, 1, 3, 4];
        shape.insert(d as usize, 1);
        assert_exact(
            &to_ref(&t.unsqueeze(d)),
            &r.reshape(&shape),
            &format!("unsqueeze({d})"),
        );
        assert_exact(
            &to_ref(&t.unsqueeze(d - 5)),
            &r.reshape(&shape),
            &format!("unsqueeze({})", d - 5),
        );
        assert!(t.unsqueeze(d).shares_storage_with(&t));
    }
    let s = Tensor::<Cpu>::scalar(1.5, Cpu);
    assert_eq!(s.squeeze(0).shape(), &[] as &[usize]);
    assert_eq!(s.unsqueeze(0).shape(), &[1]);
    assert_eq!(s.unsqueeze(-1).to_vec(), vec![1.5]);
    // unsqueeze of a transposed tensor keeps its order.
    let (m, rm) = random_tensor(&mut rng, &[3, 5]);
    assert_exact(
        &to_ref(&m.t().unsqueeze(1)),
        &rm.transpose(0, 1).reshape(&[5, 1, 3]),
        "unsqueeze of transpose",
    );
    assert_exact(
        &to_ref(&m.t().unsqueeze(2)),
        &rm.transpose(0, 1).reshape(&[5, 3, 1]),
        "unsqueeze(last) of transpose",
    );
    assert_exact(
        &to_ref(&m.t().flatten(0, 1)),
        &rm.transpose(0, 1).reshape(&[15]),
        "flatten of transpose copies",
    );
}

#[test]
fn narrow_and_expand() {
    let mut rng = Rng::new("narrow_and_expand");
    let (t, r) = random_tensor(&mut rng, &[5, 6, 7]);
    for d in 0..3 {
        let size = r.shape[d];
        for (start, len) in [
            (0, size),
            (0, 1),
            (size - 1, 1),
            (1, size - 2),
            (2, 0),
            (size, 0),
        ] {
            let n = t.narrow(d as isize, start, len);
            assert_exact(
                &to_ref(&n),
                &r.narrow(d, start, len),
                &format!("narrow({d}, {start}, {len})"),
            );
            assert!(n.shares_storage_with(&t));
            // Narrow of a narrow.
            if len >= 2 {
                let nn = n.narrow(d as isize - 3, 1, len - 1);
                assert_exact(
                    &to_ref(&nn),
                    &r.narrow(d, start + 1, len - 1),
                    "narrow of narrow",
                );
            }
        }
    }
    for (from, to) in [
        (vec![1, 3], vec![4, 3]),
        (vec![3], vec![2, 3]),
        (vec![3, 1], vec![3, 4]),
        (vec![1], vec![2, 2, 2]),
        (vec![], vec![3, 2]),
        (vec![2, 1, 3], vec![2, 4, 3]),
    ] {
        let (t, r) = random_tensor(&mut rng, &from);
        let e = t.expand(&to.iter().map(|&s| s as isize).collect::<Vec<_>>());
        assert_exact(
            &to_ref(&e),
            &r.expand(&to),
            &format!("expand {from:?} -> {to:?}"),
        );
        assert!(e.shares_storage_with(&t));
        assert_exact(
            &to_ref(&e.contiguous()),
            &r.expand(&to),
            "contiguous of expand",
        );
        assert_exact(
            &to_ref(&e.reshape(&[-1])),
            &r.expand(&to).reshape(&[to.iter().product()]),
            "reshape of expand",
        );
    }
    assert!(
        Tensor::<Cpu>::zeros([2, 3], Cpu).try_expand(&[3]).is_err(),
        "fewer sizes than dims"
    );
}

#[test]
fn contiguous_copies_only_when_needed() {
    let mut rng = Rng::new("contiguous_copies_only_when_needed");
    let (t, r) = random_tensor(&mut rng, &[263, 257]);
    let c = t.contiguous();
    assert!(
        c.shares_storage_with(&t),
        "already contiguous: same storage"
    );
    let tt = t.t();
    let c = tt.contiguous();
    assert!(c.is_contiguous() && !c.shares_storage_with(&t));
    assert_eq!(c.strides(), &[263, 1]);
    assert_exact(
        &to_ref(&c),
        &r.transpose(0, 1),
        "contiguous of a big transpose (parallel copy)",
    );
    assert_exact(&to_ref(&t), &r, "the original is untouched");
}

#[test]
fn random_chains_of_views_read_back_like_the_reference() {
    let mut rng = Rng::new("random_chains_of_views");
    for _ in 0..300 {
        let rank = 1 + rng.below(4);
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
        let (mut t, mut r) = random_tensor(&mut rng, &shape);
        let mut steps = Vec::new();
        for _ in 0..6 {
            let rank = r.shape.len();
            match rng.below(7) {
                0 if rank >= 2 => {
                    let (a, b) = (rng.below(rank), rng.below(rank));
                    t = t.transpose(a as isize, b as isize);
                    r = r.transpose(a, b);
                    steps.push(format!("transpose({a}, {b})"));
                }
                1 if rank >= 1 => {
                    let d = rng.below(rank);
                    let size = r.shape[d];
                    // Never empty here (empty tensors have their own test).
                    let start = rng.below(size);
                    let len = 1 + rng.below(size - start);
                    t = t.narrow(d as isize, start, len);
                    r = r.narrow(d, start, len);
                    steps.push(format!("narrow({d}, {start}, {len})"));
                }
                2 if rank < 6 => {
                    let d = rng.below(rank + 1);
                    t = t.unsqueeze(d as isize);
                    let mut s = r.shape.clone();
                    s.insert(d, 1);
                    r = r.reshape(&s);
                    steps.push(format!("unsqueeze({d})"));
                }
                3 if rank >= 1 => {
                    let mut order: Vec<usize> = (0..rank).collect();
                    for i in (1..rank).rev() {
                        order.swap(i, rng.below(i + 1));
                    }
                    t = t.permute(&order.iter().map(|&d| d as isize).collect::<Vec<_>>());
                    r = r.permute(&order);
                    steps.push(format!("permute({order:?})"));
                }
                4 => {
                    let n = r.numel();
                    let s = if n > 0 && n % 2 == 0 {
                        vec![2, n / 2]
                    } else {
                        vec![n]
                    };
                    t = t.reshape(&s.iter().map(|&x| x as isize).collect::<Vec<_>>());
                    r = r.reshape(&s);
                    steps.push(format!("reshape({s:?})"));
                }
                5 if rank >= 1 => {
                    let d = rng.below(rank);
                    if r.shape[d] == 1 {
                        let mut to = r.shape.clone();
                        to[d] = 3;
                        t = t.expand(&to.iter().map(|&s| s as isize).collect::<Vec<_>>());
                        r = r.expand(&to);
                        steps.push(format!("expand({to:?})"));
                    }
                }
                _ if rank >= 1 => {
                    let d = rng.below(rank);
                    t = t.squeeze(d as isize);
                    if r.shape[d] == 1 {
                        let mut s = r.shape.clone();
                        s.remove(d);
                        r = r.reshape(&s);
                    }
                    steps.push(format!("squeeze({d})"));
                }
                _ => {}
            }
            assert_exact(
                &to_ref(&t),
                &r,
                &format!("{shape:?} then {}", steps.join(".")),
            );
        }
        // Whatever the layout, an op over it agrees with the reference.
        let doubled = &t + &t;
        assert_exact(
            &to_ref(&doubled),
            &r.map(|v| v + v),
            &format!("t + t after {}", steps.join(".")),
        );
        assert_exact(&to_ref(&t.contiguous()), &r, "contiguous at the end");
    }
}

#[test]
fn views_of_empty_tensors() {
    let e = Tensor::<Cpu>::zeros([0, 3], Cpu);
    assert_eq!(e.t().shape(), &[3, 0]);
    assert_eq!(e.t().to_vec(), Vec::<f32>::new());
    assert_eq!(e.t().contiguous().shape(), &[3, 0]);
    assert_eq!(e.permute(&[1, 0]).reshape(&[-1]).shape(), &[0]);
    let e3 = Tensor::<Cpu>::zeros([2, 0, 4], Cpu);
    assert_eq!(e3.transpose(0, 2).to_vec(), Vec::<f32>::new());
    assert_eq!((&e3.transpose(0, 2) + 1.0).shape(), &[4, 0, 2]);
    assert_eq!(e3.transpose(0, 2).sum_dim(0).shape(), &[0, 2]);
    assert_eq!(e3.softmax(-1).shape(), &[2, 0, 4]);
    assert_eq!(e3.softmax(0).shape(), &[2, 0, 4]);
    // A narrow to nothing of a tensor that has no storage.
    let n = e3.narrow(0, 1, 1);
    assert_eq!(n.shape(), &[1, 0, 4]);
    assert_eq!(n.to_vec(), Vec::<f32>::new());
    assert_eq!(n.contiguous().numel(), 0);
    let x = Tensor::<Cpu>::ones([1, 1], Cpu).expand(&[0, 5]);
    assert_eq!(x.contiguous().shape(), &[0, 5]);
    assert_eq!(x.to_vec(), Vec::<f32>::new());
}
