// Every checked op family on static shapes, each result shape inferred (the `let _: &T` lines
// only state what the compiler found): broadcasting, matmul/bmm/linear, reshape/view/flatten
// (3 x 32 x 32 = 3072 in the type), transpose/permute, cat/stack, reductions with and without
// keepdim, index_select, softmax and cross_entropy.
use devtype::prelude::*;
use devtype::shaped::{Axis, Dyn, Shaped, C};

type S<T> = Shaped<Cpu, f32, T>;

fn main() {
    let images: S<(Dyn, C<3>, C<32>, C<32>)> = Shaped::randn([4, 3, 32, 32], Cpu);
    let x = images.flatten();
    let _: &S<(Dyn, C<3072>)> = &x;
    let w: S<(C<64>, C<3072>)> = Shaped::randn([64, 3072], Cpu);
    let b: S<(C<64>,)> = Shaped::randn([64], Cpu);
    let h = x.linear(&w, Some(&b)).relu() + &b; // broadcast (Dyn, 64) + (64,)
    let _: &S<(Dyn, C<64>)> = &h;
    let m: S<(C<64>, C<10>)> = Shaped::randn([64, 10], Cpu);
    let logits = h.matmul(&m);
    let seq = logits.reshape::<(Dyn, C<2>, C<10>)>(); // 4 rows as 2 x 2
    let _: &S<(Dyn, C<2>, C<10>)> = &seq;
    let kt = seq.transpose::<1, 2>();
    let att = seq.bmm(&kt); // (Dyn, 2, 10) @ (Dyn, 10, 2)
    let _: &S<(Dyn, C<2>, C<2>)> = &att;
    let p = seq.permute::<(C<2>, C<0>, C<1>)>();
    let _: &S<(C<10>, Dyn, C<2>)> = &p;
    let both = logits.cat(Axis::<1>, &logits);
    let _: &S<(Dyn, C<20>)> = &both;
    let pair = logits.stack(Axis::<0>, &logits);
    let _: &S<(C<2>, Dyn, C<10>)> = &pair;
    let three = Shaped::stack_all(Axis::<2>, [&logits, &logits, &logits]);
    let _: &S<(Dyn, C<10>, C<3>)> = &three;
    let kept = logits.max_keepdim::<1>();
    let _: &S<(Dyn, C<1>)> = &kept;
    let centred = &logits - &kept;
    let total = centred.sum::<0>();
    let _: &S<(C<10>,)> = &total;
    let ids: Shaped<Cpu, i64, (C<3>,)> = Tensor::from_vec(vec![0i64, 9, 9], [3], Cpu).into_shaped();
    let picked = logits.index_select(Axis::<1>, &ids);
    let _: &S<(Dyn, C<3>)> = &picked;
    let probs = picked.softmax::<1>();
    let targets: Shaped<Cpu, i64, (Dyn,)> = Tensor::zeros([4], Cpu).into_shaped();
    let loss = logits.cross_entropy(&targets);
    assert_eq!(probs.shape(), &[4, 3]);
    assert_eq!(att.shape(), &[2, 2, 2]);
    assert!(loss.item().is_finite());
}
