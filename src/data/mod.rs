//! Data sets on the host (MNIST from its IDX files, three interleaved spirals generated from a
//! seed) and the [`DataLoader`] that batches them for a training loop.
//!
//! A [`Dataset`] is a pair of host tensors (`Tensor<Cpu>` inputs, `Tensor<Cpu, i64>` labels)
//! and stays on the CPU. The model moves to the device once; a [`DataLoader`] built for the same
//! device picks, shuffles and collates each batch on the host (on worker threads if asked) and
//! hands it over already on the device, typed on it, inside the loop:
//!
//! ```
//! use devtype::data::{spirals, DataLoader};
//! use devtype::nn::{CrossEntropyLoss, Linear};
//! use devtype::optim::Sgd;
//! use devtype::prelude::*;
//!
//! # fn main() -> devtype::Result<()> {
//! let dev = Cpu;                                    // or Cuda::<0>::open()?
//! let data = spirals(120, 2024);                    // on the host: Tensor<Cpu>
//! let mut model = Linear::new(data.features(), data.classes, Cpu).to(dev); // moves once
//! let (criterion, mut optimizer) = (CrossEntropyLoss::new(), Sgd::new(0.1));
//! let loader = DataLoader::new(data, dev).batch_size(32).shuffle(true);
//! for batch in &loader {
//!     let (x, y) = batch?;                          // every batch: already on `dev`
//!     model.zero_grad();
//!     let loss = criterion.forward(&model.forward(&x), &y);
//!     loss.backward();
//!     optimizer.step(&mut model);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Without a loader, [`Dataset::batch`] picks rows on the host and the loop moves them:
//! `let (x, y) = data.batch(&rows); let (x, y) = (x.to(dev), y.to(dev));`. Any type of yours
//! that implements [`MapDataset`] loads the same way.
//!
//! MNIST comes from a folder that holds its four unpacked IDX files:
//! `let mnist = Mnist::load("data/mnist")?;` gives [`Mnist::train`] and [`Mnist::test`], each
//! a [`Dataset`] of `[n, 784]` pixels in `[0, 1]` and labels `0..=9`. A missing or malformed
//! file is an [`Error::DataFile`](crate::Error::DataFile) that names it.

mod dataset;
mod idx;
mod loader;
mod mnist;
mod spirals;

pub use dataset::Dataset;
pub use idx::{parse_idx, read_idx, IdxArray, IDX_UNSIGNED_BYTE};
pub use loader::{
    Batches, Collate, DataLoader, DefaultCollate, MapDataset, Stack, ToDevice, MAX_PREFETCH,
    MAX_WORKERS,
};
pub use mnist::{Mnist, MnistSplit};
pub use spirals::{spirals, try_spirals};
