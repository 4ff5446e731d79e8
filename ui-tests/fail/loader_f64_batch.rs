// Lesson: a data set that yields `f64` rows (NumPy's default float type, `torch.from_numpy`
// keeps it), batched by a `DataLoader` and fed to an `f32` model written by hand.
//
// PyTorch, at run time, at the first forward:
//     RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float
//
// devtype, at compile time, at the model call (through the `Forward` trait, as any model of
// your own is called):
//     error[E0277]: expected m1 and m2 to have the same dtype, but got: `f64` != `f32`
//
// Fix: convert the samples once in the data set (`Tensor::<Cpu, f32>` rows), or each batch:
// `let x = x.to_dtype::<f32>();`.
use devtype::data::{DataLoader, MapDataset};
use devtype::nn::{Linear, ReLU};
use devtype::prelude::*;

struct Rows {
    rows: Vec<Vec<f64>>,
}

impl MapDataset for Rows {
    type Sample = Tensor<Cpu, f64>;
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn get(&self, i: usize) -> devtype::Result<Tensor<Cpu, f64>> {
        Ok(Tensor::from_vec(self.rows[i].clone(), [3], Cpu))
    }
}

struct Mlp<D: Device> {
    fc1: Linear<D>,
    act: ReLU,
    fc2: Linear<D>,
}
devtype::module!(Mlp<D> { fc1, act, fc2 });

impl<D: Device> Forward<D> for Mlp<D> {
    fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }
}

fn run<M: Forward<Cpu>>(model: &M, loader: &DataLoader<Cpu, Rows>) -> Result<(), devtype::Error> {
    for batch in loader {
        let x = batch?;
        let y = model.forward(&x);
        println!("{y}");
    }
    Ok(())
}

fn main() -> Result<(), devtype::Error> {
    let rows = (0..8).map(|i| vec![i as f64, 1.0, 2.0]).collect();
    let loader = DataLoader::new(Rows { rows }, Cpu).batch_size(4);
    let model = Mlp {
        fc1: Linear::new(3, 8, Cpu),
        act: ReLU,
        fc2: Linear::new(8, 2, Cpu),
    };
    run(&model, &loader)
}
