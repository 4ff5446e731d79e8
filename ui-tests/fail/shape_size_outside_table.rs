// Lesson: a static size that devtype's compile-time arithmetic does not know.
//
// PyTorch 2.15: any size works; a mismatch is a run-time error.
//
// devtype: broadcasting, `flatten`, `cat` and `reshape` compute with typenum, whose sizes come
// from a table (0 to 1024; multiples of 16 up to 4096, of 64 up to 16384, of 1024 up to 65536;
// powers of 2 and 10; a few vocabularies and flattened images). 3001 is not in it:
//     error[E0277]: `C<3001>` is not in devtype's table of static sizes, which the type-level arithmetic of this op needs
//
// Fix: make that dimension `Dyn` (checked at run time, PyTorch's text), or use a size of the
// table. A size only written, or only compared (`matmul`, `linear`, `cat`'s other sizes), has no
// limit; a *computed* one outside the table becomes `Dyn` by itself.
use devtype::prelude::*;
use devtype::shaped::{Dyn, Shaped, C};

fn main() {
    let x: Shaped<Cpu, f32, (Dyn, C<3001>)> = Shaped::randn([8, 3001], Cpu);
    let bias: Shaped<Cpu, f32, (C<3001>,)> = Shaped::randn([3001], Cpu);
    let y = &x + &bias;
    println!("{:?}", y.shape());
}
