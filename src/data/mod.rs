//! Data sets on the host: MNIST from its IDX files, and three interleaved spirals generated
//! from a seed.
//!
//! A [`Dataset`] is a pair of host tensors (`Tensor<Cpu>` inputs, `Tensor<Cpu, i64>` labels)
//! and stays on the CPU. The model moves to the device once; each batch is picked on the host
//! and moved to the device inside the loop, as in PyTorch:
//!
//! ```
//! use devtype::data::spirals;
//! use devtype::nn::{CrossEntropyLoss, Linear};
//! use devtype::optim::Sgd;
//! use devtype::prelude::*;
//!
//! let dev = Cpu;                                    // or Cuda::<0>::open()?
//! let data = spirals(120, 2024);                    // on the host: Tensor<Cpu>
//! let mut model = Linear::new(data.features(), data.classes, Cpu).to(dev); // moves once
//! let (criterion, mut optimizer) = (CrossEntropyLoss::new(), Sgd::new(0.1));
//! let rows: Vec<usize> = (0..data.len()).collect();
//! for batch in rows.chunks(32) {
//!     let (x, y) = data.batch(batch);              // assembled on the host
//!     let (x, y) = (x.to(dev), y.to(dev));          // every batch moves, inside the loop
//!     model.zero_grad();
//!     let loss = criterion.forward(&model.forward(&x), &y);
//!     loss.backward();
//!     optimizer.step(&mut model);
//! }
//! ```
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
pub use loader::{Batches, Collate, DataLoader, DefaultCollate, MapDataset, Stack, ToDevice};
pub use mnist::{Mnist, MnistSplit};
pub use spirals::spirals;
