// Lesson: `flatten` of a tensor that is already flat.
//
// PyTorch 2.15 flattens a matrix `[b, 784]` from dimension 1 into itself, silently; the mistake
// (flattening twice, or a batch that was never an image) shows up later, in a layer's sizes.
//
// devtype, at compile time: `flatten` keeps dimension 0 and multiplies the others, so it takes
// an image batch (rank 3 or 4):
//     error[E0277]: `flatten` keeps dimension 0 and multiplies the others: it takes a tensor of rank 3 or 4, not one of shape `(Dyn, C<784>)`
//
// Fix: flatten once, where the images come in.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let images: Shaped<Cpu, f32, (Dyn, C<28>, C<28>)> = Shaped::randn([8, 28, 28], Cpu);
    let x = images.flatten();
    let y = x.flatten();
    println!("{:?}", y.shape());
}
