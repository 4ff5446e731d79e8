// Lesson: a data set that returns samples already on the GPU, fed to a `DataLoader` that pins
// its batches.
//
// PyTorch, at run time, in the pin-memory thread (`DataLoader(..., pin_memory=True)`):
//     RuntimeError: cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned
// (and with `num_workers > 0`, CUDA cannot be used in the worker processes at all).
//
// devtype, at compile time: a `DataLoader` collates in host memory and moves each batch
// itself, so its samples must be host values:
//     error[E0277]: cannot pin `devtype::Tensor<devtype::Cuda<0>>` only dense CPU tensors can be pinned: a `DataLoader` collates its samples in host memory
//
// (A `for batch in &loader` after it adds rustc's own "is not an iterator" error: the loader
// was never built.)
//
// Fix: return CPU samples from `get` and let the loader move the batches:
// `DataLoader::new(data, gpu).pin_memory(true)`.
use devtype::data::{DataLoader, MapDataset};
use devtype::prelude::*;

struct OnGpu {
    rows: Vec<Tensor<Cuda<0>>>,
}

impl MapDataset for OnGpu {
    type Sample = Tensor<Cuda<0>>;
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn get(&self, i: usize) -> devtype::Result<Tensor<Cuda<0>>> {
        Ok(self.rows[i].clone())
    }
}

fn main() -> Result<(), devtype::Error> {
    let gpu = Cuda::<0>::open()?;
    let rows = (0..8).map(|_| Tensor::<Cpu>::randn([3], Cpu).to(gpu)).collect();
    let loader = DataLoader::new(OnGpu { rows }, gpu).batch_size(4).pin_memory(true);
    println!("{} batches", loader.len());
    Ok(())
}
