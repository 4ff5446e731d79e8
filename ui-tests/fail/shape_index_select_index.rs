// Lesson: `index_select` with an index that is not a vector.
//
// PyTorch 2.15, at run time:
//     IndexError: index_select(): Index is supposed to be a vector
//
// devtype, at compile time (the index's shape is in its type):
//     error[E0277]: index_select(): Index is supposed to be a vector
//
// Fix: one dimension of positions: `ids.reshape::<(Dyn,)>()` (the result then has `Dyn` rows).
use devtype::prelude::*;
use devtype::shaped::{Axis, Shaped, C};

fn main() {
    let table: Shaped<Cpu, f32, (C<100>, C<16>)> = Shaped::randn([100, 16], Cpu);
    let ids: Shaped<Cpu, i64, (C<4>, C<8>)> = Tensor::zeros([4, 8], Cpu).into_shaped();
    let rows = table.index_select(Axis::<0>, &ids);
    println!("{:?}", rows.shape());
}
