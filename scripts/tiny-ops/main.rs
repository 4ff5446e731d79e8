//! The tiny ops of issue 25, one case per run, called N times: `scripts/tiny-ops-callgrind.sh`
//! runs it under callgrind with N = 0 and N = 2000 and prints the instructions per call.

use devtype::nn::Linear;
use devtype::prelude::*;
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args[1].as_str();
    let n: usize = args[2].parse().unwrap();
    let a = Tensor::from_vec(vec![1.5f32], [1], Cpu);
    let b = Tensor::from_vec(vec![2.5f32], [1], Cpu);
    let (da, db) = (a.to_dyn(), b.to_dyn());
    devtype::manual_seed(0);
    let x = Tensor::<Cpu>::randn([4, 10], Cpu);
    let lin = Linear::new(10, 2, Cpu);
    // warm-up: one call of every case, so pools and lazy statics exist for N = 0 too
    black_box(&a + &b);
    black_box(da.add(&db).unwrap());
    black_box(lin.forward(&x));
    no_grad(|| black_box(lin.forward(&x)));
    black_box(a.clone());
    match case {
        "add" => {
            for _ in 0..n {
                black_box(&a + &b);
            }
        }
        "dynadd" => {
            for _ in 0..n {
                black_box(da.add(&db).unwrap());
            }
        }
        "lin" => {
            for _ in 0..n {
                black_box(lin.forward(&x));
            }
        }
        "linng" => no_grad(|| {
            for _ in 0..n {
                black_box(lin.forward(&x));
            }
        }),
        "clone" => {
            for _ in 0..n {
                black_box(a.clone());
            }
        }
        _ => panic!("case"),
    }
}
